package gitsync

import (
	"errors"
	"fmt"
	"path"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// MergeRevertError reports a merge commit that keeps, at Path, what its
// parent Older holds although its parent Newer, which descends from Older,
// changed it: the merge brings back a state the branch had left behind, e.g.
// a drained Tenant or a deleted tenant.yaml. No clean merge has this shape:
// Older is then the merge base, and a merge takes each file from the side
// that changed it.
type MergeRevertError struct {
	Merge, Older, Newer plumbing.Hash
	// Path is relative to the configured root.
	Path string
	// Parents is set, and the other fields but Merge are not, when the merge
	// has more than MaxMergeParents parents: it is refused unchecked.
	Parents int
}

// MaxMergeParents is the most parents a merge CheckMerges compares may have:
// their pairs are compared, and forges merge two.
const MaxMergeParents = 16

func (e *MergeRevertError) Error() string {
	if e.Parents > 0 {
		return fmt.Sprintf("%v: merge %s has %d parents, more than the %d that are checked, so it is refused unchecked",
			ErrMergeReverts, e.Merge, e.Parents, MaxMergeParents)
	}
	where := e.Path
	if where == "" {
		where = "the root"
	}
	return fmt.Sprintf("%v: merge %s keeps %s as in its parent %s, undoing what its parent %s (a descendant of %s) changed there",
		ErrMergeReverts, e.Merge, where, e.Older, e.Newer, e.Older)
}

// Unwrap makes errors.Is(err, ErrMergeReverts) true.
func (e *MergeRevertError) Unwrap() error { return ErrMergeReverts }

// CheckMerges returns a *MergeRevertError for the first merge commit,
// reachable from to and not from from (zero: the whole history), that
// brings back under one of dirs (directories or files, relative to the
// configured root; none means the root) what one of its parents holds although another parent, which
// descends from it, changed it. A merge of two parents neither of which
// descends from the other is not judged here: in spec.verify's Relevant mode
// it is checked for a trusted signature as any commit that changes a
// directory relative to one of its parents. A merge of more than
// MaxMergeParents parents is refused unchecked. Directories the reader
// refuses are not compared, nor is history beyond a shallow boundary.
func (r *Repo) CheckMerges(from, to plumbing.Hash, dirs []string) error {
	dirs, err := checkDirs("check merges", dirs)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if merges, err := r.mergesBetween(from, to); err != nil || !merges {
		return err
	}
	g := &graph{nodes: map[plumbing.Hash]*graphNode{}}
	for _, h := range []plumbing.Hash{to, from} {
		if !h.IsZero() {
			if err := g.load(r, h); err != nil {
				return err
			}
		}
	}
	old := g.ancestors(from)
	for _, m := range g.order {
		if old[m] || len(g.nodes[m].parents) < 2 {
			continue
		}
		if err := r.checkMerge(g, m, dirs); err != nil {
			return err
		}
	}
	return nil
}

// mergesBetween reports whether a merge commit may lie between from and to:
// it follows first parents from to and says no only when it reaches from (or
// a root) through single-parent commits, the common case, so that the whole
// history is loaded only when a merge came in.
func (r *Repo) mergesBetween(from, to plumbing.Hash) (bool, error) {
	for h := to; h != from; {
		c, err := r.repo.CommitObject(h)
		if errors.Is(err, plumbing.ErrObjectNotFound) {
			return false, nil // beyond a shallow boundary
		}
		if err != nil {
			return false, fmt.Errorf("gitsync: commit %s: %w", h, err)
		}
		switch len(c.ParentHashes) {
		case 0:
			return false, nil
		case 1:
			h = c.ParentHashes[0]
		default:
			return true, nil
		}
	}
	return false, nil
}

// checkMerge returns a *MergeRevertError if merge m keeps, under one of dirs,
// what a parent holds where another parent that descends from it differs.
func (r *Repo) checkMerge(g *graph, m plumbing.Hash, dirs []string) error {
	parents := g.nodes[m].parents
	if len(parents) > MaxMergeParents {
		return &MergeRevertError{Merge: m, Parents: len(parents)}
	}
	for _, older := range parents {
		for _, newer := range parents {
			if older == newer || !g.isAncestor(older, newer) {
				continue
			}
			for _, d := range dirs {
				p, found, err := r.revertedIn(d, m, older, newer)
				if err != nil {
					return err
				}
				if found {
					return &MergeRevertError{Merge: m, Older: older, Newer: newer, Path: p}
				}
			}
		}
	}
	return nil
}

// revertedIn returns a path under dir where merge m holds what older holds
// and newer does not, if there is one (and dir is not refused).
func (r *Repo) revertedIn(dir string, m, older, newer plumbing.Hash) (string, bool, error) {
	var e [3]object.TreeEntry
	for i, c := range []plumbing.Hash{m, older, newer} {
		var err error
		e[i], err = r.entryAt(c, dir)
		if refused(err) {
			return "", false, nil
		}
		if err != nil {
			return "", false, err
		}
	}
	return r.reverted(dir, e[0], e[1], e[2])
}

// reverted compares the entries at p (zero: absent) of a merge, of its older
// parent and of its newer parent, descending into directories where the merge
// holds its own content, and returns the first path where the merge holds the
// older parent's entry and the newer parent another, if there is one.
func (r *Repo) reverted(p string, merge, older, newer object.TreeEntry) (string, bool, error) {
	switch {
	case sameEntry(older, newer), sameEntry(merge, newer):
		return "", false, nil // newer changed nothing here, or the merge kept its change
	case sameEntry(merge, older):
		return p, true, nil
	}
	var trees [3]*object.Tree
	for i, e := range []object.TreeEntry{merge, older, newer} {
		if e.Hash.IsZero() {
			continue
		}
		if e.Mode != filemode.Dir {
			return "", false, nil // a file on one side: the merge's own content, not compared file by file
		}
		t, err := r.trees.get(e.Hash, p, levelOf(p))
		if refused(err) {
			return "", false, nil
		}
		if err != nil {
			return "", false, err
		}
		trees[i] = t
	}
	mm, om, nm := entryMap(trees[0]), entryMap(trees[1]), entryMap(trees[2])
	for _, name := range unionNames(om, nm) {
		if _, err := cleanRel(name); err != nil {
			continue // a name no reader accepts is never read
		}
		q, found, err := r.reverted(path.Join(p, name), entryOf(mm[name]), entryOf(om[name]), entryOf(nm[name]))
		if found || err != nil {
			return q, found, err
		}
	}
	return "", false, nil
}

func entryOf(e *object.TreeEntry) object.TreeEntry {
	if e == nil {
		return object.TreeEntry{}
	}
	return *e
}

// graph is the commit graph reachable from the commits loaded, with each
// commit's generation (1 for a root, else one more than its parents'
// highest), so that an ancestry test stops at the generation of the commit
// it looks for instead of walking the whole history.
type graph struct {
	nodes map[plumbing.Hash]*graphNode
	order []plumbing.Hash // every commit loaded, each once, in the order first reached
}

type graphNode struct {
	parents []plumbing.Hash
	gen     int
}

// load adds the commits reachable from h. A commit missing from the clone (a
// shallow boundary) is a root.
func (g *graph) load(r *Repo, h plumbing.Hash) error {
	stack := []plumbing.Hash{h}
	for len(stack) > 0 {
		top := stack[len(stack)-1]
		n := g.nodes[top]
		if n == nil {
			// First visit: note its parents and put them above it, so that
			// its generation is computed after theirs.
			n = &graphNode{}
			c, err := r.repo.CommitObject(top)
			if err != nil && !errors.Is(err, plumbing.ErrObjectNotFound) {
				return fmt.Errorf("gitsync: commit %s: %w", top, err)
			}
			if c != nil {
				n.parents = c.ParentHashes
			}
			g.nodes[top] = n
			g.order = append(g.order, top)
			for _, p := range n.parents {
				if g.nodes[p] == nil {
					stack = append(stack, p)
				}
			}
			continue
		}
		stack = stack[:len(stack)-1]
		if n.gen > 0 {
			continue // pushed twice, done on its first pop
		}
		n.gen = 1
		for _, p := range n.parents {
			n.gen = max(n.gen, g.nodes[p].gen+1)
		}
	}
	return nil
}

// ancestors returns h and every commit it descends from (none for zero).
func (g *graph) ancestors(h plumbing.Hash) map[plumbing.Hash]bool {
	seen := map[plumbing.Hash]bool{}
	if h.IsZero() {
		return seen
	}
	stack := []plumbing.Hash{h}
	for len(stack) > 0 {
		c := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[c] {
			continue
		}
		seen[c] = true
		stack = append(stack, g.nodes[c].parents...)
	}
	return seen
}

// isAncestor reports whether b descends from a (both loaded, a != b).
func (g *graph) isAncestor(a, b plumbing.Hash) bool {
	ga := g.nodes[a].gen
	seen := map[plumbing.Hash]bool{}
	stack := []plumbing.Hash{b}
	for len(stack) > 0 {
		c := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if c == a {
			return true
		}
		if seen[c] || g.nodes[c].gen <= ga {
			continue // a's descendants all have a higher generation
		}
		seen[c] = true
		stack = append(stack, g.nodes[c].parents...)
	}
	return false
}
