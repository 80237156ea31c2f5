package gitsync_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/gitpeer/gitpeer/gitsync"
)

// pushHostileContent commits, with the git CLI, a symlink, an executable, a
// submodule, a 10 MiB file and a file outside the root, then adds with go-git
// a tree entry named ".." (which git itself refuses to create) and pushes.
func pushHostileContent(t *testing.T, f *fixture) {
	work := f.cliClone()
	write := func(p string, data []byte, mode os.FileMode) {
		full := filepath.Join(work, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, data, mode); err != nil {
			t.Fatal(err)
		}
	}
	write("secret.yaml", []byte("outside the root"), 0o644)
	write("peers/p/c/request.yaml", []byte("kind: PeeringRequest\n"), 0o644)
	write("peers/p/c/run.sh", []byte("#!/bin/sh\n"), 0o755)
	write("peers/p/c/big.yaml", bytes.Repeat([]byte("x"), 10<<20), 0o644)
	if err := os.Symlink("../../../secret.yaml", filepath.Join(work, "peers/p/c/link.yaml")); err != nil {
		t.Fatal(err)
	}
	git(t, work, "add", ".")
	git(t, work, "update-index", "--add", "--cacheinfo", "160000,"+strings.Repeat("ab", 20)+",peers/p/sub")
	git(t, work, "commit", "-q", "-m", "hostile")

	repo, err := gogit.PlainOpen(work)
	if err != nil {
		t.Fatal(err)
	}
	head, _ := repo.Head()
	c, _ := repo.CommitObject(head.Hash())
	root, _ := c.Tree()
	peers, _ := root.Tree("peers")
	escape := storeTree(t, repo, object.TreeEntry{Name: "escape.yaml", Mode: filemode.Regular, Hash: findHash(t, root, "secret.yaml")})
	peersHash := storeTree(t, repo, append(peers.Entries, object.TreeEntry{Name: "..", Mode: filemode.Dir, Hash: escape})...)
	var entries []object.TreeEntry
	for _, e := range root.Entries {
		if e.Name == "peers" {
			e.Hash = peersHash
		}
		entries = append(entries, e)
	}
	h := storeCommit(t, repo, &object.Commit{Author: c.Author, Committer: c.Committer, Message: "dotdot", TreeHash: storeTree(t, repo, entries...), ParentHashes: []plumbing.Hash{c.Hash}})
	git(t, work, "push", "-q", "origin", h.String()+":refs/heads/main")
}

// storeCommit writes commit, which git itself may refuse to make, into repo.
func storeCommit(t *testing.T, repo *gogit.Repository, commit *object.Commit) plumbing.Hash {
	t.Helper()
	obj := repo.Storer.NewEncodedObject()
	if err := commit.Encode(obj); err != nil {
		t.Fatal(err)
	}
	h, err := repo.Storer.SetEncodedObject(obj)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func storeTree(t *testing.T, repo *gogit.Repository, entries ...object.TreeEntry) plumbing.Hash {
	t.Helper()
	sort.Sort(object.TreeEntrySorter(entries))
	obj := repo.Storer.NewEncodedObject()
	if err := (&object.Tree{Entries: entries}).Encode(obj); err != nil {
		t.Fatal(err)
	}
	h, err := repo.Storer.SetEncodedObject(obj)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func findHash(t *testing.T, tree *object.Tree, name string) plumbing.Hash {
	e, err := tree.FindEntry(name)
	if err != nil {
		t.Fatal(err)
	}
	return e.Hash
}

func TestHostileContent(t *testing.T) {
	f := newFixture(t, "hostile")
	mustWrite(t, f.openHTTP(), "seed", gitsync.Put("README.md", []byte("seed")))
	pushHostileContent(t, f)
	agent := f.openHTTP(func(c *gitsync.Config) { c.Path = "peers" })
	head := mustPoll(t, agent)

	l, err := agent.List(head)
	if err != nil {
		t.Fatal(err)
	}
	var files, skipped []string
	for _, file := range l.Files {
		files = append(files, file.Path)
	}
	for _, s := range l.Skipped {
		skipped = append(skipped, s.Error())
	}
	if strings.Join(files, ",") != "p/c/big.yaml,p/c/request.yaml" {
		t.Fatalf("visible files: %v", files)
	}
	wantSkipped := []string{
		"..: unsafe path (invalid tree entry name)",
		"p/c/link.yaml: not a regular file (symlink)",
		"p/c/run.sh: not a regular file (executable)",
		"p/sub: not a regular file (submodule)",
	}
	if strings.Join(skipped, "\n") != strings.Join(wantSkipped, "\n") {
		t.Fatalf("skipped:\n%s", strings.Join(skipped, "\n"))
	}
	cs, err := agent.Changes(plumbing.ZeroHash, head)
	if err != nil || len(cs.Changes) != 2 || len(cs.Skipped) != 4 {
		t.Fatalf("changes: %+v %v", cs, err)
	}

	for path, want := range map[string]error{
		"p/c/request.yaml":     nil,
		"p/c/big.yaml":         gitsync.ErrFileTooLarge,
		"p/c/link.yaml":        gitsync.ErrNotRegularFile,
		"p/c/run.sh":           gitsync.ErrNotRegularFile,
		"p/sub":                gitsync.ErrNotRegularFile,
		"p/c":                  gitsync.ErrNotRegularFile,
		"../secret.yaml":       gitsync.ErrUnsafePath,
		"../escape.yaml":       gitsync.ErrUnsafePath,
		"p/../../secret.yaml":  gitsync.ErrUnsafePath,
		"/secret.yaml":         gitsync.ErrUnsafePath,
		"p/c/missing.yaml":     gitsync.ErrFileNotFound,
		"p/c/link.yaml/x.yaml": gitsync.ErrFileNotFound,
	} {
		_, err := agent.ReadFile(head, path)
		if !errors.Is(err, want) && !(want == nil && err == nil) {
			t.Errorf("ReadFile(%q) = %v, want %v", path, err, want)
		}
	}

	// The cap is configurable.
	big := f.openHTTP(func(c *gitsync.Config) { c.Path = "peers"; c.MaxFileSize = 11 << 20 })
	data, err := big.ReadFile(mustPoll(t, big), "p/c/big.yaml")
	if err != nil || len(data) != 10<<20 {
		t.Fatalf("raised cap: %d bytes, %v", len(data), err)
	}

	// Writes refuse unsafe paths too, and replace a symlink by a regular file.
	if _, err := agent.Write(ctx(t), message("x"), []gitsync.FileChange{gitsync.Put("../secret.yaml", nil)}); !errors.Is(err, gitsync.ErrUnsafePath) {
		t.Fatalf("unsafe write: %v", err)
	}
	res := mustWrite(t, agent, "fix link", gitsync.Put("p/c/link.yaml", []byte("regular")))
	if data, err := agent.ReadFile(res.Commit, "p/c/link.yaml"); err != nil || string(data) != "regular" {
		t.Fatalf("replaced symlink: %q %v", data, err)
	}
}
