package gitsync_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitpeer/gitpeer/gitsync"
)

// mergeHistory is a branch on which an agent signed two commits under
// peers/p/c (a Tenant, then its drain: active and drained), and merges
// Mallory crafted on top of it with git commit-tree, unsigned. The checks
// read Mallory's clone, which holds them all.
type mergeHistory struct {
	t               *testing.T
	work            string
	active, drained string // the agent's commits
	side            string // Mallory's commit on active, outside the agent's folder
	trusted         *gitsync.TrustedKeys
	local           *gitsync.Repo
}

func newMergeHistory(t *testing.T) *mergeHistory {
	f := newFixture(t, "merges")
	agent, trusted := signingAgent(t, f)
	h := &mergeHistory{t: t, trusted: trusted}
	h.active = mustWrite(t, agent, "active", gitsync.Put("p/c/tenant.yaml", []byte("active"))).Commit.String()
	h.drained = mustWrite(t, agent, "drained", gitsync.Put("p/c/tenant.yaml", []byte("drained"))).Commit.String()
	h.work = f.cliClone()
	h.side = h.commit(h.tree(h.active, map[string]string{"README.md": "side"}), h.active)
	return h
}

// tree returns the tree of base with files written over it (deleted if
// their content is empty).
func (h *mergeHistory) tree(base string, files map[string]string) string {
	h.t.Helper()
	git(h.t, h.work, "checkout", "-q", "--detach", base)
	for p, content := range files {
		if content == "" {
			git(h.t, h.work, "rm", "-q", p)
			continue
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(h.work, p)), 0o755); err != nil {
			h.t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(h.work, p), []byte(content), 0o644); err != nil {
			h.t.Fatal(err)
		}
		git(h.t, h.work, "add", p)
	}
	tree := git(h.t, h.work, "write-tree")
	git(h.t, h.work, "reset", "-q", "--hard")
	return tree
}

// treeOf returns the tree of commit.
func (h *mergeHistory) treeOf(commit string) string {
	return git(h.t, h.work, "rev-parse", commit+"^{tree}")
}

// commit makes an unsigned commit of tree with parents, in that order.
func (h *mergeHistory) commit(tree string, parents ...string) string {
	h.t.Helper()
	args := []string{"commit-tree", "-m", "crafted"}
	for _, p := range parents {
		args = append(args, "-p", p)
	}
	return git(h.t, h.work, append(args, tree)...)
}

// repo opens Mallory's clone as gitpeer verify does, rooted at peers.
func (h *mergeHistory) repo() *gitsync.Repo {
	h.t.Helper()
	if h.local == nil {
		r, err := gitsync.OpenLocal(h.work, gitsync.Config{Path: "peers"})
		if err != nil {
			h.t.Fatal(err)
		}
		h.t.Cleanup(func() { _ = r.Close() })
		h.local = r
	}
	return h.local
}

