package v1alpha1

// Condition types of a PeeringRepository besides Flux's meta.ReadyCondition,
// meta.ReconcilingCondition and meta.StalledCondition.
const (
	// FilesValidCondition is False while files of the repository are skipped as invalid.
	FilesValidCondition = "FilesValid"
	// PeeringsHealthyCondition is False while a peering failed (see status.peerings).
	PeeringsHealthyCondition = "PeeringsHealthy"
	// SourceVerifiedCondition reports, when spec.verify is set, whether the commits the agent is
	// about to act upon are signed by trusted keys.
	SourceVerifiedCondition = "SourceVerified"
	// CertificatesRenewedCondition is False (reason RenewalOverdueReason) while a certificate the
	// provider issued is past its renewal point and not renewed (e.g. renewal stalled by an outage).
	CertificatesRenewedCondition = "CertificatesRenewed"
	// LiqoReadyCondition reports the mode in force (spec.liqo): True with reason LiqoModeReason
	// (message: Liqo's cluster ID and key type) or StandaloneReason, False with the reason of what
	// stops Liqo mode (LiqoPrerequisitesMissing, LiqoClusterIDMismatch, LiqoKeyInvalid,
	// LiqoVersionUnsupported).
	LiqoReadyCondition = "LiqoReady"
)

// Reasons of condition LiqoReady when True.
const (
	// LiqoModeReason: the agent runs in Liqo mode, with Liqo's cluster ID and key.
	LiqoModeReason = "LiqoMode"
	// StandaloneReason: the agent runs in standalone mode, with its own key.
	StandaloneReason = "Standalone"
)

// RenewalOverdueReason signals a certificate past its renewal point by more than 1/12 of its life
// (at most an hour), not renewed: also the reason of its event and its listing in status.peerings.
const RenewalOverdueReason = "RenewalOverdue"

// Reasons of the PeeringRepository conditions that stall the agent until a person acts (Stalled
// and Ready are False with the reason; the message says what to do). A stalled PeeringRepository
// is checked again at spec.interval, never sooner, since the fix usually lies outside it (a
// Secret, the Git server, the branch).
const (
	// AuthenticationFailedReason signals that the Git server refused the credentials of
	// spec.secretRef.
	AuthenticationFailedReason = "AuthenticationFailed"
	// HostKeyMismatchReason signals that the SSH server's host key is not the one in the
	// known_hosts of spec.secretRef.
	HostKeyMismatchReason = "HostKeyMismatch"
	// CertificateUntrustedReason signals that the HTTPS server's certificate does not verify
	// against the system roots and the ca.crt of spec.secretRef.
	CertificateUntrustedReason = "CertificateUntrusted"
	// RepositoryNotFoundReason signals that the Git server has no repository at spec.url (or
	// hides it from these credentials).
	RepositoryNotFoundReason = "RepositoryNotFound"
	// BranchNotFoundReason signals that spec.branch does not exist in the repository.
	BranchNotFoundReason = "BranchNotFound"
	// HistoryRewrittenReason signals that the branch was rewritten (not a fast-forward of the last
	// processed commit); the agent is stalled until AcknowledgeRewriteAnnotation is set.
	HistoryRewrittenReason = "HistoryRewritten"
	// MergeRevertsReason signals that a merge commit since the last processed commit keeps, in a
	// folder the agent reads, what one parent held where another parent, descending from it, had
	// changed it (it brings back an older state); the agent is stalled until
	// AcknowledgeRewriteAnnotation is set to the head, whatever the merge's signature.
	MergeRevertsReason = "MergeReverts"
	// CommitVerificationFailedReason signals that a commit the agent must act on is not signed by a
	// trusted key.
	CommitVerificationFailedReason = "CommitVerificationFailed"
	// LiqoPrerequisitesMissingReason signals that Liqo mode is required (spec.liqo.mode Enabled, or
	// Auto with Liqo half installed) but Liqo's cluster-ID ConfigMap or key Secret is missing, or
	// cannot be read; the message names the object.
	LiqoPrerequisitesMissingReason = "LiqoPrerequisitesMissing"
	// LiqoClusterIDMismatchReason signals that, in Liqo mode, Liqo's cluster ID is not
	// spec.clusterID: the agent refuses to run, since peers would know this cluster under another
	// name than Liqo does.
	LiqoClusterIDMismatchReason = "LiqoClusterIDMismatch"
	// LiqoKeyInvalidReason signals that, in Liqo mode, Liqo's key Secret holds no usable key pair.
	LiqoKeyInvalidReason = "LiqoKeyInvalid"
	// LiqoVersionUnsupportedReason signals that, in Liqo mode, the installed Liqo's version (the
	// app.kubernetes.io/version label its chart puts on liqo-clusterid-configmap) is one gitpeer
	// cannot work with; the message says why and which version to install.
	LiqoVersionUnsupportedReason = "LiqoVersionUnsupported"
)

