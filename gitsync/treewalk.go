package gitsync

import (
	"errors"
	"fmt"
	"sort"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// EntryKind names what a non-regular tree entry is, for reports.
func EntryKind(m filemode.FileMode) string {
	switch m {
	case filemode.Symlink:
		return "symlink"
	case filemode.Submodule:
		return "submodule"
	case filemode.Executable:
		return "executable"
	case filemode.Dir:
		return "directory"
	}
	return "mode " + m.String()
}

// isRegular reports whether m is a plain (non-executable) file.
func isRegular(m filemode.FileMode) bool {
	return m == filemode.Regular || m == filemode.Deprecated
}

// visit receives one visible path whose regular-file state differs between
// the two trees: from or to is the zero hash when the file is absent (or not
// a regular file) on that side.
type visit func(path string, from, to plumbing.Hash)

// treeDiff compares two trees (either may be nil) recursively, skipping
// identical subtrees by hash. It visits each tree once, so it bypasses the
// tree cache. Entries with unsafe names, and non-regular
// entries on the "to" side, are reported in skipped and treated as absent.
// Subtrees are loaded with loadTree: a refused one, and every one beyond
// limits.MaxDirectories, is not descended into and, on the "to" side, is
// reported in skipped (its files are present but unread, never absent).
// A directory within refuses is not loaded at all; nor is a "to" directory
// known reports, which is listed as known instead.
type treeDiff struct {
	storer  storer.EncodedObjectStorer
	limits  Limits
	visit   visit
	within  func(dir string) bool                     // nil: every directory
	known   func(dir string, tree plumbing.Hash) bool // listings only (no "from" side); nil: none
	skipped []*FileError
	listed  []Dir // the "to" side's directories, loaded or known
	dirs    int   // subtrees loaded so far
}

// newDiff returns a treeDiff over r's storage and limits.
func (r *Repo) newDiff(v visit) *treeDiff {
	return &treeDiff{storer: r.storage, limits: r.cfg.Limits, visit: v}
}

func (d *treeDiff) diff(prefix string, a, b *object.Tree) error {
	from, to := entryMap(a), entryMap(b)
	for _, name := range unionNames(from, to) {
		ea, eb := from[name], to[name]
		if ea != nil && eb != nil && ea.Hash == eb.Hash && ea.Mode == eb.Mode {
			continue
		}
		p := joinPath(prefix, name)
		if !validName(name) {
			if eb != nil {
				d.skipped = append(d.skipped, &FileError{Path: p, Reason: ErrUnsafePath, Detail: "invalid tree entry name", Hash: eb.Hash})
			}
			continue
		}
		subA, subB, err := d.subtrees(p, ea, eb)
		var refusedDir *FileError
		if errors.As(err, &refusedDir) {
			d.skipped = append(d.skipped, refusedDir)
			continue
		}
		if err != nil {
			return err
		}
		if subA != nil || subB != nil {
			if err := d.diff(p, subA, subB); err != nil {
				return err
			}
		}
		if eb != nil && eb.Mode != filemode.Dir && !isRegular(eb.Mode) {
			d.skipped = append(d.skipped, &FileError{Path: p, Reason: ErrNotRegularFile, Detail: EntryKind(eb.Mode), Hash: eb.Hash})
		}
		fa, fb := regularHash(ea), regularHash(eb)
		if fa != fb {
			d.visit(p, fa, fb)
		}
	}
	return nil
}

// subtrees loads the directory entries among ea and eb at path p; outside
// d.within it loads nothing (nil, as empty trees). A refused "from" tree
// reads as empty; a refused "to" tree is a *FileError.
func (d *treeDiff) subtrees(p string, ea, eb *object.TreeEntry) (a, b *object.Tree, err error) {
	isDir := func(e *object.TreeEntry) bool { return e != nil && e.Mode == filemode.Dir }
	if !isDir(ea) && !isDir(eb) || d.within != nil && !d.within(p) {
		return nil, nil, nil
	}
	if isDir(ea) {
		if a, err = d.load(p, ea.Hash); refused(err) {
			a, err = nil, nil
		}
		if err != nil {
			return nil, nil, err
		}
	}
	if isDir(eb) {
		if d.known != nil && d.known(p, eb.Hash) {
			d.listed = append(d.listed, Dir{Path: p, Hash: eb.Hash, Known: true})
			return a, nil, nil
		}
		if b, err = d.load(p, eb.Hash); err != nil {
			return nil, nil, err
		}
		d.listed = append(d.listed, Dir{Path: p, Hash: eb.Hash})
	}
	return a, b, nil
}

// load loads the subtree h at path p, counting it against MaxDirectories;
// a refused one is a *FileError carrying h.
func (d *treeDiff) load(p string, h plumbing.Hash) (*object.Tree, error) {
	if max := d.limits.MaxDirectories; max > 0 && d.dirs >= max {
		return nil, &FileError{Path: p, Reason: ErrRoundLimitExceeded, Hash: h,
			Detail: fmt.Sprintf("directory not read: a listing reads at most %d directories", max)}
	}
	d.dirs++
	t, err := loadTree(d.storer, h, p, d.limits.treeEntries(levelOf(p)))
	if fe := (*FileError)(nil); errors.As(err, &fe) {
		fe.Hash = h
	}
	return t, err
}

// regularHash returns the blob hash of a regular-file entry, else the zero hash.
func regularHash(e *object.TreeEntry) plumbing.Hash {
	if e == nil || !isRegular(e.Mode) {
		return plumbing.ZeroHash
	}
	return e.Hash
}

func entryMap(t *object.Tree) map[string]*object.TreeEntry {
	if t == nil {
		return nil
	}
	m := make(map[string]*object.TreeEntry, len(t.Entries))
	for i := range t.Entries {
		m[t.Entries[i].Name] = &t.Entries[i]
	}
	return m
}

func unionNames(a, b map[string]*object.TreeEntry) []string {
	names := make([]string, 0, len(a)+len(b))
	for n := range a {
		names = append(names, n)
	}
	for n := range b {
		if _, ok := a[n]; !ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}
