package records

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/examples/repofixture"
	"github.com/gitpeer/gitpeer/reconciler/plan/provider"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// peer is a consumer of provider-a with a real Tenant, whose identities a
// test CA issues.
type peer struct {
	t        *testing.T
	consumer string
	request  []byte
	tenant   []byte
	pin      string
	csr      []byte
	ca       *repofixture.CA
}

func newPeer(t *testing.T, ca *repofixture.CA, consumer string) *peer {
	t.Helper()
	requestYAML, tenantYAML, pin := tenant(t, consumer)
	var tn authv1beta1.Tenant
	if err := yaml.Unmarshal(tenantYAML, &tn); err != nil {
		t.Fatal(err)
	}
	return &peer{t: t, consumer: consumer, request: requestYAML, tenant: tenantYAML, pin: pin, csr: tn.Spec.CSR, ca: ca}
}

func newCA(t *testing.T) *repofixture.CA {
	t.Helper()
	ca, err := repofixture.NewCA("provider-a", start.Add(-time.Hour), 365*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// identity returns an identity.yaml for the peer valid until notAfter, and
// the certificate's serial.
func (p *peer) identity(notAfter time.Time) ([]byte, string) {
	p.t.Helper()
	from := start.Add(-time.Hour)
	certPEM, err := p.ca.Issue(p.csr, from, notAfter.Sub(from))
	if err != nil {
		p.t.Fatal(err)
	}
	doc, err := protocol.IdentityDocument("provider-a", p.consumer, authv1beta1.AuthParams{APIServer: "https://provider-a.example:6443", CA: p.ca.PEM, SignedCRT: certPEM})
	if err != nil {
		p.t.Fatal(err)
	}
	serial, err := certSerial(certPEM)
	if err != nil {
		p.t.Fatal(err)
	}
	return doc, serial
}

// approval is the files a merge of the peers' proposals leaves on the
// branch: each one's request.yaml and tenant.yaml.
func approval(peers ...*peer) map[string][]byte {
	files := map[string][]byte{}
	for _, p := range peers {
		files[p.path(vocabulary.RequestFile)], files[p.path(vocabulary.TenantFile)] = p.request, p.tenant
	}
	return files
}

func (p *peer) path(kind vocabulary.FileKind) string {
	return filepath.Join("peers", "provider-a", p.consumer, string(kind))
}

// issue commits, as the agent, an identity of the peer valid until notAfter
// with its trailers, and returns its serial.
func (p *peer) issue(h *history, action string, notAfter time.Time) string {
	p.t.Helper()
	doc, serial := p.identity(notAfter)
	h.agent(action, "provider-a", p.consumer, map[string][]byte{p.path(vocabulary.IdentityFile): doc},
		"Gitpeer-Serial: "+serial, "Gitpeer-Expires: "+notAfter.Format(time.RFC3339))
	return serial
}

// forgedHistory: consumer-1 is issued a certificate and revoked (tenant.yaml
// removed, then the agent's revoke); consumer-2 is issued one and still
// peered. Then an outsider commits, unsigned, a Gitpeer-Action: revoke of
// both dated at forgedAt.
func forgedHistory(t *testing.T, forgedAt time.Time, dates map[string]time.Time, key *repofixture.AgentKey) (*history, map[string]string) {
	h := newHistory(t)
	h.dates, h.key = dates, key
	ca := newCA(t)
	c1, c2 := newPeer(t, ca, "consumer-1"), newPeer(t, ca, "consumer-2")
	day := 24 * time.Hour
	h.commit("Initial commit", map[string][]byte{"README.md": []byte("peers\n")})
	h.commit("Approve consumer-1 and consumer-2", approval(c1, c2))
	serials := map[string]string{}
	serials["c1"] = c1.issue(h, "issue-identity", start.Add(day))
	serials["c2"] = c2.issue(h, "issue-identity", start.Add(2*day))
	h.commit("Revoke consumer-1", map[string][]byte{c1.path(vocabulary.TenantFile): nil})
	h.agent("revoke", "provider-a", "consumer-1", map[string][]byte{c1.path(vocabulary.IdentityFile): nil})
	h.when = forgedAt
	h.commit("Tidy\n\nGitpeer-Action: revoke\nGitpeer-Provider: provider-a\nGitpeer-Consumer: consumer-1\n"+
		"Gitpeer-Action: revoke\nGitpeer-Provider: provider-a\nGitpeer-Consumer: consumer-2\n"+
		"Gitpeer-Action: renew-identity\nGitpeer-Provider: provider-a\nGitpeer-Consumer: consumer-2\nGitpeer-Serial: ee\nGitpeer-Expires: 2030-01-02T04:00:00Z\n", nil)
	serials["pin2"] = c2.pin
	return h, serials
}

// TestForgedRevocationKeepsRecords: an unsigned commit dated 2100 that
// claims the agent revoked consumer-1 and consumer-2 and renewed consumer-2's
// certificate does not erase their certificates from the rebuilt records:
// consumer-1's revoked certificate still blocks its revival until its own
// NotAfter, consumer-2's certificate is still recorded (marked revoked: a
// claimed revocation can only add one), and the claimed renewal is not
// believed. Without the agent's key as with it; with it, each forged claim
// is reported.
func TestForgedRevocationKeepsRecords(t *testing.T) {
	for _, signed := range []bool{false, true} {
		t.Run(fmt.Sprintf("signed=%t", signed), func(t *testing.T) {
			var key *repofixture.AgentKey
			opts := Options{Path: "peers", Provider: "provider-a"}
			if signed {
				key = agentKey(t)
				opts.AgentKeys = key.Trusted
			}
			h, serials := forgedHistory(t, time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC), nil, key)
			res, err := Rebuild(h.dir, opts)
			if err != nil {
				t.Fatal(err)
			}
			c1, c2 := res.Records["consumer-1"], res.Records["consumer-2"]
			if len(c1.Certificates) != 1 || c1.Certificates[0].Serial != serials["c1"] || c1.Certificates[0].RevokedAt == nil {
				t.Fatalf("consumer-1: %s, want %s revoked (warnings %q)", describe(c1), serials["c1"], res.Warnings)
			}
			if b := provider.RevivalBlocker(c1.Certificates, start.Add(2*time.Hour)); b == nil || b.Serial != serials["c1"] {
				t.Fatalf("consumer-1 may be bound again while its revoked certificate is valid: %s", describe(c1))
			}
			if len(c2.Certificates) != 1 || c2.Certificates[0].Serial != serials["c2"] || !c2.Certificates[0].NotAfter.Equal(start.Add(48*time.Hour)) {
				t.Fatalf("consumer-2: %s, want %s kept until its NotAfter and the claimed renewal ignored", describe(c2), serials["c2"])
			}
			if c2.PinnedKey != serials["pin2"] {
				t.Errorf("consumer-2 pinned %q, want its Tenant's key %q", c2.PinnedKey, serials["pin2"])
			}
			warnings := strings.Join(res.Warnings, "\n")
			if !signed && (len(res.Warnings) != 1 || res.Warnings[0] != NoAgentKeyWarning) {
				t.Errorf("warnings without the agent key: %q", res.Warnings)
			}
			if signed && (strings.Count(warnings, "not signed with the agent key") != 3 || strings.Contains(warnings, NoAgentKeyWarning)) {
				t.Errorf("warnings with the agent key, want the 3 forged claims: %q", res.Warnings)
			}
		})
	}
}

// TestDateReorderedHistory: the same history with dates an outsider chose
// (the revocation backdated before the issuance, the issuance in 2100)
// rebuilds the same records as with honest dates: order is the commit
// graph's.
func TestDateReorderedHistory(t *testing.T) {
	honest, hs := forgedHistory(t, start.Add(time.Hour), nil, nil)
	want, err := Rebuild(honest.dir, Options{Path: "peers", Provider: "provider-a"})
	if err != nil {
		t.Fatal(err)
	}
	skewed, ss := forgedHistory(t, start.Add(time.Hour), map[string]time.Time{
		"Revoke consumer-1":                          time.Date(1990, 1, 1, 0, 0, 0, 0, time.UTC),
		"revoke of consumer-1 on provider-a":         time.Date(1990, 1, 1, 0, 1, 0, 0, time.UTC),
		"issue-identity of consumer-1 on provider-a": time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC),
		"Approve consumer-1 and consumer-2":          time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC),
	}, nil)
	got, err := Rebuild(skewed.dir, Options{Path: "peers", Provider: "provider-a"})
	if err != nil {
		t.Fatal(err)
	}
	for _, consumer := range []string{"consumer-1", "consumer-2"} {
		w, g := shape(want.Records[consumer], hs), shape(got.Records[consumer], ss)
		if w != g {
			t.Errorf("%s: %s with skewed dates, %s with honest ones", consumer, g, w)
		}
	}
}

