package v1alpha1

import (
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
)

const (
	// PeeringRepositoryKind is the kind of the PeeringRepository.
	PeeringRepositoryKind = "PeeringRepository"

	// DefaultBranch is the branch used when spec.branch is empty.
	DefaultBranch = "main"
	// DefaultInterval is the interval used when spec.interval is empty.
	DefaultInterval = time.Minute
	// DefaultTimeout is the timeout of Git operations used when spec.timeout is empty.
	DefaultTimeout = 60 * time.Second
	// DefaultCertificateTTL is the lifetime of the certificates a provider issues when
	// spec.provider.certificateTTL is empty. It is short because a certificate cannot be recalled:
	// after a revocation it stays valid until it expires, and the consumer cannot be bound again
	// until then. Renewal (at 2/3 of the lifetime) needs no approval.
	DefaultCertificateTTL = 24 * time.Hour
	// DefaultMaxPendingRequests is spec.provider.maxPendingRequests when unset.
	DefaultMaxPendingRequests = 100
	// MinCertificateTTL is the shortest certificate lifetime Kubernetes accepts in a
	// CertificateSigningRequest's expirationSeconds.
	MinCertificateTTL = 10 * time.Minute
	// DefaultClusterRoleName is the ClusterRole bound to tenants when
	// spec.provider.clusterRoleName is empty: Liqo's remote control-plane role.
	DefaultClusterRoleName = authv1beta1.RemoteControlPlaneClusterRole
	// DefaultReviewBranchTemplate is the review branch template used when
	// spec.consumer.reviewBranchTemplate is empty.
	DefaultReviewBranchTemplate = "gitpeer/{{.ProviderID}}/{{.ConsumerID}}"
	// DefaultAuthorName is the commit author name used when spec.commit.author.name is empty.
	DefaultAuthorName = "gitpeer"
	// DefaultAuthorEmail is the commit author email used when spec.commit.author.email is empty.
	DefaultAuthorEmail = "gitpeer@localhost"
	// DefaultLiqoNamespace is spec.liqo.namespace when unset: Liqo's default namespace.
	DefaultLiqoNamespace = "liqo"

	// Finalizer is the finalizer gitpeer sets on the objects it manages.
	Finalizer = "gitpeer.io/finalizer"
	// CurrentOwnershipVersion is the status.ownershipVersion of this version: objects carry the
	// gitpeer.io/owner label.
	CurrentOwnershipVersion = 1
	// AcknowledgeRewriteAnnotation, set on a PeeringRepository to the full SHA of the current head
	// of the branch, acknowledges a rewritten (non fast-forward) history, or a merge that brings back
	// an older state of the agent's folder (MergeRevertsReason), and lets the agent resume from that
	// commit.
	AcknowledgeRewriteAnnotation = "gitpeer.io/acknowledge-rewrite"
	// RevivalAnnotationPrefix, followed by a consumer ID, is the key of the annotation on a provider's
	// PeeringRepository that lets the consumer be bound again while a revoked certificate of it is
	// unexpired; its value must be AcceptRevivalValue. RISK: RBAC binds by user name (the certificate
	// CN), so every unexpired revoked certificate of that consumer regains access with the new binding.
	// It is used once: the agent removes it once the Tenant it let through is applied (event
	// OverrideConsumed), so a later revocation is final again. One for a consumer that nothing
	// blocks, or with another value, is left in place and reported (event OverrideUnused).
	RevivalAnnotationPrefix = "revival.gitpeer.io/"
	// AcceptRevivalValue is the only value of a RevivalAnnotationPrefix annotation that has an effect.
	AcceptRevivalValue = "accept-unexpired-revoked-certificates"
	// RekeyAnnotationPrefix, followed by a consumer ID, is the key of the annotation on a provider's
	// PeeringRepository whose value, the SHA-256 (hex) of a PKIX public key, lets that consumer
	// replace its pinned key with this one. Without it a Tenant with another key is rejected (and
	// fails closed: a Tenant it would replace is drained). It is used once: the agent removes it
	// once the Tenant with that key is applied (event OverrideConsumed). One naming another key than
	// the merged Tenant's is left in place and reported (event OverrideUnused).
	RekeyAnnotationPrefix = "rekey.gitpeer.io/"
	// SwitchModeAnnotationPrefix, followed by a peer's cluster ID, is the key of the annotation on a
	// PeeringRepository that accepts that the peering with that peer, made in one mode (standalone or
	// Liqo mode, see LiqoSpec), goes on in the mode the agent now runs in; its value must name that
	// mode (PeeringModeLiqo or PeeringModeStandalone). Without it such a peering is left alone
	// (except revocation) and reported with reason ModeChanged. The agent records the new mode and
	// removes the annotation. A consumer's key changes with its mode: see docs/liqo.md "Switching modes"
	// for the re-peering this takes.
	SwitchModeAnnotationPrefix = "mode.gitpeer.io/"
	// PeeringModeLiqo names Liqo mode in SwitchModeAnnotationPrefix annotations and mode records.
	PeeringModeLiqo = "liqo"
	// PeeringModeStandalone names standalone mode in SwitchModeAnnotationPrefix annotations and mode
	// records.
	PeeringModeStandalone = "standalone"
	// AdoptUnownedAnnotation, set to "true" on a PeeringRepository by an admin upgrading from a
	// version without owner labels, lets it adopt (label as its own, event Adopted) the tenant
	// namespaces and objects that version created: labelled app.kubernetes.io/managed-by=gitpeer, no
	// gitpeer.io/owner. (Once after an upgrade, a PeeringRepository an earlier version processed adopts
	// them without it: see PeeringRepositoryStatus.OwnershipVersion.) It adopts only when it is the only PeeringRepository of the cluster peering
	// with that cluster and the peer has a directory in its repository. Without it such objects are
	// reported and left alone, so an object someone else labelled is never taken over silently.
	AdoptUnownedAnnotation = "gitpeer.io/adopt-unowned"
	// RequestAgainAnnotation, set on a consumer's PeeringRepository to a provider ID, makes the agent
	// request a peering again with that provider after a revocation; the agent removes it once done.
	// Without it a revoked consumer never requests again on its own.
	RequestAgainAnnotation = "gitpeer.io/request-again"
	// WebhookSecretAnnotation on a PeeringRepository opts it in to push webhooks: it names the Secret
	// (same namespace) holding the webhook token.
	WebhookSecretAnnotation = "gitpeer.io/webhook-secret"
	// WebhookTypeAnnotation on a PeeringRepository is the webhook sender: github, gitlab, gitea or
	// generic.
	WebhookTypeAnnotation = "gitpeer.io/webhook-type"
)

