package gitsync_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/gitpeer/gitpeer/gitsync"
)

// TestPullRequestChanges lists what a pull request brings by Git trees, across the whole
// repository whatever the root: content, mode and kind changes (a symlink, a submodule, an
// executable), never what the base gained after the branch point; it refuses a tree entry
// whose name could pass for a path, and commits without common history.
func TestPullRequestChanges(t *testing.T) {
	dir := t.TempDir()
	write := func(p, data string, mode os.FileMode) {
		t.Helper()
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(data), mode); err != nil {
			t.Fatal(err)
		}
	}
	git(t, dir, "init", "-q", "-b", "main")
	write("README.md", "# peers\n", 0o644)
	write("peers/p/c/request.yaml", "kind: PeeringRequest\n", 0o644)
	write("peers/p/c/nonce.yaml", "kind: PeeringNonce\n", 0o644)
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-q", "-m", "base")
	git(t, dir, "checkout", "-q", "-b", "pr")
	write("peers/p/c/tenant.yaml", "kind: Tenant\n", 0o644)
	if err := os.Symlink("nonce.yaml", filepath.Join(dir, "peers/p/c/link.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dir, "README.md"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "peers/p/c/nonce.yaml")); err != nil {
		t.Fatal(err)
	}
	git(t, dir, "add", "-A")
	git(t, dir, "update-index", "--add", "--cacheinfo", "160000,"+strings.Repeat("ab", 20)+",peers/p/sub")
	git(t, dir, "commit", "-q", "-m", "pull request")
	git(t, dir, "checkout", "-q", "main")
	write("after.txt", "the base moved\n", 0o644)
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-q", "-m", "main moves")

	r, err := gitsync.OpenLocal(dir, gitsync.Config{Path: "peers"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	resolve := func(rev string) plumbing.Hash {
		t.Helper()
		h, err := r.Resolve(rev)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	bases, changes, err := r.PullRequestChanges(resolve("main"), resolve("pr"))
	if err != nil {
		t.Fatal(err)
	}
	if want := resolve("main~1"); len(bases) != 1 || bases[0] != want {
		t.Errorf("merge bases %v, want %s", bases, want)
	}
	slices.SortFunc(changes, func(a, b gitsync.EntryChange) int { return strings.Compare(a.Path, b.Path) })
	want := []gitsync.EntryChange{
		{Path: "README.md", Mode: filemode.Executable},
		{Path: "peers/p/c/link.yaml", Mode: filemode.Symlink},
		{Path: "peers/p/c/nonce.yaml"},
		{Path: "peers/p/c/tenant.yaml", Mode: filemode.Regular},
		{Path: "peers/p/sub", Mode: filemode.Submodule},
	}
	if !slices.Equal(changes, want) {
		t.Errorf("changes %+v, want %+v", changes, want)
	}

	// A root entry named "peers/p/c/tenant.yaml" is one entry, not that path.
	repo, err := gogit.PlainOpen(dir)
	if err != nil {
		t.Fatal(err)
	}
	base, err := repo.CommitObject(resolve("main"))
	if err != nil {
		t.Fatal(err)
	}
	root, err := base.Tree()
	if err != nil {
		t.Fatal(err)
	}
	blob := findHash(t, root, "README.md")
	hostile := storeTree(t, repo, append(slices.Clone(root.Entries), object.TreeEntry{Name: "peers/p/c/tenant.yaml", Mode: filemode.Regular, Hash: blob})...)
	h := storeCommit(t, repo, &object.Commit{Author: base.Author, Committer: base.Committer, Message: "slash", TreeHash: hostile, ParentHashes: []plumbing.Hash{base.Hash}})
	if _, _, err := r.PullRequestChanges(base.Hash, h); !errors.Is(err, gitsync.ErrUnsafePath) {
		t.Errorf("a tree entry named like a path: %v, want ErrUnsafePath", err)
	}

	git(t, dir, "checkout", "-q", "--orphan", "stranger")
	git(t, dir, "commit", "-q", "-m", "no common history")
	if _, _, err := r.PullRequestChanges(resolve("main"), resolve("stranger")); !errors.Is(err, gitsync.ErrNoMergeBase) {
		t.Errorf("unrelated history: %v, want ErrNoMergeBase", err)
	}
}
