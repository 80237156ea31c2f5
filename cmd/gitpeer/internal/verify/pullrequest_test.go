package verify

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	"github.com/gitpeer/gitpeer/examples/repofixture"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/reconciler/verdict"
	"github.com/gitpeer/gitpeer/test/sandbox"
)

// TestPullRequest judges a review branch as a pull request into main by Git trees: consumer-2
// adding its own tenant.yaml passes, even after the provider moved main; any other change in the
// same pull request fails it, though the head's files alone all verify.
func TestPullRequest(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(t *testing.T, c *checkout)
		path string // the change that fails, "" when none does
		want string
	}{
		{name: "own tenant.yaml", edit: func(*testing.T, *checkout) {}},
		{name: "kustomization.yaml", path: proposedDir + "kustomization.yaml", want: "a kustomization rewrites the documents of provider-a/consumer-2",
			edit: func(t *testing.T, c *checkout) {
				c.write(t, proposedDir+"kustomization.yaml", []byte("resources: [tenant.yaml]\n"))
			}},
		{name: "identity.yaml", path: proposedDir + "identity.yaml", want: "identity.yaml is written by the provider's agent",
			edit: func(t *testing.T, c *checkout) { // a certificate for the consumer's key from another CA: valid on its own
				ca, err := repofixture.NewCA("attacker CA", time.Now().Add(-time.Hour), 24*time.Hour)
				if err != nil {
					t.Fatal(err)
				}
				cert := c.issue(t, ca, c.proposed.Key, "consumer-2", time.Now().Add(-time.Minute))
				doc, err := protocol.IdentityDocument("provider-a", "consumer-2", authv1beta1.AuthParams{APIServer: "https://attacker.example:6443", CA: ca.PEM, SignedCRT: cert})
				if err != nil {
					t.Fatal(err)
				}
				c.write(t, proposedDir+"identity.yaml", doc)
			}},
		{name: "nonce.yaml", path: proposedDir + "nonce.yaml", want: "nonce.yaml is written by the provider's agent",
			edit: func(t *testing.T, c *checkout) { c.appendTo(t, proposedDir+"nonce.yaml", "# reworded\n") }},
		{name: "terms.yaml", path: "provider-a/terms.yaml", want: "terms.yaml is the provider's",
			edit: func(t *testing.T, c *checkout) { c.appendTo(t, "provider-a/terms.yaml", "# reworded\n") }},
		{name: "another consumer's tenant.yaml", path: issuedDir + "tenant.yaml", want: "changes 2 peering directories",
			edit: func(t *testing.T, c *checkout) { c.remove(t, issuedDir+"tenant.yaml") }},
		{name: "CI workflow", path: ".github/workflows/verify.yaml", want: "not a document a consumer proposes",
			edit: func(t *testing.T, c *checkout) { c.write(t, ".github/workflows/verify.yaml", []byte("on: push\n")) }},
		{name: "CODEOWNERS", path: "CODEOWNERS", want: "not a document a consumer proposes",
			edit: func(t *testing.T, c *checkout) { c.write(t, "CODEOWNERS", []byte("* @consumer-2\n")) }},
		{name: "README.md", path: "README.md", want: "not a document a consumer proposes",
			edit: func(t *testing.T, c *checkout) { c.appendTo(t, "README.md", "more\n") }},
		{name: "tenant.yaml executable", path: proposedDir + "tenant.yaml", want: "tenant.yaml is not a regular file (executable)",
			edit: func(t *testing.T, c *checkout) {
				if err := os.Chmod(filepath.Join(c.root, proposedDir, "tenant.yaml"), 0o755); err != nil {
					t.Fatal(err)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCheckout(t)
			tenant, err := os.ReadFile(filepath.Join(c.root, proposedDir, "tenant.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			c.remove(t, proposedDir+"tenant.yaml")
			commitAll(t, c.root) // main: consumer-2 has its nonce, no Tenant yet
			c.git(t, "checkout", "-q", "-b", "gitpeer/provider-a/consumer-2")
			c.write(t, proposedDir+"tenant.yaml", tenant)
			tc.edit(t, c)
			commitAll(t, c.root)
			head := strings.TrimSpace(c.git(t, "rev-parse", "HEAD"))
			c.git(t, "checkout", "-q", "main") // the provider moves main meanwhile: not the pull request's change
			c.appendTo(t, "README.md", "provider's note\n")
			commitAll(t, c.root)

			alone, err := Check(c.root, Options{Revision: head})
			if err != nil {
				t.Fatal(err)
			}
			if n := Invalid(alone.Results); tc.path != "" && tc.path != proposedDir+"tenant.yaml" && n != 0 {
				t.Fatalf("the head alone has %d invalid files, want 0: %+v", n, alone.Results)
			}
			rep, err := Check(c.root, Options{Revision: head, Base: "main"})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Commit != head || len(rep.MergeBases) != 1 {
				t.Errorf("judged %s from merge bases %v, want %s from one", rep.Commit, rep.MergeBases, head)
			}
			var failed []verdict.Result
			for _, r := range rep.Results {
				if !r.Valid {
					failed = append(failed, r)
				}
			}
			if tc.path == "" {
				if len(failed) != 0 {
					t.Fatalf("own tenant.yaml: failed %+v", failed)
				}
				return
			}
			for _, r := range failed {
				if r.Path == tc.path && strings.Contains(r.Reason, tc.want) {
					return
				}
			}
			t.Fatalf("want %s failed with %q; failed: %+v", tc.path, tc.want, failed)
		})
	}
}

func (c *checkout) git(t *testing.T, args ...string) string {
	t.Helper()
	out, err := sandbox.Git(c.root, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func (c *checkout) appendTo(t *testing.T, rel, text string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(c.root, rel))
	if err != nil {
		t.Fatal(err)
	}
	c.write(t, rel, append(data, text...))
}