// PeeringRepositorySpec defines the Git repository used as the channel of the Liqo authentication
// handshake and the roles this cluster plays in it.
// +kubebuilder:validation:XValidation:rule="(has(self.provider) && self.provider.enabled) || (has(self.consumer) && has(self.consumer.providers) && size(self.consumer.providers) > 0)",message="enable the provider role or list at least one provider in consumer.providers"
type PeeringRepositorySpec struct {
	// URL of the Git repository, an HTTP/S or SSH address.
	// +kubebuilder:validation:Pattern="^(http|https|ssh)://.*$"
	// +kubebuilder:validation:MaxLength=2048
	// +required
	URL string `json:"url"`

	// Branch is the only branch the agent trusts and acts upon; defaults to main.
	// +kubebuilder:default=main
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	// +optional
	Branch string `json:"branch,omitempty"`

	// Path is the directory of the repository that holds the <providerID>/<consumerID>/ folders,
	// relative to the repository root; defaults to the root.
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/') && !self.matches('(^|/)[.][.](/|$)')",message="path must be relative and must not contain '..'"
	// +optional
	Path string `json:"path,omitempty"`

	// Interval at which the repository is fetched for changes; defaults to 1m.
	// +kubebuilder:default="1m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +optional
	Interval *metav1.Duration `json:"interval,omitempty"`

	// Timeout of each Git operation (fetch, push); defaults to 60s.
	// +kubebuilder:default="60s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m))+$"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// SecretRef names a Secret, in the namespace of the PeeringRepository, with the credentials for
	// the repository, with Flux's key names.
	// For HTTPS repositories: 'username' and 'password' for basic auth, or 'bearerToken';
	// optionally 'ca.crt' to trust a private CA.
	// For SSH repositories: 'identity' (the private key, PEM or OpenSSH format) and 'known_hosts';
	// optionally 'password' if the private key is encrypted.
	// The credentials must allow pushing to the branch (and, for consumers, to review branches).
	// +optional
	SecretRef *meta.LocalObjectReference `json:"secretRef,omitempty"`

	// Suspend stops the agent from acting on this repository; nothing is fetched, pushed, issued
	// or revoked while it is true.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// ClusterID is the ID of the local cluster, as peers know it: the name of its folder in the
	// repository and the CN of the certificates it obtains as a consumer. Immutable.
	// +kubebuilder:validation:XValidation:rule="size(self) <= 63",message="clusterID must be at most 63 characters"
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="clusterID is immutable"
	// +required
	ClusterID authv1beta1.ClusterID `json:"clusterID"`

	// Provider configures the provider role: offering this cluster's API server to consumers.
	// +optional
	Provider *ProviderSpec `json:"provider,omitempty"`

	// Consumer configures the consumer role: obtaining identities on provider clusters.
	// +optional
	Consumer *ConsumerSpec `json:"consumer,omitempty"`

	// Verify requires the commits the agent acts upon to be signed by trusted keys.
	// +optional
	Verify *VerifySpec `json:"verify,omitempty"`

	// Commit configures the commits the agent writes.
	// +optional
	Commit *CommitSpec `json:"commit,omitempty"`

	// Liqo selects whether the agent works beside an installed Liqo (Liqo mode) or on its own
	// (standalone mode); unset is mode Auto in namespace liqo.
	// +optional
	Liqo *LiqoSpec `json:"liqo,omitempty"`
}