// shape describes records without revocation times (they are the commits'
// dates), serials named by their key in serials.
func shape(r vocabulary.ConsumerRecords, serials map[string]string) string {
	names := map[string]string{}
	for name, serial := range serials {
		names[serial] = name
	}
	out := ""
	for _, c := range r.Certificates {
		out += fmt.Sprintf("%s until %s revoked %t; ", names[c.Serial], stamp(c.NotAfter), c.RevokedAt != nil)
	}
	return out
}

// certSerial returns the serial of a PEM certificate, in hex.
func certSerial(certPEM []byte) (string, error) {
	cert, err := crypto.ParseCertificatePEM(certPEM)
	if err != nil {
		return "", err
	}
	return cert.SerialNumber.Text(16), nil
}

// TestUnverifiedPin: without the agent's key, the pin is the key of the
// Tenant beside the consumer's last identity.yaml whose certificate is for
// that key: a later commit that swapped tenant.yaml and request.yaml for
// another key beside a certificate of the first fails the trust rules
// (nothing vouches for the swapped Tenant's signature) and is skipped, and said.
func TestUnverifiedPin(t *testing.T) {
	h := newHistory(t)
	ca := newCA(t)
	owner, other := newPeer(t, ca, "consumer-1"), newPeer(t, ca, "consumer-1")
	h.commit("Approve consumer-1", approval(owner))
	owner.issue(h, "issue-identity", start.Add(time.Hour))
	doc, _ := owner.identity(start.Add(2 * time.Hour))
	swap := approval(other)
	swap[owner.path(vocabulary.IdentityFile)] = doc
	h.commit("Swap the Tenant and its request", swap)
	res, err := Rebuild(h.dir, Options{Path: "peers", Provider: "provider-a"})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Records["consumer-1"]; got.PinnedKey != owner.pin || len(got.Certificates) != 2 {
		t.Fatalf("records %s, want pin %s and both certificates", describe(got), owner.pin[:8])
	}
	if w := strings.Join(res.Warnings, "\n"); !strings.Contains(w, "key pin of consumer-1: skipped") || !strings.Contains(w, "identity.yaml does not vouch for it") {
		t.Fatalf("warnings: %q", res.Warnings)
	}
}
