package verify

import (
	gocrypto "crypto"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/examples/repofixture"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/reconciler/verdict"
	"github.com/gitpeer/gitpeer/test/sandbox"
)

const (
	issuedDir   = "provider-a/consumer-1/"
	proposedDir = "provider-a/consumer-2/"
)

// checkout is a valid repository: consumer-1 issued (nonce rotated),
// consumer-2 with a Tenant proposed over the current nonce.
type checkout struct {
	root             string
	issued, proposed *repofixture.StagedDirectory
	ca               *repofixture.CA
}

func newCheckout(t *testing.T) *checkout {
	t.Helper()
	now := time.Now()
	ca, err := repofixture.NewCA("provider-a CA", now.Add(-time.Hour), 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	o := repofixture.Options{CA: ca, APIServer: "https://provider-a.example:6443", NotBefore: now.Add(-time.Minute), TTL: time.Hour}
	c := &checkout{root: t.TempDir(), ca: ca}
	if c.issued, err = repofixture.Build("provider-a", "consumer-1", repofixture.Issued, o); err != nil {
		t.Fatal(err)
	}
	if c.proposed, err = repofixture.Build("provider-a", "consumer-2", repofixture.TenantProposed, o); err != nil {
		t.Fatal(err)
	}
	for _, p := range []*repofixture.StagedDirectory{c.issued, c.proposed} {
		if err := p.WriteTo(c.root); err != nil {
			t.Fatal(err)
		}
	}
	c.write(t, "README.md", []byte("# peers\n"))
	terms, err := repofixture.Terms("provider-a")
	if err != nil {
		t.Fatal(err)
	}
	c.write(t, protocol.TermsPath("provider-a"), terms)
	return c
}

func (c *checkout) write(t *testing.T, rel string, data []byte) {
	t.Helper()
	if err := repofixture.Write(c.root, rel, data); err != nil {
		t.Fatal(err)
	}
}

func (c *checkout) writeYAML(t *testing.T, rel string, v any) {
	t.Helper()
	data, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	c.write(t, rel, data)
}

// tenant returns consumer-2's Tenant as its agent built it, for mutation.
func (c *checkout) tenant(t *testing.T) *authv1beta1.Tenant {
	t.Helper()
	tt, err := protocol.NewTenant("consumer-2", c.proposed.Key, c.proposed.SignedNonce)
	if err != nil {
		t.Fatal(err)
	}
	return tt
}

func csrWith(t *testing.T, k gocrypto.Signer, cn string, orgs ...string) []byte {
	t.Helper()
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn, Organization: orgs}}, k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func newKey(t *testing.T) gocrypto.Signer {
	t.Helper()
	k, err := crypto.GenerateKey(crypto.Ed25519)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// commitAll commits everything in dir (a repository from the first call on)
// and returns dir: verify reads commits, not working trees.
func commitAll(t *testing.T, dir string) string {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, ".git")); os.IsNotExist(err) {
		if out, err := sandbox.Git(dir, "init", "-q"); err != nil {
			t.Fatal(out, err)
		}
	}
	for _, args := range [][]string{{"add", "-A"}, {"commit", "-q", "--allow-empty", "-m", "fixture"}} {
		if out, err := sandbox.Git(dir, args...); err != nil {
			t.Fatal(out, err)
		}
	}
	return dir
}

func byPath(t *testing.T, results []verdict.Result) map[string]verdict.Result {
	t.Helper()
	m := map[string]verdict.Result{}
	for _, r := range results {
		m[r.Path] = r
	}
	return m
}

func TestValidCheckout(t *testing.T) {
	c := newCheckout(t)
	results, err := resultsOf(Check(commitAll(t, c.root), Options{}))
	if err != nil {
		t.Fatal(err)
	}
	got := byPath(t, results)
	for _, p := range []string{"request.yaml", "nonce.yaml", "tenant.yaml", "identity.yaml"} {
		if r := got[issuedDir+p]; !r.Valid {
			t.Errorf("%s: %+v", issuedDir+p, r)
		}
	}
	for _, p := range []string{"request.yaml", "nonce.yaml", "tenant.yaml"} {
		if r := got[proposedDir+p]; !r.Valid {
			t.Errorf("%s: %+v", proposedDir+p, r)
		}
	}
	if r := got[issuedDir+"tenant.yaml"]; !strings.Contains(r.Reason, "nonce it signed has been rotated") {
		t.Errorf("issued tenant reason %q", r.Reason)
	}
	// What needs a cluster's state is left to it, and says so.
	for p, rules := range map[string]string{proposedDir + "tenant.yaml": verdict.ProviderChecks, issuedDir + "identity.yaml": verdict.ConsumerChecks} {
		if r := got[p]; !strings.HasSuffix(r.Reason, "; "+rules) {
			t.Errorf("%s: reason %q does not end with %q", p, r.Reason, rules)
		}
	}
	if r := got["README.md"]; !r.Valid || !r.Ignored {
		t.Errorf("README.md: %+v", r)
	}
	if n := Invalid(results); n != 0 {
		t.Fatalf("%d invalid: %+v", n, results)
	}
}

