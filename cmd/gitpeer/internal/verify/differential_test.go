package verify

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/gitsync"
	"github.com/gitpeer/gitpeer/reconciler"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/test/rawgit"
	"github.com/gitpeer/gitpeer/test/sandbox"
)

// TestAgentAndVerifyAgree builds one repository holding every hostile shape
// of the corpus, each in its own peering directory of provider-a beside two
// valid ones, and asserts that the agent's loading (reconciler.LoadCommit,
// as provider-a) and `gitpeer verify` give every file of provider-a the same
// verdict: the same files invalid, for the same reasons, and nothing else.
func TestAgentAndVerifyAgree(t *testing.T) {
	c := newCheckout(t)
	request, tenant := c.proposed.Files["request.yaml"], c.proposed.Files["tenant.yaml"]
	c.write(t, "provider-a/consumer-3/README.md", []byte("symlinked tenant\n"))
	if err := os.Symlink("/etc/passwd", filepath.Join(c.root, "provider-a/consumer-3/tenant.yaml")); err != nil {
		t.Fatal(err)
	}
	c.write(t, "provider-a/consumer-4/request.yaml", request)
	if err := os.Chmod(filepath.Join(c.root, "provider-a/consumer-4/request.yaml"), 0o755); err != nil {
		t.Fatal(err)
	}
	c.write(t, "provider-a/consumer-6/tenant.yaml", bytes.Repeat([]byte("#"), 100<<10))
	c.write(t, "provider-a/consumer-7/nonce.yaml", []byte("spec: [unclosed\n"))
	c.write(t, "provider-a/consumer-8/request.yaml", request)
	c.write(t, "provider-a/consumer-9/tenant.yaml", tenant)
	c.write(t, "provider-a/consumer-9/kustomization.yaml", []byte("resources: [https://example.com/tenant.yaml]\n"))
	for _, name := range []string{"a.yaml", "b.yaml", "c.yaml", "d.yaml", "e.yaml"} {
		c.write(t, "provider-a/consumer-10/"+name, bytes.Repeat([]byte("#"), 60<<10))
	}
	c.write(t, "provider-a/consumer-10/kustomization.yaml", []byte("resources: [a.yaml]\n"))
	c.write(t, "provider-a/Consumer_11/request.yaml", request)
	commitAll(t, c.root)
	for _, args := range [][]string{
		{"update-index", "--add", "--cacheinfo", "160000," + strings.Repeat("ab", 20) + ",provider-a/consumer-5"},
		{"commit", "-q", "-m", "submodule"},
	} {
		if out, err := sandbox.Git(c.root, args...); err != nil {
			t.Fatal(out, err)
		}
	}
	addMalformedTrees(t, c.root, tenant)

	results, err := resultsOf(Check(c.root, Options{}))
	if err != nil {
		t.Fatal(err)
	}
	byVerify := map[string]string{}
	for _, r := range results {
		if !r.Valid && strings.HasPrefix(r.Path, "provider-a/") {
			byVerify[r.Path] = r.Reason
		}
	}
	repo, err := gitsync.OpenLocal(c.root, gitsync.Config{MaxFileSize: protocol.MaxFileSize, Limits: protocol.Limits})
	if err != nil {
		t.Fatal(err)
	}
	defer repo.Close()
	head, err := repo.Resolve("HEAD")
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := reconciler.LoadCommit(repo, head, &gitpeerv1alpha1.PeeringRepository{Spec: gitpeerv1alpha1.PeeringRepositorySpec{
		ClusterID: "provider-a", Provider: &gitpeerv1alpha1.ProviderSpec{Enabled: true},
	}})
	if err != nil {
		t.Fatal(err)
	}
	byAgent := map[string]string{}
	for _, rj := range loaded.Rejected {
		byAgent[rj.Path] = trimPath(rj.Err, rj.Path)
	}
	want := map[string]string{
		"provider-a/consumer-3/tenant.yaml":         "not a regular file (symlink)",
		"provider-a/consumer-4/request.yaml":        "not a regular file (executable)",
		"provider-a/consumer-5":                     "not a regular file (submodule)",
		"provider-a/consumer-6/tenant.yaml":         "file exceeds size limit (102400 bytes, limit 65536)",
		"provider-a/consumer-7/nonce.yaml":          "malformed YAML",
		"provider-a/consumer-8/request.yaml":        "are not the IDs in its path",
		"provider-a/consumer-9/kustomization.yaml":  "remote resources are not allowed",
		"provider-a/consumer-10/kustomization.yaml": "the directory's files exceed 262144 bytes; provider-a/consumer-10/kustomization.yaml is not built",
		"provider-a/Consumer_11/request.yaml":       "is not an RFC 1123 label",
		"provider-a/consumer-12":                    `malformed tree (two entries named "tenant.yaml")`,
		"provider-a/consumer-13":                    `malformed tree (entry "nonce.yaml" is not sorted after "tenant.yaml")`,
	}
	for p, reason := range want {
		if !strings.Contains(byAgent[p], reason) {
			t.Errorf("agent on %s: %q, want %q", p, byAgent[p], reason)
		}
	}
	if len(byAgent) != len(want) {
		t.Errorf("agent rejected %d files, want %d: %v", len(byAgent), len(want), byAgent)
	}
	for p, reason := range byAgent {
		if byVerify[p] != reason {
			t.Errorf("%s: agent %q, verify %q", p, reason, byVerify[p])
		}
	}
	for p, reason := range byVerify {
		if _, ok := byAgent[p]; !ok {
			t.Errorf("%s: verify %q, the agent accepted it", p, reason)
		}
	}
}

// addMalformedTrees commits, on top of HEAD, provider-a/consumer-12 with two
// tenant.yaml entries and provider-a/consumer-13 with unsorted entries, trees
// git itself never writes.
func addMalformedTrees(t *testing.T, dir string, tenant []byte) {
	t.Helper()
	repo, err := gogit.PlainOpen(dir)
	if err != nil {
		t.Fatal(err)
	}
	raw := &rawgit.Must{T: t, Repo: &rawgit.Repo{Storer: repo.Storer}}
	head, err := repo.Head()
	if err != nil {
		t.Fatal(err)
	}
	commit, err := repo.CommitObject(head.Hash())
	if err != nil {
		t.Fatal(err)
	}
	root, err := commit.Tree()
	if err != nil {
		t.Fatal(err)
	}
	provider, err := root.Tree("provider-a")
	if err != nil {
		t.Fatal(err)
	}
	blob, other := raw.Blob(tenant), raw.Blob([]byte("kind: Tenant\n"))
	entries := append(provider.Entries,
		rawgit.Dir("consumer-12", raw.Tree(rawgit.File("tenant.yaml", blob), rawgit.File("tenant.yaml", other))),
		rawgit.Dir("consumer-13", raw.Tree(rawgit.File("tenant.yaml", blob), rawgit.File("nonce.yaml", other))))
	sort.Sort(object.TreeEntrySorter(entries))
	var rootEntries []object.TreeEntry
	for _, e := range root.Entries {
		if e.Name == "provider-a" {
			e.Hash = raw.Tree(entries...)
		}
		rootEntries = append(rootEntries, e)
	}
	h := raw.Commit(raw.Tree(rootEntries...), head.Hash())
	if err := repo.Storer.SetReference(plumbing.NewHashReference(head.Name(), h)); err != nil {
		t.Fatal(err)
	}
}
