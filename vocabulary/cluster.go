package vocabulary

// Labels gitpeer puts on what it creates.
const (
	// ManagedByLabel marks the objects the agent creates; its value is ManagedBy.
	ManagedByLabel = "app.kubernetes.io/managed-by"
	// ManagedBy is the value of ManagedByLabel on gitpeer's objects.
	ManagedBy = "gitpeer"
	// OwnerLabel holds the UID of the PeeringRepository that created an object.
	OwnerLabel = "gitpeer.io/owner"
	// ConsumerLabel marks the CSRs the provider creates for a consumer. Like
	// the CSR annotations below, it only counts on a CSR the agent's own user
	// requested: what others write never matters.
	ConsumerLabel = "gitpeer.io/consumer"
	// SignTestLabel labels the throwaway CSR of `gitpeer check --sign-test`,
	// so one left behind (the check interrupted) can be found and deleted.
	SignTestLabel = "gitpeer.io/check"
)

// Annotations gitpeer writes or reads, outside the PeeringRepository API.
const (
	// TenantSignatureAnnotation on a CSR the provider creates holds the hex
	// SHA-256 of the signature of the Tenant it was created for, so an
	// approval is never served by the CSR of an earlier one.
	TenantSignatureAnnotation = "gitpeer.io/tenant-signature-sha256"
	// RenewsAnnotation on a CSR holds the serial (hex) of the certificate it
	// renews; it is absent on the CSR of a first issuance.
	RenewsAnnotation = "gitpeer.io/renews"
	// OverridesAnnotation on a Tenant the provider applied lists the
	// overrides it was applied under ("key=value, ..."), used up since.
	OverridesAnnotation = "gitpeer.io/overrides"
	// ModeAnnotation on a tenant namespace the agent created (provider side:
	// liqo-tenant-<consumer>; consumer side: liqo-tenant-<provider>) records the
	// mode the peering was made in, PeeringModeLiqo or PeeringModeStandalone of
	// apis/gitpeer/v1alpha1. It is written when the namespace is created and
	// changed only by the API's SwitchModeAnnotationPrefix. A namespace without
	// it was created by a version without Liqo mode: standalone.
	ModeAnnotation = "gitpeer.io/mode"
	// PinnedKeyAnnotation on a provider-side tenant namespace held the SHA-256
	// of the consumer's public key up to gitpeer 0.1.0. The pin now lives in
	// the records alone (ConsumerRecords.PinnedKey): the annotation is neither
	// written nor decided on, only copied into the records when an earlier
	// version's namespace is adopted and the records hold no pin.
	PinnedKeyAnnotation = "gitpeer.io/pinned-public-key-sha256"
	// PinnedCAAnnotation on a consumer-side tenant namespace holds the SHA-256
	// of the provider's CA, pinned on first use by earlier versions; it is
	// still honoured and replaced by PinnedProviderAnnotation.
	PinnedCAAnnotation = "gitpeer.io/pinned-ca-sha256"
	// PinnedProviderAnnotation on a consumer-side tenant namespace holds the
	// pin taken on first use of a provider's Identity: the SHA-256 of its API
	// server URL and CA bundle.
	PinnedProviderAnnotation = "gitpeer.io/pinned-provider-sha256"
	// RevokedAnnotation on a consumer-side tenant namespace records when the
	// provider revoked the identity; the agent then does not request again on
	// its own (see the API's RequestAgainAnnotation).
	RevokedAnnotation = "gitpeer.io/revoked-at"
	// ProposedAnnotation on the liqo-signed-nonce Secret, in Liqo mode, records
	// that tenant.yaml for the Secret's nonce was pushed (there the Secret holds
	// the nonce before the push, for Liqo's nonce signer).
	ProposedAnnotation = "gitpeer.io/proposed"
	// IdentityParamsAnnotation on an Identity the consumer applied in Liqo
	// mode holds the digest of the spec it wrote: a spec whose pinned
	// parameters no longer match it was changed by someone else since (Liqo's
	// renewal or another writer), and is reported as drift rather than as an
	// update of identity.yaml.
	IdentityParamsAnnotation = "gitpeer.io/identity-params"
)