// LiqoMode selects whether the agent works beside an installed Liqo.
// +kubebuilder:validation:Enum=Auto;Enabled;Disabled
type LiqoMode string

const (
	// LiqoAuto is Liqo mode when Liqo's cluster-ID ConfigMap (liqo-clusterid-configmap) and key
	// Secret (authentication-keys) both exist in spec.liqo.namespace, standalone mode when neither
	// does. When only one of them exists (Liqo half installed or half removed) the agent stalls
	// (reason LiqoPrerequisitesMissing) rather than guess.
	LiqoAuto LiqoMode = "Auto"
	// LiqoEnabled requires Liqo mode: the agent stalls (reason LiqoPrerequisitesMissing) until
	// Liqo's ConfigMap and key Secret exist.
	LiqoEnabled LiqoMode = "Enabled"
	// LiqoDisabled is standalone mode whatever is installed: Liqo's objects are not even read. Do
	// not use it on a cluster where Liqo runs: Liqo and the agent would fight over the same objects.
	LiqoDisabled LiqoMode = "Disabled"
)

// LiqoSpec configures Liqo mode. In Liqo mode the agent moves the handshake's files and gates its
// approval, and Liqo does its own cryptography: the agent signs with Liqo's cluster key (Secret
// authentication-keys, read and never created or changed) instead of its own, and refuses to run
// (reason LiqoClusterIDMismatch) unless spec.clusterID is Liqo's cluster ID (CLUSTER_ID of ConfigMap
// liqo-clusterid-configmap). The mode in force is reported by condition LiqoReady. The mode of each
// peering is recorded when it starts; a later change of mode is a re-peering a person must approve.
type LiqoSpec struct {
	// Mode is Auto (default), Enabled or Disabled.
	// +kubebuilder:default=Auto
	// +optional
	Mode LiqoMode `json:"mode,omitempty"`

	// Namespace is Liqo's namespace (its --liqo-namespace), where its cluster-ID ConfigMap and key
	// Secret are read; defaults to liqo.
	// +kubebuilder:default=liqo
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern="^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// ProviderSpec configures the provider role.
// +kubebuilder:validation:XValidation:rule="!self.enabled || (has(self.apiServer) && size(self.apiServer) > 0)",message="apiServer is required when the provider role is enabled"
type ProviderSpec struct {
	// Enabled turns the provider role on: the agent answers requests under <path>/<clusterID>/,
	// issues nonces, verifies merged Tenants and issues Identities.
	// +optional
	Enabled bool `json:"enabled,omitempty"`

	// APIServer is the URL of this cluster's API server as consumers reach it; it is written to
	// Identity.spec.authParams.apiServer.
	// +kubebuilder:validation:Pattern="^https://.*$"
	// +kubebuilder:validation:MaxLength=2048
	// +optional
	APIServer string `json:"apiServer,omitempty"`

	// CASecretRef names a Secret with a 'ca.crt' key holding the PEM CA bundle consumers must trust
	// for APIServer, written to Identity.spec.authParams.ca. Defaults to the cluster's own CA (the
	// one in the agent's in-cluster configuration), which is right unless the API server is
	// reached through a proxy or load balancer with another certificate.
	// +optional
	CASecretRef *meta.LocalObjectReference `json:"caSecretRef,omitempty"`

	// AllowProxyURL lets consumers reach this cluster through a proxy of their choice: a Tenant's
	// spec.proxyURL (an http, https or socks5 URL) is then copied into its status and identity.yaml
	// (authParams.proxyURL), as Liqo's tenant controller does. By default a Tenant with a proxyURL
	// is refused, with the reason.
	// +optional
	AllowProxyURL bool `json:"allowProxyURL,omitempty"`

	// CertificateTTL is the lifetime of the client certificates issued to consumers (the CSR's
	// expirationSeconds); they are renewed when 2/3 of it has passed, without a new approval.
	// Defaults to 24h; at least 10m. A revoked certificate stays valid until it expires, and the
	// consumer cannot be bound again until then: keep it short.
	// +kubebuilder:default="24h"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('10m')",message="certificateTTL must be at least 10m"
	// +optional
	CertificateTTL *metav1.Duration `json:"certificateTTL,omitempty"`

	// ClusterRoleName is the ClusterRole bound, in its tenant namespace, to each consumer's user.
	// Defaults to Liqo's liqo-remote-controlplane, which the install (config/tenant-role) ships
	// with Liqo's rules; the agent may bind only that role.
	// +kubebuilder:default=liqo-remote-controlplane
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +optional
	ClusterRoleName string `json:"clusterRoleName,omitempty"`

	// DeleteNamespaceOnRevoke deletes the consumer's tenant namespace, and everything in it, when
	// the consumer is revoked. By default the namespace is kept and only the Tenant, the
	// RoleBindings and the nonce are removed.
	// +optional
	DeleteNamespaceOnRevoke bool `json:"deleteNamespaceOnRevoke,omitempty"`

	// DeletionPolicy says what happens to the peerings of this PeeringRepository when it is
	// deleted: Revoke (default) deletes the Tenants, RoleBindings, nonces and CSRs it created (and
	// the tenant namespaces if DeleteNamespaceOnRevoke is set; nothing is written to Git); Orphan
	// leaves them in place, still granting access.
	// +kubebuilder:default=Revoke
	// +optional
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`

	// AllowedConsumers are glob patterns (Go path.Match syntax, e.g. "edge-*") of the consumer IDs
	// whose requests the provider answers; requests of other consumers create nothing and are
	// reported. Empty: any consumer.
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=253
	// +optional
	AllowedConsumers []string `json:"allowedConsumers,omitempty"`

	// MaxPendingRequests caps the requests that have a nonce (a tenant namespace and a Secret) but
	// no issued Tenant yet; further requests create nothing and are reported until some are
	// approved or withdrawn. Defaults to 100.
	// +kubebuilder:default=100
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxPendingRequests *int32 `json:"maxPendingRequests,omitempty"`
}

// DeletionPolicy selects what deleting a provider's PeeringRepository does to its peerings.
// +kubebuilder:validation:Enum=Revoke;Orphan
type DeletionPolicy string

const (
	// DeletionRevoke revokes every peering of the PeeringRepository when it is deleted.
	DeletionRevoke DeletionPolicy = "Revoke"
	// DeletionOrphan leaves the peerings in place when the PeeringRepository is deleted.
	DeletionOrphan DeletionPolicy = "Orphan"
)

// ConsumerSpec configures the consumer role.
type ConsumerSpec struct {
	// Providers are the IDs of the provider clusters this cluster wants an identity on.
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:XValidation:rule="self.all(p, size(p) <= 63)",message="provider IDs must be at most 63 characters"
	// +optional
	Providers []authv1beta1.ClusterID `json:"providers,omitempty"`

	// ReviewBranchTemplate is the Go text/template of the branch request.yaml and tenant.yaml are
	// pushed to for review, with the fields .ProviderID and .ConsumerID; defaults to
	// gitpeer/{{.ProviderID}}/{{.ConsumerID}}. Each reaches the branch only when someone merges the
	// review branch, so the consumer's credentials need push rights to these branches only, never
	// to the branch. Ignored when Direct is true.
	// +kubebuilder:default="gitpeer/{{.ProviderID}}/{{.ConsumerID}}"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	// +optional
	ReviewBranchTemplate string `json:"reviewBranchTemplate,omitempty"`

	// Direct commits request.yaml and tenant.yaml straight to the branch instead of a review
	// branch: the consumer's own push is the approval, and its credentials must be able to push
	// the branch, so they could merge anything. For single-admin labs only, where the one admin of
	// both clusters is the reviewer; the agent says so in a Warning event (DirectMode) at each such
	// push and in the Ready condition's message.
	// +optional
	Direct bool `json:"direct,omitempty"`

	// PullRequest opens and follows, on the forge hosting the repository, the pull request (GitLab:
	// merge request) of each review branch: it is opened once and updated afterwards, describes
	// what merging grants, and carries the offline checks as a commit status on its head. The
	// review branch is deleted once the request is merged or closed. Ignored when Direct is true.
	// +optional
	PullRequest *PullRequestSpec `json:"pullRequest,omitempty"`

	// TrustedCAs anchors, per provider, the CA its Identity must offer, as kubeadm join's
	// --discovery-token-ca-cert-hash does: the consumer accepts identity.yaml only if every
	// certificate of its spec.authParams.ca has one of caCertHashes (or the bundle is exactly the
	// Secret's 'ca.crt'). Anyone who can push a review branch can ride an identity.yaml of their
	// own CA and API server on a Tenant's pull request: the anchor is what tells the provider's
	// Identity from theirs. A provider with no entry here is refused unless TrustOnFirstUse is set.
	// +listType=map
	// +listMapKey=provider
	// +kubebuilder:validation:MaxItems=256
	// +optional
	TrustedCAs []TrustedCA `json:"trustedCAs,omitempty"`

	// TrustOnFirstUse, for providers without an entry in TrustedCAs, trusts the API server URL and
	// CA of the first Identity that proves working and pins them (annotation
	// gitpeer.io/pinned-provider-sha256 of the tenant namespace): whoever could push identity.yaml
	// first (any writer of a review branch) is then trusted for good. Each pin is reported with a
	// Warning event (reason TrustedOnFirstUse) and the peering's message. Off by default: a
	// provider that is not anchored is refused. For labs only.
	// +optional
	TrustOnFirstUse bool `json:"trustOnFirstUse,omitempty"`
}

// ForgeProvider is a kind of forge.
// +kubebuilder:validation:Enum=github;gitlab;gitea
type ForgeProvider string

// PullRequestSpec configures the pull requests of a consumer's review branches.
type PullRequestSpec struct {
	// Provider is the kind of forge: github (github.com and GitHub Enterprise Server), gitlab, or
	// gitea (Gitea and Forgejo). Inferred from the repository URL for github.com, gitlab.com and
	// codeberg.org; required for other hosts.
	// +optional
	Provider ForgeProvider `json:"provider,omitempty"`

	// APIURL is the root of the forge's API. Defaults, from the repository URL's host:
	// https://api.github.com/ for github.com, https://<host>/api/v3/ for GitHub Enterprise Server,
	// and https://<host>/ for GitLab and Gitea (http for an http repository URL).
	// +kubebuilder:validation:Pattern="^https?://.*$"
	// +kubebuilder:validation:MaxLength=2048
	// +optional
	APIURL string `json:"apiURL,omitempty"`

	// SecretRef names a Secret, in the namespace of the PeeringRepository, holding the forge API
	// token under the key 'token' (as Flux's notification Provider secrets do). It needs to open and
	// edit pull requests, post commit statuses and delete the review branches: see examples/forge
	// for the scopes per forge.
	// +required
	SecretRef meta.LocalObjectReference `json:"secretRef"`
}

// TrustedCA anchors the trust in one provider's API server: the hashes of its CA certificates'
// public keys, or a Secret holding its CA bundle; exactly one of the two.
// +kubebuilder:validation:XValidation:rule="has(self.secretRef) != has(self.caCertHashes)",message="set exactly one of secretRef and caCertHashes"
type TrustedCA struct {
	// Provider is the ID of the provider cluster.
	// +kubebuilder:validation:XValidation:rule="size(self) <= 63",message="provider IDs must be at most 63 characters"
	// +required
	Provider authv1beta1.ClusterID `json:"provider"`

	// CACertHashes are the hashes of the provider's CA certificates, in kubeadm's
	// --discovery-token-ca-cert-hash format: "sha256:" and the hex SHA-256 of the certificate's
	// DER SubjectPublicKeyInfo. Every certificate of the Identity's CA bundle must have one of
	// them (list two while the provider rotates its CA). On the provider:
	// openssl x509 -in ca.crt -noout -pubkey | openssl pkey -pubin -outform DER | sha256sum,
	// or gitpeer ca-hash.
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:Pattern="^sha256:[0-9a-fA-F]{64}$"
	// +optional
	CACertHashes []string `json:"caCertHashes,omitempty"`

	// SecretRef names a Secret in the PeeringRepository's namespace whose 'ca.crt' key holds the
	// PEM CA bundle of the provider's API server; the Identity's CA must hold exactly its
	// certificates.
	// +optional
	SecretRef *meta.LocalObjectReference `json:"secretRef,omitempty"`
}

// VerificationMode selects the commits whose signature is verified.
// +kubebuilder:validation:Enum=HEAD;Relevant;All
type VerificationMode string

const (
	// VerifyHEAD verifies the signature of the head commit of the branch only.
	VerifyHEAD VerificationMode = "HEAD"
	// VerifyRelevant verifies every new commit (since the last processed one) that changes a file
	// the agent acts upon, relative to any of its parents: under <path>/<clusterID>/ for the provider
	// role, and under <path>/<providerID>/<clusterID>/ and in <path>/<providerID>/terms.yaml for each
	// wanted provider for the consumer role.
	VerifyRelevant VerificationMode = "Relevant"
	// VerifyAll verifies every new commit (since the last processed one) of the branch.
	VerifyAll VerificationMode = "All"
)

// VerifySpec configures the verification of commit signatures.
type VerifySpec struct {
	// Mode selects the commits that must be signed by a trusted key; defaults to Relevant.
	// +kubebuilder:default=Relevant
	// +optional
	Mode VerificationMode `json:"mode,omitempty"`

	// SecretRef names a Secret with the public keys of the trusted signers, with Flux's key
	// conventions: OpenPGP public keys (ASCII-armored) under keys ending in '.asc', SSH public
	// keys (authorized_keys format) under keys ending in '.sshpub'.
	// +required
	SecretRef meta.LocalObjectReference `json:"secretRef"`
}

// CommitSpec configures the commits the agent writes.
type CommitSpec struct {
	// Author of the commits; defaults to gitpeer <gitpeer@localhost>.
	// +optional
	Author *CommitAuthor `json:"author,omitempty"`

	// SigningKey signs the commits the agent writes.
	// +optional
	SigningKey *SigningKey `json:"signingKey,omitempty"`
}

// CommitAuthor is the author of the agent's commits.
type CommitAuthor struct {
	// Name of the author.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Name string `json:"name,omitempty"`

	// Email of the author.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Email string `json:"email,omitempty"`
}

// SigningKey references the private key that signs the agent's commits.
type SigningKey struct {
	// SecretRef names a Secret with the private key: an ASCII-armored OpenPGP private key under
	// 'git.asc' with an optional 'passphrase' (Flux's convention), or an SSH private key under
	// 'identity' with an optional 'password'.
	// +required
	SecretRef meta.LocalObjectReference `json:"secretRef"`
}

// PeeringRole is the role of the local cluster in a peering.
// +kubebuilder:validation:Enum=Provider;Consumer
type PeeringRole string

const (
	// ProviderRole: the local cluster is the provider and the peer is a consumer.
	ProviderRole PeeringRole = "Provider"
	// ConsumerRole: the local cluster is the consumer and the peer is a provider.
	ConsumerRole PeeringRole = "Consumer"
)

// PeeringPhase is the phase of a peering, as seen by the local cluster.
// +kubebuilder:validation:Enum=Requested;NonceIssued;AwaitingApproval;Issued;Ready;Cordoned;Drained;Revoked;Failed
type PeeringPhase string

const (
	// PhaseRequested: the consumer proposed request.yaml on its review branch (committed it, in
	// direct mode) and waits for its merge and a nonce (consumer), or the provider saw request.yaml
	// and has not issued the nonce yet (provider).
	PhaseRequested PeeringPhase = "Requested"
	// PhaseNonceIssued: the provider committed nonce.yaml and waits for a merged tenant.yaml.
	PhaseNonceIssued PeeringPhase = "NonceIssued"
	// PhaseAwaitingApproval: the consumer pushed tenant.yaml (to the review branch, or to the
	// branch in direct mode) and waits for identity.yaml.
	PhaseAwaitingApproval PeeringPhase = "AwaitingApproval"
	// PhaseIssued: the provider verified the Tenant, bound RBAC and committed identity.yaml.
	PhaseIssued PeeringPhase = "Issued"
	// PhaseReady: the consumer verified identity.yaml, wrote the kubeconfig Secret and proved it
	// authenticates to the provider.
	PhaseReady PeeringPhase = "Ready"
	// PhaseCordoned: the provider honours spec.tenantCondition Cordoned.
	PhaseCordoned PeeringPhase = "Cordoned"
	// PhaseDrained: the provider honours spec.tenantCondition Drained (RBAC removed).
	PhaseDrained PeeringPhase = "Drained"
	// PhaseRevoked: tenant.yaml (provider) or identity.yaml (consumer) was removed and the
	// peering's objects were deleted.
	PhaseRevoked PeeringPhase = "Revoked"
	// PhaseFailed: the last input of the peering was rejected; Message says which file and why.
	PhaseFailed PeeringPhase = "Failed"
)

// Bounds of PeeringRepositoryStatus: it stays far below the API server's object size limit at any
// number of peerings.
const (
	// MaxListedPeerings is the most peerings status.peerings lists.
	MaxListedPeerings = 50
	// MaxPeeringMessageLength is the longest status.peerings[].message, in bytes.
	MaxPeeringMessageLength = 512
)

// PeeringStatus is the state of one peering of the local cluster.
type PeeringStatus struct {
	// PeerID is the ID of the peer cluster.
	// +kubebuilder:validation:XValidation:rule="size(self) <= 63",message="peerID must be at most 63 characters"
	// +required
	PeerID authv1beta1.ClusterID `json:"peerID"`

	// Role is the role of the local cluster in this peering.
	// +required
	Role PeeringRole `json:"role"`

	// Phase is the phase of the peering.
	// +required
	Phase PeeringPhase `json:"phase"`

	// Since is when the peering entered Phase.
	// +required
	Since metav1.Time `json:"since"`

	// Reason says why the peering needs attention (for example RequestsDeferred); empty when it
	// does not, except in phase Failed, which always does.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Reason string `json:"reason,omitempty"`

	// Message is a human-readable detail of Phase, for example the path and reason of a rejected
	// file, cut to MaxPeeringMessageLength bytes.
	// +kubebuilder:validation:MaxLength=512
	// +optional
	Message string `json:"message,omitempty"`
}

// PeeringCount is the number of peerings of the local cluster in one role and phase.
type PeeringCount struct {
	// Role is the role of the local cluster in these peerings.
	// +required
	Role PeeringRole `json:"role"`

	// Phase is the phase of these peerings.
	// +required
	Phase PeeringPhase `json:"phase"`

	// Count is the number of peerings in Role and Phase.
	// +kubebuilder:validation:Minimum=0
	// +required
	Count int32 `json:"count"`
}

// NeedsAttention reports whether the peering needs a person: it failed, or its Reason says why.
func (in *PeeringStatus) NeedsAttention() bool {
	return in.Phase == PhaseFailed || in.Reason != ""
}

// PeeringRepositoryStatus is the observed state of a PeeringRepository.
type PeeringRepositoryStatus struct {
	// ObservedGeneration is the last generation of the spec the agent acted upon.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions are the conditions of the PeeringRepository: Ready, Reconciling and Stalled.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// LastProcessedCommit is the full SHA of the last commit of the branch the agent has acted upon.
	// +optional
	LastProcessedCommit string `json:"lastProcessedCommit,omitempty"`

	// OwnershipVersion is the ownership scheme the agent has migrated this PeeringRepository's
	// objects to: 1 means they carry the gitpeer.io/owner label. Unset on a PeeringRepository an
	// earlier version already processed (lastProcessedCommit set), the agent adopts the objects of
	// its peerings once (see AdoptUnownedAnnotation for the conditions), then sets it; it never
	// adopts on its own again.
	// +optional
	OwnershipVersion int32 `json:"ownershipVersion,omitempty"`

	// Peerings lists at most MaxListedPeerings peerings of the local cluster, sorted by role and
	// peer: first those that need attention (failed, deferred...; the most recent first), then the
	// most recently changed. PeeringCounts counts them all and PeeringsOmitted those not listed;
	// the gitpeer_peering_phase metric has every peering.
	// +listType=map
	// +listMapKey=peerID
	// +listMapKey=role
	// +kubebuilder:validation:MaxItems=50
	// +optional
	Peerings []PeeringStatus `json:"peerings,omitempty"`

	// PeeringCounts counts every peering of the local cluster by role and phase, sorted by role and
	// phase.
	// +listType=map
	// +listMapKey=role
	// +listMapKey=phase
	// +kubebuilder:validation:MaxItems=18
	// +optional
	PeeringCounts []PeeringCount `json:"peeringCounts,omitempty"`

	// PeeringsOmitted is the number of peerings not listed in Peerings.
	// +kubebuilder:validation:Minimum=0
	// +optional
	PeeringsOmitted int32 `json:"peeringsOmitted,omitempty"`

	// PeeringsNeedingAttention is the number of peerings that need attention, listed or not.
	// +kubebuilder:validation:Minimum=0
	// +optional
	PeeringsNeedingAttention int32 `json:"peeringsNeedingAttention,omitempty"`

	meta.ReconcileRequestStatus `json:",inline"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=peerrepo,categories=gitpeer
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterID`
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.spec.url`
// +kubebuilder:printcolumn:name="Branch",type=string,JSONPath=`.spec.branch`,priority=1
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:printcolumn:name="Commit",type=string,JSONPath=`.status.lastProcessedCommit`,priority=1
// +kubebuilder:printcolumn:name="Suspended",type=boolean,JSONPath=`.spec.suspend`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// PeeringRepository configures a gitpeer agent: the Git repository it uses as the channel of the
// Liqo authentication handshake, the local cluster ID, and the provider and consumer roles.
type PeeringRepository struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state of the PeeringRepository.
	Spec PeeringRepositorySpec `json:"spec,omitempty"`
	// Status is the observed state of the PeeringRepository.
	// +kubebuilder:default={"observedGeneration":-1}
	Status PeeringRepositoryStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// PeeringRepositoryList contains a list of PeeringRepository.
type PeeringRepositoryList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the PeeringRepositories of the list.
	Items []PeeringRepository `json:"items"`
}

func init() {
	SchemeBuilder.Register(&PeeringRepository{}, &PeeringRepositoryList{})
}
