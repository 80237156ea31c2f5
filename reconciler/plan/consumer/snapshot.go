package consumer

import (
	gocrypto "crypto"

	corev1 "k8s.io/api/core/v1"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
)

// Snapshot is everything one round observed of the consumer's peering with
// one provider: its documents on the branch, the PeeringRepository's settings
// for it and the cluster objects the agent keeps for it. It is plain data:
// Plan reads nothing else.
type Snapshot struct {
	// Docs are the documents of the peering directory <provider>/<consumer> on the branch.
	Docs *protocol.Documents
	// Key is the cluster's key (Liqo's in Liqo mode). Plan signs the
	// provider's nonce and builds the kubeconfig with it: both are
	// functions of the key and the documents, no read.
	Key gocrypto.Signer
	// Liqo: the agent runs in Liqo mode.
	Liqo bool
	// Mode names the agent's mode as mode records do; ModeSummary says it for people.
	Mode, ModeSummary string

	// Spec is spec.consumer of the PeeringRepository; Branch its branch.
	Spec   *gitpeerv1alpha1.ConsumerSpec
	Branch string
	// Quiet: neither the branch nor the spec changed since the last round,
	// which ended Ready; its writes landed.
	Quiet bool
	// BranchMoved: the round's head is not the last processed commit.
	BranchMoved bool
	// RequestAgain: the PeeringRepository's request-again annotation names the provider.
	RequestAgain bool
	// SwitchAccepted is the value of the provider's switch-mode annotation on the PeeringRepository.
	SwitchAccepted string

	// Namespace is the consumer-side tenant namespace of the provider, nil when absent.
	Namespace *Namespace
	// Identity is the provider's Identity in the cluster, nil when absent:
	// the one identity.yaml names when it is on the branch. Its
	// vocabulary.IdentityParamsAnnotation tells drift from an update.
	Identity *authv1beta1.Identity
	// Kubeconfig is what the kubeconfig Secret of identity.yaml's Identity
	// holds (standalone; not read in a quiet round).
	Kubeconfig []byte
	// SignedNonce is the liqo-signed-nonce Secret, nil when absent (not read in a quiet round).
	SignedNonce *corev1.Secret
	// LiqoKubeconfig is the Secret Identity.status.kubeconfigSecretRef names
	// (Liqo mode), or the one of its default name before Liqo sets the
	// reference; nil when absent.
	LiqoKubeconfig *corev1.Secret
	// Proven is the SHA-256 (hex) of Liqo's kubeconfig this process last
	// proved for the provider, "" if none.
	Proven string

	// Anchor is what spec.consumer.trustedCAs and trustOnFirstUse configure
	// for the provider; AnchorErr why its Secret could not be read.
	Anchor    Anchor
	AnchorErr error
}

// Namespace is what the round observed of the consumer-side tenant namespace of a provider.
type Namespace struct {
	// Mode is the mode the peering was recorded in ("": standalone, earlier versions).
	Mode string
	// Revoked: the namespace records a revocation by the provider, at RevokedAt.
	Revoked   bool
	RevokedAt string
	// Annotations hold the provider's pins (PinnedProviderAnnotation, PinnedCAAnnotation).
	Annotations map[string]string
}
