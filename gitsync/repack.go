package gitsync

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// maxPacks bounds the packs the clone keeps: past it, the next write or
// fetch repacks the clone into one pack. Every write and every fetch that
// brings something adds a pack, and each object lookup searches the packs'
// indexes one after the other, so without a bound an agent running for weeks
// would search thousands. 50 is Git's own gc.autoPackLimit, past which
// `git gc --auto` repacks everything into one pack: a repack rewrites the
// whole clone, and this bound spreads its cost over 50 writes or fetches,
// while a lookup searches at most 50 indexes (see BENCHMARKS.md).
const maxPacks = 50

// consolidate repacks the clone when it holds more than maxPacks packs.
// It runs with r.mu held, as every read of the clone does, so no reader
// sees the packs change under it. A failed repack fails neither the fetch
// nor the write before it (the clone is whole, only its packs stay many):
// it waits for RepackFailure.
func (r *Repo) consolidate() {
	packs, err := r.storage.ObjectPacks()
	if err == nil && len(packs) > maxPacks {
		if err = repack(r.storage, packs); err != nil {
			err = fmt.Errorf("gitsync: repack the clone's %d packs: %w", len(packs), err)
		}
	}
	if err != nil {
		r.repackErr = err
	}
}

// RepackFailure returns, once, the error of the clone's last failed repack
// or pack listing since it was last called; nil if there was none.
func (r *Repo) RepackFailure() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	err := r.repackErr
	r.repackErr = nil
	return err
}

// repack writes the objects the clone's refs reach into one new pack, then
// deletes the packs old, as `git repack -a -d` does; objects no ref reaches
// (a write's pack whose commit was never fetched back, history a forced push
// dropped) go with them. The new pack is written and indexed under temporary
// names and only renamed into place once whole (packIndexer), so a failure
// leaves the clone as it was, with at most a pack more. The old packs are
// deleted only once the new one is in place, so every object stays readable
// throughout.
func repack(st *filesystem.Storage, old []plumbing.Hash) error {
	objects, err := reachable(st)
	if err != nil {
		return err
	}
	w, err := newPackIndexer(st)
	if err != nil {
		return err
	}
	err = writePack(w, st, objects)
	if err = errors.Join(err, w.Close()); err != nil {
		return err
	}
	// The storage keeps the old packs open (Options.KeepDescriptors), each
	// with its own copy of its index: closing them releases those, and the
	// files' space once deleted. They reopen lazily as objects are read, and
	// the storage reads the indexes of the packs left on its next read
	// (packIndexer.save's Reindex).
	err = st.Close()
	for _, h := range old {
		if h != w.checksum { // the same objects in the same order make the same pack
			err = errors.Join(err, st.DeleteOldObjectPackAndIndex(h, time.Time{}))
		}
	}
	return err
}

// reachable lists the objects the clone's refs reach: each commit of their
// history down to the shallow boundary (a shallow clone lacks the parents of
// its shallow commits), then its tree and what the tree holds, each object
// once, in the order walked.
func reachable(st *filesystem.Storage) ([]plumbing.Hash, error) {
	shallow, err := st.Shallow()
	if err != nil {
		return nil, err
	}
	var boundary []plumbing.Hash
	for _, h := range shallow {
		c, err := object.GetCommit(st, h)
		if err != nil {
			return nil, err
		}
		boundary = append(boundary, c.ParentHashes...)
	}
	refs, err := st.IterReferences()
	if err != nil {
		return nil, err
	}
	seen := map[plumbing.Hash]bool{}
	var objects []plumbing.Hash
	add := func(h plumbing.Hash) {
		seen[h] = true
		objects = append(objects, h)
	}
	err = refs.ForEach(func(ref *plumbing.Reference) error {
		if ref.Type() != plumbing.HashReference || seen[ref.Hash()] {
			return nil
		}
		head, err := object.GetCommit(st, ref.Hash())
		if err != nil {
			return fmt.Errorf("%s: %w", ref.Name(), err)
		}
		// seen stops the walk at commits another ref reached.
		return object.NewCommitPreorderIter(head, seen, boundary).ForEach(func(c *object.Commit) error {
			add(c.Hash)
			if seen[c.TreeHash] {
				return nil
			}
			tree, err := c.Tree()
			if err != nil {
				return err
			}
			add(tree.Hash)
			return walkTree(tree, seen, add)
		})
	})
	return slices.Clip(objects), err
}

// walkTree adds every object under tree that seen lacks; the walker does not
// enter a subtree seen holds. Entry names are not checked: the walk only
// collects hashes, and a remote's tree may hold names unsafe to check out.
func walkTree(tree *object.Tree, seen map[plumbing.Hash]bool, add func(plumbing.Hash)) error {
	tw := object.NewTreeWalker(tree, true, seen)
	defer tw.Close()
	tw.SkipPathValidation()
	for {
		_, e, err := tw.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		// A submodule's commit is in another repository.
		if e.Mode != filemode.Submodule && !seen[e.Hash] {
			add(e.Hash)
		}
	}
}