func TestValidWithPathRoot(t *testing.T) {
	c := newCheckout(t)
	outer := t.TempDir()
	if err := os.Rename(c.root, filepath.Join(outer, "peers")); err != nil {
		t.Fatal(err)
	}
	results, err := resultsOf(Check(commitAll(t, outer), Options{Path: "peers"}))
	if err != nil {
		t.Fatal(err)
	}
	if Invalid(results) != 0 || byPath(t, results)["peers/"+issuedDir+"identity.yaml"].Reason == "" {
		t.Fatalf("results: %+v", results)
	}
}

func TestRevokingPullRequest(t *testing.T) {
	// The reviewer deletes tenant.yaml; identity.yaml stays until the provider
	// removes it, and still verifies against the key of request.yaml.
	c := newCheckout(t)
	if err := os.Remove(filepath.Join(c.root, issuedDir+"tenant.yaml")); err != nil {
		t.Fatal(err)
	}
	results, err := resultsOf(Check(commitAll(t, c.root), Options{}))
	if err != nil {
		t.Fatal(err)
	}
	if r := byPath(t, results)[issuedDir+"identity.yaml"]; !r.Valid || !strings.Contains(r.Reason, "key of request.yaml") {
		t.Fatalf("identity after revocation: %+v", r)
	}
}

// TestReadsCommits checks that verify judges a commit's tree, never the
// working tree: an uncommitted broken file is not seen, a committed one is,
// --revision selects an older commit, and a directory inside a worktree is
// read as the peering root.
func TestReadsCommits(t *testing.T) {
	c := newCheckout(t)
	commitAll(t, c.root)
	c.write(t, proposedDir+"tenant.yaml", []byte("spec: [unclosed\n"))
	check := func(dir string, opts Options, want int) {
		t.Helper()
		results, err := resultsOf(Check(dir, opts))
		if err != nil {
			t.Fatal(err)
		}
		if Invalid(results) != want || want == 1 && byPath(t, results)[proposedDir+"tenant.yaml"].Valid {
			t.Fatalf("%s %+v: want %d invalid (%s), got %+v", dir, opts, want, proposedDir+"tenant.yaml", results)
		}
	}
	check(c.root, Options{}, 0)
	commitAll(t, c.root)
	check(c.root, Options{}, 1)
	check(c.root, Options{Revision: "HEAD~1"}, 0)

	outer := t.TempDir()
	if err := os.Rename(c.root, filepath.Join(outer, "peers")); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(outer, "peers", ".git")); err != nil {
		t.Fatal(err)
	}
	commitAll(t, outer)
	check(filepath.Join(outer, "peers"), Options{}, 1)
}

// TestTerms checks that verify judges proposals against the provider's terms.yaml, and says
// whether the terms are missing or invalid: the same verdict the pull request's status gives.
func TestTerms(t *testing.T) {
	for _, tc := range []struct {
		name       string
		edit       func(t *testing.T, c *checkout)
		path, want string
	}{
		{name: "missing", edit: func(t *testing.T, c *checkout) { c.remove(t, "provider-a/terms.yaml") },
			path: "provider-a/terms.yaml", want: "terms missing: provider-a has not published provider-a/terms.yaml"},
		{name: "invalid", edit: func(t *testing.T, c *checkout) {
			c.write(t, "provider-a/terms.yaml", []byte("kind: ProviderTerms\nfoo: bar\n"))
		},
			path: "provider-a/terms.yaml", want: "unknown field"},
		{name: "tenant in another namespace", edit: func(t *testing.T, c *checkout) {
			tenant := c.tenant(t)
			tenant.Namespace = "kube-system"
			c.writeYAML(t, "provider-a/consumer-2/tenant.yaml", tenant)
		}, path: "provider-a/consumer-2/tenant.yaml", want: `the provider's terms give consumer-2 namespace "liqo-tenant-consumer-2"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCheckout(t)
			tc.edit(t, c)
			results, err := resultsOf(Check(commitAll(t, c.root), Options{}))
			if err != nil {
				t.Fatal(err)
			}
			if r := byPath(t, results)[tc.path]; r.Valid || !strings.Contains(r.Reason, tc.want) {
				t.Fatalf("%s: %+v, want invalid with %q", tc.path, r, tc.want)
			}
		})
	}
}

// resultsOf is the results of a Check.
func resultsOf(rep Report, err error) ([]verdict.Result, error) { return rep.Results, err }
