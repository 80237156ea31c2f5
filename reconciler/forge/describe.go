package forge

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"text/template"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1/documents"
)

// Facts are what a consumer's pull request proposes, as the description states them. They are
// also kept, as JSON in an HTML comment, in the description itself, so that a later proposal can
// say what changed.
type Facts struct {
	// Consumer and Provider are the cluster IDs.
	Consumer string `json:"consumer"`
	Provider string `json:"provider"`
	// KeyFingerprint is the SHA-256 of the consumer's PKIX public key, hex.
	KeyFingerprint string `json:"key"`
	// NonceDigest is the SHA-256 of the provider's nonce the Tenant signs, hex (the nonce itself is
	// in nonce.yaml; the digest only tells proposals apart).
	NonceDigest string `json:"nonce"`
	// TenantNamespace is the consumer's namespace on the provider.
	TenantNamespace string `json:"tenantNamespace"`
	// BaseCommit is the commit of the branch the request and nonce were read from.
	BaseCommit string `json:"baseCommit"`
	// Path is the peering directory in the repository, <providerID>/<consumerID>.
	Path string `json:"path"`
	// Request marks the proposal of request.yaml itself, before the provider issued a nonce.
	Request bool `json:"request,omitempty"`
	// Terms are what the provider published it grants; nil when it published none.
	Terms *Terms `json:"terms,omitempty"`
	// Checks are the results of the proposer's offline checks, one line each, of the files at
	// CheckedRef: its own claim, not the review signal.
	Checks     []string `json:"-"`
	CheckedRef string   `json:"-"`
	// Changes say what differs from the previous proposal on the same pull request.
	Changes []string `json:"changes,omitempty"`
}

// Terms are what a merge grants, as the provider publishes them in the repository.
type Terms struct {
	// ClusterRole is the ClusterRole bound to the consumer in its tenant namespace.
	ClusterRole string `json:"clusterRole"`
	// Rules are its rules, one line each (verbs on resources of API groups).
	Rules []string `json:"rules"`
	// CertificateTTL is the lifetime of the client certificate, e.g. 24h0m0s.
	CertificateTTL string `json:"certificateTTL"`
	// Renewal says when the certificate is renewed, e.g. "after 2/3 of its lifetime, without approval".
	Renewal string `json:"renewal"`
	// Source is the path of the provider's document the terms are quoted from.
	Source string `json:"source"`
}

// QuoteTerms is what a description quotes of the provider's terms, published at source.
func QuoteTerms(t *documents.ProviderTerms, source string) *Terms {
	q := &Terms{ClusterRole: t.Spec.ClusterRoleName, CertificateTTL: t.Spec.CertificateTTL.Duration.String(), Renewal: t.Spec.Renewal, Source: source}
	for _, r := range t.Spec.Rules {
		q.Rules = append(q.Rules, ruleLine(r))
	}
	return q
}

// ruleLine renders one PolicyRule on one line: verbs on resources (names) of API groups.
func ruleLine(r rbacv1.PolicyRule) string {
	line := strings.Join(r.Verbs, ", ")
	switch {
	case len(r.NonResourceURLs) > 0:
		return line + " on non-resource URLs " + strings.Join(r.NonResourceURLs, ", ")
	case len(r.ResourceNames) > 0:
		line += " on " + strings.Join(r.Resources, ", ") + " named " + strings.Join(r.ResourceNames, ", ")
	default:
		line += " on " + strings.Join(r.Resources, ", ")
	}
	groups := make([]string, len(r.APIGroups))
	for i, g := range r.APIGroups {
		groups[i] = cmp.Or(g, `"" (core)`)
	}
	return line + " of API groups " + strings.Join(groups, ", ")
}

// ID identifies the proposal: the same consumer, provider, key and nonce.
func (f Facts) ID() string {
	sum := sha256.Sum256([]byte(strings.Join([]string{f.Consumer, f.Provider, f.KeyFingerprint, f.NonceDigest}, "\n")))
	return hex.EncodeToString(sum[:8])
}

// changesFrom lists what differs between the previous proposal and f.
func (f Facts) changesFrom(prev Facts) []string {
	var out []string
	if prev.NonceDigest != f.NonceDigest {
		out = append(out, fmt.Sprintf("the provider's nonce changed (sha256 %s… → %s…): the Tenant is signed again", short(prev.NonceDigest), short(f.NonceDigest)))
	}
	if prev.KeyFingerprint != f.KeyFingerprint {
		out = append(out, fmt.Sprintf("the consumer's key changed (SHA256 %s → %s): the provider refuses it unless an admin re-keys the consumer", prev.KeyFingerprint, f.KeyFingerprint))
	}
	if prev.Terms != nil && f.Terms != nil && !sameTerms(*prev.Terms, *f.Terms) {
		out = append(out, "the provider's published terms changed: read what a merge grants again")
	}
	return out
}

