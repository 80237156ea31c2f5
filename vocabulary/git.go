package vocabulary

// FileKind is which document a file of a peering directory holds, named by
// its file name.
type FileKind string

// The documents of a peering directory <providerID>/<consumerID>, by file
// name. Any other name is ignored.
const (
	// RequestFile holds the consumer's PeeringRequest.
	RequestFile FileKind = "request.yaml"
	// NonceFile holds the provider's Nonce.
	NonceFile FileKind = "nonce.yaml"
	// TenantFile holds the consumer's Tenant (authentication.liqo.io/v1beta1).
	TenantFile FileKind = "tenant.yaml"
	// IdentityFile holds the provider's Identity (authentication.liqo.io/v1beta1).
	IdentityFile FileKind = "identity.yaml"
)

// FileKinds lists every document kind in handshake order.
var FileKinds = []FileKind{RequestFile, NonceFile, TenantFile, IdentityFile}

// KustomizationFile, in a peering directory, makes gitpeer build the
// directory with kustomize and read the built documents instead of the files
// themselves.
const KustomizationFile = "kustomization.yaml"

// TermsFile, at the root of a provider's directory (<providerID>/terms.yaml),
// holds the provider's ProviderTerms: what merging a consumer's tenant.yaml
// grants. The provider commits it; consumers quote it in their pull requests.
const TermsFile = "terms.yaml"

// The trailers of the agent's commits. Every commit the agent writes names
// the action it takes and the peering it concerns; an identity commit also
// names the certificate's serial (hexadecimal) and expiry (RFC 3339).
// `gitpeer audit` and `gitpeer records` read a peering's history from them.
const (
	TrailerAction   = "Gitpeer-Action"
	TrailerProvider = "Gitpeer-Provider"
	TrailerConsumer = "Gitpeer-Consumer"
	TrailerSerial   = "Gitpeer-Serial"
	TrailerExpires  = "Gitpeer-Expires"
	// TrailerSummary, in a commit of several steps (one per round), is the
	// one-line summary of the step whose trailers it is among.
	TrailerSummary = "Gitpeer-Summary"
	// TrailerOverride, on the commit of a Tenant's first identity, names the
	// admin's overrides (revival, rekey annotations: "key=value, ...") the
	// Tenant was applied under, each used once.
	TrailerOverride = "Gitpeer-Override"
)

// The actions the agent records in the Gitpeer-Action trailer.
const (
	// ActionRequest: a consumer commits request.yaml.
	ActionRequest = "request"
	// ActionIssueNonce: a provider commits nonce.yaml.
	ActionIssueNonce = "issue-nonce"
	// ActionProposeTenant: a consumer proposes tenant.yaml for review.
	ActionProposeTenant = "propose-tenant"
	// ActionIssueIdentity: a provider commits the first identity.yaml of a Tenant.
	ActionIssueIdentity = "issue-identity"
	// ActionRenewIdentity: a provider commits a renewed identity.yaml.
	ActionRenewIdentity = "renew-identity"
	// ActionRevoke: a provider removes a peering whose tenant.yaml left the branch.
	ActionRevoke = "revoke"
	// ActionPublishTerms: a provider commits its terms.yaml (a provider's, no consumer's).
	ActionPublishTerms = "publish-terms"
)

// Actions lists every action, in handshake order, then publish-terms.
var Actions = []string{ActionRequest, ActionIssueNonce, ActionProposeTenant, ActionIssueIdentity, ActionRenewIdentity, ActionRevoke, ActionPublishTerms}