// TestMergesThatRevert crafts merges on top of a drain the agent acted on
// (its last processed commit is the drain): in Relevant mode each merge that
// changes the agent's folder relative to any parent needs a trusted
// signature, and a merge that brings back what an older parent held where a
// newer one changed it is refused, signed or not.
func TestMergesThatRevert(t *testing.T) {
	h := newMergeHistory(t)
	dirs := []string{"p/c"}
	active, drained, side := h.active, h.drained, h.side
	// newer is the agent's drain plus a nonce, and a request of another consumer.
	newer := h.commit(h.tree(drained, map[string]string{"peers/p/c/nonce.yaml": "n", "peers/p/d/request.yaml": "r"}), drained)
	// ahead adds a request on top of the drain, as a pull request branch does.
	ahead := h.commit(h.tree(drained, map[string]string{"peers/p/c/request.yaml": "again"}), drained)
	// fork changes another consumer's folder, from the active Tenant.
	fork := h.commit(h.tree(active, map[string]string{"peers/p/d/request.yaml": "d"}), active)
	// revoked deletes the drained Tenant; readme leaves the folder alone.
	revoked := h.commit(h.tree(drained, map[string]string{"peers/p/c/tenant.yaml": ""}), drained)
	readme := h.commit(h.tree(drained, map[string]string{"README.md": "readme"}), drained)
	cases := []struct {
		name     string
		from, to string
		unsigned bool   // Relevant mode must find it unsigned
		revert   string // the path CheckMerges must name, "" for none
		older    string
		newer    string
	}{
		{name: "first parent old, tree old",
			from: drained, to: h.commit(h.treeOf(active), active, drained),
			unsigned: true, revert: "p/c", older: active, newer: drained},
		{name: "second parent old, tree old",
			from: drained, to: h.commit(h.treeOf(active), drained, active),
			unsigned: true, revert: "p/c", older: active, newer: drained},
		{name: "octopus on an old side branch",
			from: drained, to: h.commit(h.treeOf(side), side, active, drained),
			unsigned: true, revert: "p/c", older: active, newer: drained},
		{name: "partial: old tenant.yaml, new nonce.yaml",
			from: newer, to: h.commit(h.tree(newer, map[string]string{"peers/p/c/tenant.yaml": "active"}), active, newer),
			unsigned: true, revert: "p/c/tenant.yaml", older: active, newer: newer},
		{name: "deletion undone",
			from: revoked, to: h.commit(h.treeOf(drained), drained, revoked),
			unsigned: true, revert: "p/c", older: drained, newer: revoked},
		{name: "deletion undone with a file of its own",
			from: revoked, to: h.commit(h.tree(drained, map[string]string{"peers/p/c/request.yaml": "r"}), revoked, drained),
			unsigned: true, revert: "p/c/tenant.yaml", older: drained, newer: revoked},
		{name: "evil merge matching neither parent, on an old side branch",
			from: drained, to: h.commit(h.tree(side, map[string]string{"README.md": "evil"}), side, drained),
			unsigned: true},
		{name: "evil merge with its own tenant.yaml",
			from: drained, to: h.commit(h.tree(drained, map[string]string{"peers/p/c/tenant.yaml": "evil"}), active, drained),
			unsigned: true},
		{name: "clean merge of a branch ahead",
			from: drained, to: h.commit(h.treeOf(ahead), drained, ahead),
			unsigned: true},
		// Its folder is the drain, but the branch merged holds the active Tenant.
		{name: "clean merge of a stale branch",
			from: drained, to: h.commit(h.tree(drained, map[string]string{"peers/p/d/request.yaml": "d"}), drained, fork),
			unsigned: true},
		{name: "merge keeping the newer parent's folder",
			from: drained, to: h.commit(h.treeOf(drained), active, drained),
			unsigned: true},
		{name: "merge of a branch that left the folder alone",
			from: drained, to: h.commit(h.treeOf(readme), drained, readme)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			from, to := plumbing.NewHash(tc.from), plumbing.NewHash(tc.to)
			bad, err := h.repo().VerifyCommitSignaturesWith(from, to, h.trusted, gitsync.SignatureOptions{Dirs: dirs})
			if err != nil {
				t.Fatal(err)
			}
			if got := slices.ContainsFunc(bad, func(u gitsync.Unverified) bool { return u.Commit == to && u.Reason == "unsigned" }); got != tc.unsigned {
				t.Errorf("Relevant mode reported %v, want the merge unsigned: %v", bad, tc.unsigned)
			}
			// From the last processed commit, and over the whole history.
			for _, from := range []plumbing.Hash{from, plumbing.ZeroHash} {
				err = h.repo().CheckMerges(from, to, dirs)
				var mr *gitsync.MergeRevertError
				switch {
				case tc.revert == "" && err != nil:
					t.Errorf("from %s: %v, want none", from, err)
				case tc.revert == "":
				case !errors.Is(err, gitsync.ErrMergeReverts) || !errors.As(err, &mr):
					t.Errorf("from %s: %v, want a MergeRevertError", from, err)
				case mr.Merge != to || mr.Path != tc.revert || mr.Older.String() != tc.older || mr.Newer.String() != tc.newer:
					t.Errorf("from %s: %+v, want merge %s, path %s, older %s, newer %s", from, mr, to, tc.revert, tc.older, tc.newer)
				case !strings.Contains(err.Error(), tc.revert):
					t.Errorf("message %q does not name %s", err, tc.revert)
				}
			}
		})
	}
	// A merge of more parents than are compared is refused unchecked.
	parents := []string{drained}
	for i := range gitsync.MaxMergeParents {
		parents = append(parents, h.commit(h.tree(drained, map[string]string{"README.md": strings.Repeat("x", i+1)}), drained))
	}
	octopus := plumbing.NewHash(h.commit(h.treeOf(drained), parents...))
	var mr *gitsync.MergeRevertError
	if err := h.repo().CheckMerges(plumbing.NewHash(drained), octopus, dirs); !errors.As(err, &mr) || mr.Merge != octopus || mr.Parents != gitsync.MaxMergeParents+1 {
		t.Errorf("a merge of %d parents: %v", len(parents), err)
	}
	// Once the agent acted on a merge (an acknowledgement), it is behind it.
	acked := h.commit(h.treeOf(active), active, drained)
	if err := h.repo().CheckMerges(plumbing.NewHash(acked), plumbing.NewHash(h.commit(h.treeOf(acked), acked)), dirs); err != nil {
		t.Errorf("a merge before the last processed commit: %v", err)
	}
	// A file made executable (never read then) keeps its blob: a change all the same.
	git(t, h.work, "checkout", "-q", "--detach", drained)
	git(t, h.work, "update-index", "--chmod=+x", "peers/p/c/tenant.yaml")
	executable := h.commit(git(t, h.work, "write-tree"), drained)
	git(t, h.work, "reset", "-q", "--hard")
	if bad, err := h.repo().VerifyCommitSignaturesWith(plumbing.NewHash(drained), plumbing.NewHash(executable), h.trusted, gitsync.SignatureOptions{Dirs: []string{"p/c/tenant.yaml"}}); err != nil || len(bad) != 1 {
		t.Errorf("a mode change: %v, %v; want it unsigned", bad, err)
	}
	// A file is watched as a folder is (a consumer's view of its provider's terms.yaml).
	var mr2 *gitsync.MergeRevertError
	if err := h.repo().CheckMerges(plumbing.NewHash(drained), plumbing.NewHash(acked), []string{"p/c/tenant.yaml"}); !errors.As(err, &mr2) || mr2.Path != "p/c/tenant.yaml" {
		t.Errorf("a watched file: %v", err)
	}
	// Outside the folders the agent reads, a revert is not its business.
	if err := h.repo().CheckMerges(plumbing.NewHash(drained), plumbing.NewHash(acked), []string{"p/d"}); err != nil {
		t.Errorf("another folder: %v", err)
	}
	if err := h.repo().CheckMerges(plumbing.NewHash(drained), plumbing.NewHash(acked), []string{"p/../x"}); err == nil {
		t.Error("an unsafe directory was accepted")
	}
}