func sameTerms(a, b Terms) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

func short(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

// marker opens the HTML comment holding the Facts in a description.
const marker = "<!-- gitpeer-proposal "

var markerRE = regexp.MustCompile(`<!-- gitpeer-proposal (\{.*\}) -->`)

// parseFacts reads the Facts kept in a description; nil when there are none.
func parseFacts(body string) *Facts {
	m := markerRE.FindStringSubmatch(body)
	if m == nil {
		return nil
	}
	f := &Facts{}
	if json.Unmarshal([]byte(m[1]), f) != nil {
		return nil
	}
	return f
}

// proposalID is the ID of the proposal a description describes; "" when none.
func proposalID(body string) string {
	if f := parseFacts(body); f != nil {
		return f.ID()
	}
	return ""
}

// Describe renders the description of a pull request proposing f. previous, the proposal the open
// pull request described, makes it say what changed; the changes stay listed until the next
// proposal.
func Describe(f Facts, previous *Facts) (string, error) {
	switch {
	case previous == nil:
	case previous.ID() != f.ID():
		f.Changes = f.changesFrom(*previous)
	default:
		f.Changes = previous.Changes
	}
	kept, err := json.Marshal(f)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	if err := descriptionTemplate.Execute(&b, f); err != nil {
		return "", err
	}
	b.WriteString("\n" + marker + string(kept) + " -->\n")
	return b.String(), nil
}

var descriptionTemplate = template.Must(template.New("description").Parse(`{{if .Request}}## Peering request: {{.Consumer}} asks {{.Provider}} for a nonce

Merging adds ` + "`{{.Path}}/request.yaml`" + ` with the key below. It grants nothing: the provider ` + "`{{.Provider}}`" + ` answers with ` + "`nonce.yaml`" + `, and the consumer then proposes ` + "`tenant.yaml`" + ` in a pull request that says what merging it grants.

### Who asks
- Consumer cluster: ` + "`{{.Consumer}}`" + `
- Its key (SHA-256 of the public key): ` + "`{{.KeyFingerprint}}`" + `

### The proposer's own checks of {{.CheckedRef}}
The consumer's agent ran these on its own proposal: they are its claim, not the review signal. Rely on the repository's required check, which its CI computes from the base branch on the pull request's head (` + "`gitpeer verify --base`" + `).
{{range .Checks}}- {{.}}
{{end}}{{else}}## Peering request: {{.Consumer}} asks {{.Provider}} for an identity
{{if .Changes}}
### What changed since the last proposal
{{range .Changes}}- {{.}}
{{end}}{{end}}
### Who asks
- Consumer cluster: ` + "`{{.Consumer}}`" + `
- Its key (SHA-256 of the public key): ` + "`{{.KeyFingerprint}}`" + `
- Request and nonce read from commit {{.BaseCommit}} (` + "`{{.Path}}/request.yaml`, `{{.Path}}/nonce.yaml`" + `)

### What merging grants
Merging adds ` + "`{{.Path}}/tenant.yaml`" + `. The provider ` + "`{{.Provider}}`" + ` then verifies it, creates the Tenant in namespace ` + "`{{.TenantNamespace}}`" + ` and issues a client certificate for ` + "`CN={{.Consumer}}, O=liqo.io`" + `.
{{with .Terms}}As published by the provider in ` + "`{{.Source}}`" + `:
- ClusterRole ` + "`{{.ClusterRole}}`" + `, bound in ` + "`{{$.TenantNamespace}}`" + `, with the rules:
{{range .Rules}}  - {{.}}
{{else}}  - none: the ClusterRole does not exist on the provider
{{end}}- Certificate lifetime: {{.CertificateTTL}}; renewal: {{.Renewal}}
{{else}}The provider has published no terms in the repository: ask its administrators which ClusterRole and certificate lifetime it grants before merging.
{{end}}
### How to revoke
Delete ` + "`{{.Path}}/tenant.yaml`" + ` on the branch, as ` + "`gitpeer revoke`" + ` does (a pull request that deletes more fails the ` + "`gitpeer/verify`" + ` check): the provider deletes the Tenant and its bindings, stops renewing and removes ` + "`identity.yaml`" + `. An issued certificate stays valid until it expires.

### The proposer's own checks of {{.CheckedRef}}
The consumer's agent ran these on its own proposal: they are its claim, not the review signal. Rely on the repository's required check, which its CI computes from the base branch on the pull request's head (` + "`gitpeer verify --base`" + `).
{{range .Checks}}- {{.}}
{{end}}{{end}}`))