// Event reasons the agent records besides the API's condition reasons (which
// it also records as event reasons).
const (
	// ReasonAdopted: legacy objects were taken over by a PeeringRepository.
	ReasonAdopted = "Adopted"
	// ReasonOwnershipMigrated: the one-time adoption after an upgrade is over
	// (status.ownershipVersion set).
	ReasonOwnershipMigrated = "OwnershipMigrated"
	// ReasonOrphaned: a deleted PeeringRepository left its peerings in place.
	ReasonOrphaned = "Orphaned"
	// ReasonRequestsDeferred: requests were not answered (not allowed, or too many pending).
	ReasonRequestsDeferred = "RequestsDeferred"
	// ReasonRecordsMigrated: gitpeer 0.1.0's single records Secret was moved
	// to the sharded Secrets.
	ReasonRecordsMigrated = "RecordsMigrated"
	// ReasonRepackFailed: the clone's packs could not be consolidated into
	// one; nothing else failed, but lookups slow down as packs accumulate.
	ReasonRepackFailed = "RepackFailed"
	// ReasonForeignCSR: a CSR labelled for a consumer that the agent did not
	// request; it is never approved, nor deleted.
	ReasonForeignCSR = "ForeignCSR"
	// ReasonCSRFailed: the agent's own CSR was denied or failed.
	ReasonCSRFailed = "CSRFailed"
	// ReasonCertificateRejected: an issued certificate is not for the
	// Tenant's key and subject; it is neither stored nor committed.
	ReasonCertificateRejected = "CertificateRejected"
	// ReasonOverrideConsumed: an override let a Tenant through and was removed.
	ReasonOverrideConsumed = "OverrideConsumed"
	// ReasonOverrideUnused: an override annotation has no effect; it is left in place.
	ReasonOverrideUnused = "OverrideUnused"
	// ReasonModeChanged: the agent runs in another mode than a peering was
	// made in; the peering is left alone until a person accepts the switch.
	ReasonModeChanged = "ModeChanged"
	// ReasonModeSwitched: a person accepted that a peering goes on in the
	// agent's current mode.
	ReasonModeSwitched = "ModeSwitched"
	// ReasonPullRequest: the consumer opened or updated its pull request.
	ReasonPullRequest = "PullRequest"
	// ReasonPullRequestFailed: the consumer could not open or update its pull request.
	ReasonPullRequestFailed = "PullRequestFailed"
	// ReasonRekeyed: a consumer's key was changed by the rekey annotation.
	ReasonRekeyed = "Rekeyed"
	// ReasonTermsFailed: the provider could not publish its terms.yaml.
	ReasonTermsFailed = "TermsFailed"
	// ReasonLiqoVersionWarning: Liqo mode runs, but Liqo's version was not
	// checked (unknown) or is newer than the one gitpeer is tested with.
	ReasonLiqoVersionWarning = "LiqoVersionWarning"
	// ReasonLiqoAWSUnsupported: Liqo on EKS with IAM answered a Tenant with
	// awsConfig, which gitpeer does not commit.
	ReasonLiqoAWSUnsupported = "LiqoAWSUnsupported"
	// ReasonLiqoAPIServerMismatch: the API server Liqo advertises is not the
	// one the provider's terms publish.
	ReasonLiqoAPIServerMismatch = "LiqoAPIServerMismatch"
	// ReasonLiqoNamespaceRefused: a tenant namespace Liqo created is not
	// adopted; the peering is left alone until a person clears it.
	ReasonLiqoNamespaceRefused = "LiqoNamespaceRefused"
	// ReasonStrayTenant: a Tenant gitpeer did not create stands where Liqo's
	// Tenant webhook lets no Tenant of gitpeer's be created (one Tenant per
	// tenant namespace, Tenant names unique in the cluster).
	ReasonStrayTenant = "StrayTenant"
	// ReasonAuthParamsDrifted: the Identity's API server, CA, proxy or other
	// pinned parameters were changed outside identity.yaml (Liqo's renewal
	// copies the provider's whole authParams into it); the consumer restored
	// the reviewed ones.
	ReasonAuthParamsDrifted = "AuthParamsDrifted"
	// ReasonTenantDeletedOutsideGit reports, in Liqo mode, a Tenant deleted
	// by someone else than the agent (`liqoctl unauthenticate` and `liqoctl
	// unpeer` delete it) while tenant.yaml is on the branch: the branch wins,
	// the Tenant is applied again.
	ReasonTenantDeletedOutsideGit = "TenantDeletedOutsideGit"
	// ReasonLiqoCertificateIgnored: a certificate found in a ResourceSlice's
	// status or in Liqo's caches of a consumer is not one Liqo issued to it
	// (issuer or subject): it is not recorded.
	ReasonLiqoCertificateIgnored = "LiqoCertificateIgnored"
	// ReasonSliceCertificatesOverCap: a certificate Liqo issued for a
	// consumer's ResourceSlice is not recorded, the consumer's records holding
	// as many slice certificates as they may (provider.MaxSliceCertificates).
	ReasonSliceCertificatesOverCap = "SliceCertificatesOverCap"
	// ReasonLiqoObjectsOutsideTenantNamespaces: at revocation, ResourceSlices
	// or NamespaceMaps labelled as replicated from the revoked consumer stand
	// outside tenant namespaces, where the agent may not delete them.
	ReasonLiqoObjectsOutsideTenantNamespaces = "LiqoObjectsOutsideTenantNamespaces"
)

// Reasons of the Approved condition gitpeer sets on CSRs.
const (
	// CSRApprovedReason: the agent approved a CSR of a Tenant merged on the
	// branch and verified.
	CSRApprovedReason = "GitpeerApproved"
	// CSRSignTestReason: `gitpeer check --sign-test` approved its throwaway CSR.
	CSRSignTestReason = "GitpeerCheck"
)
