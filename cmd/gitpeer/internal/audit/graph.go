package audit

import (
	"errors"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// GraphOrder returns the commits reachable from head in topological order,
// parents before children: a depth-first walk that emits a commit once all
// its parents are emitted, visiting parents in order (a merge's first
// parent's history, then what the merged branch added, then the merge). It
// never reads a date, so a commit's place is where the graph puts it,
// whatever date its author chose, and the same graph always gives the same
// order. Parents missing from the repository (a shallow clone's boundary)
// are left out.
func GraphOrder(repo *git.Repository, head plumbing.Hash) ([]plumbing.Hash, error) {
	type frame struct {
		c    *object.Commit
		next int // the next parent to visit
	}
	tip, err := repo.CommitObject(head)
	if err != nil {
		return nil, err
	}
	var out []plumbing.Hash
	seen := map[plumbing.Hash]bool{head: true}
	stack := []*frame{{c: tip}}
	for len(stack) > 0 {
		f := stack[len(stack)-1]
		if f.next == len(f.c.ParentHashes) {
			out = append(out, f.c.Hash)
			stack = stack[:len(stack)-1]
			continue
		}
		p := f.c.ParentHashes[f.next]
		f.next++
		if seen[p] {
			continue
		}
		seen[p] = true
		pc, err := repo.CommitObject(p)
		if errors.Is(err, plumbing.ErrObjectNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		stack = append(stack, &frame{c: pc})
	}
	return out, nil
}

// firstParents returns the commits of head's first-parent chain: the states
// the branch went through.
func firstParents(repo *git.Repository, head plumbing.Hash) (map[plumbing.Hash]bool, error) {
	chain := map[plumbing.Hash]bool{}
	for h := head; ; {
		c, err := repo.CommitObject(h)
		if errors.Is(err, plumbing.ErrObjectNotFound) {
			return chain, nil // shallow clone
		}
		if err != nil {
			return nil, err
		}
		chain[h] = true
		if c.NumParents() == 0 {
			return chain, nil
		}
		h = c.ParentHashes[0]
	}
}

// FirstParent returns c's first parent, or nil for a root commit or one
// whose parent is beyond a shallow clone's boundary.
func FirstParent(c *object.Commit) (*object.Commit, error) {
	if c.NumParents() == 0 {
		return nil, nil
	}
	parent, err := c.Parent(0)
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		return nil, nil
	}
	return parent, err
}