// Reasons of transient failures: Ready is False, Reconciling True, and the agent retries with
// exponential backoff until it succeeds.
const (
	// GitServerUnreachableReason signals that the Git server could not be reached, did not
	// answer in time or dropped the connection.
	GitServerUnreachableReason = "GitServerUnreachable"
	// KubernetesAPIUnavailableReason signals that the cluster's API server could not be reached
	// or was unavailable.
	KubernetesAPIUnavailableReason = "KubernetesAPIUnavailable"
	// GitOperationFailedReason signals that a Git operation (fetch, push) failed otherwise, e.g.
	// a push that kept losing the race with other writers.
	GitOperationFailedReason = "GitOperationFailed"
	// ClusterKeyErrorReason signals that the cluster's key could not be loaded or created.
	ClusterKeyErrorReason = "ClusterKeyError"
)

// Reasons of a round waiting for something to happen: Ready is False, Reconciling True, and the
// agent looks again at spec.interval.
const (
	// SecretNotFoundReason signals that a Secret the spec refers to does not exist (yet).
	SecretNotFoundReason = "SecretNotFound"
)

// Other reasons of the PeeringRepository conditions and events.
const (
	// InvalidDocumentReason signals that a file of the repository was rejected (see the message and
	// the events for its path and the reason).
	InvalidDocumentReason = "InvalidDocument"
	// InvalidSpecReason signals that the PeeringRepository spec cannot be acted upon.
	InvalidSpecReason = "InvalidSpec"
	// SuspendedReason signals that spec.suspend is set.
	SuspendedReason = "Suspended"
	// RejectedReason signals a Tenant or peering the agent refused (see the message).
	RejectedReason = "Rejected"
	// RequestedReason: the consumer committed its request.
	RequestedReason = "Requested"
	// NonceIssuedReason: the provider committed a nonce for a consumer.
	NonceIssuedReason = "NonceIssued"
	// DirectModeReason: a consumer with spec.consumer.direct committed its request or Tenant
	// straight to the branch, approved by no one but itself (a Warning).
	DirectModeReason = "DirectMode"
	// TenantProposedReason: the consumer pushed its signed Tenant for review.
	TenantProposedReason = "TenantProposed"
	// IdentityIssuedReason: the provider committed a consumer's first identity.
	IdentityIssuedReason = "IdentityIssued"
	// IdentityRenewedReason: the provider committed a renewed identity.
	IdentityRenewedReason = "IdentityRenewed"
	// PeeringReadyReason: the consumer built its kubeconfig from the provider's identity.
	PeeringReadyReason = "PeeringReady"
	// RevokedReason: a peering was revoked.
	RevokedReason = "Revoked"
	// TrustedOnFirstUseReason (Warning): the consumer pinned a provider it has no anchor for, on
	// first use, because spec.consumer.trustOnFirstUse is set.
	TrustedOnFirstUseReason = "TrustedOnFirstUse"
)
