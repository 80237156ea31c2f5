package provider

import (
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// Snapshot is everything one round observed of the provider side of one
// peering: its documents on the branch and the cluster objects the
// PeeringRepository keeps for it. It is plain data: the planners read
// nothing else.
type Snapshot struct {
	// Docs are the documents of the peering directory <provider>/<consumer> on the branch.
	Docs *protocol.Documents
	// Liqo: the agent runs in Liqo mode.
	Liqo bool
	// Quiet: neither the branch nor the spec changed since the last round,
	// which ended Ready; its writes landed.
	Quiet bool

	// Mode names the agent's mode as mode records do; ModeSummary says it for people.
	Mode, ModeSummary string
	// SwitchAccepted is the value of the consumer's switch-mode annotation on the PeeringRepository.
	SwitchAccepted string

	// Namespace: the consumer's tenant namespace exists, and is the
	// PeeringRepository's (the round skips a peering whose namespace is not);
	// NamespaceMode is the mode it records ("": standalone, earlier versions).
	Namespace     bool
	NamespaceMode string
	// Tenant is the Tenant the PeeringRepository applied for the consumer, nil when none.
	Tenant *authv1beta1.Tenant
	// Nonce is what the consumer's liqo-nonce Secret holds, nil when the
	// Secret is absent or was not read (a quiet round with nonce.yaml on the
	// branch reads none).
	Nonce *string
	// Records are what the provider remembers of the consumer (read to verify a merged Tenant).
	Records vocabulary.ConsumerRecords
	// Rekey and Revival are the consumer's override annotations on the
	// PeeringRepository ("" when absent).
	Rekey, Revival string
	// AllowProxyURL is spec.provider.allowProxyURL.
	AllowProxyURL bool
	// Bindings names the RoleBindings the PeeringRepository owns in the
	// tenant namespace; ClusterRole is spec.provider.clusterRoleName.
	Bindings    []string
	ClusterRole string
	// CSRs are the CSRs labelled for the consumer, read when the step signs
	// (an issuance, a renewal due); Agent is the user the agent's client
	// authenticates as, their requester when they are its own.
	CSRs  []*certificatesv1.CertificateSigningRequest
	Agent string
	// Owner is the PeeringRepository's UID; TTL spec.provider.certificateTTL.
	Owner string
	TTL   time.Duration
	// CA and APIServer are what consumers trust and reach, stored with a
	// certificate issued (read only when a CSR holds one).
	CA        []byte
	APIServer string
	// Revocation is what revoking the consumer reads (step Revoke).
	Revocation *RevocationSnapshot
	// FreshNonce is the nonce a new liqo-nonce Secret holds (standalone),
	// drawn when the round found none: the planners draw nothing.
	FreshNonce string
	// LiqoCertificateCache: Liqo's certificate cache of the consumer
	// (LiqoCertificateCache) exists; read in Liqo mode when the consumer has
	// no Tenant to apply in place of.
	LiqoCertificateCache bool
}
