package gitsync

import (
	"errors"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Op is what happened to a path.
type Op string

// The change operations.
const (
	Added    Op = "added"
	Modified Op = "modified"
	Deleted  Op = "deleted"
)

// Change is one visible path that changed between two commits.
type Change struct {
	// Path is relative to the configured root.
	Path string
	Op   Op
	// Hash is the new blob (zero for Deleted).
	Hash plumbing.Hash
}

// ChangeSet is what changed under the root between two commits.
type ChangeSet struct {
	From, To plumbing.Hash
	Changes  []Change
	// Skipped lists entries at To that are not visible: symlinks, submodules,
	// executables and unsafe names. A regular file that became one of these is
	// reported as Deleted and listed here.
	Skipped []*FileError
}

// Changes returns the paths added, modified or deleted under the root between
// from (the last processed commit; zero for "nothing processed yet") and to.
// It returns a *HistoryError (errors.Is ErrHistoryRewritten) when to does not
// descend from from.
func (r *Repo) Changes(from, to plumbing.Hash) (*ChangeSet, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.checkDescends(from, to); err != nil {
		return nil, err
	}
	var a *object.Tree
	if !from.IsZero() {
		var err error
		if a, err = r.rootTree(from); err != nil {
			return nil, err
		}
	}
	b, err := r.rootTree(to)
	if err != nil {
		return nil, err
	}
	cs := &ChangeSet{From: from, To: to}
	d := r.newDiff(func(p string, old, cur plumbing.Hash) {
		op := Modified
		switch {
		case old.IsZero():
			op = Added
		case cur.IsZero():
			op = Deleted
		}
		cs.Changes = append(cs.Changes, Change{Path: p, Op: op, Hash: cur})
	})
	if err := d.diff("", a, b); err != nil {
		return nil, err
	}
	cs.Skipped = d.skipped
	return cs, nil
}

// checkDescends returns a *HistoryError unless to is from or descends from it.
// A from that is not in the clone at all cannot be in the branch's history.
func (r *Repo) checkDescends(from, to plumbing.Hash) error {
	if from.IsZero() || from == to {
		return nil
	}
	tc, err := r.repo.CommitObject(to)
	if err != nil {
		return fmt.Errorf("gitsync: commit %s: %w", to, err)
	}
	fc, err := r.repo.CommitObject(from)
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		return &HistoryError{Last: from, New: to}
	}
	if err != nil {
		return err
	}
	ok, err := fc.IsAncestor(tc)
	if err != nil && !errors.Is(err, plumbing.ErrObjectNotFound) {
		return err
	}
	if !ok {
		return &HistoryError{Last: from, New: to}
	}
	return nil
}
