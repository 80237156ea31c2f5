package gitsync

import (
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// FileChange is one file to write or delete, relative to the configured root.
type FileChange struct {
	Path    string
	Content []byte
	// Delete removes the file; Content is ignored.
	Delete bool
}

// Put returns a change that writes content at path.
func Put(path string, content []byte) FileChange { return FileChange{Path: path, Content: content} }

// Delete returns a change that removes path.
func Delete(path string) FileChange { return FileChange{Path: path, Delete: true} }

// editNode is a directory of pending edits: leaves hold the new blob (nil to delete).
type editNode struct {
	blob     *plumbing.Hash
	leaf     bool
	children map[string]*editNode
}

func (n *editNode) child(name string) *editNode {
	if n.children == nil {
		n.children = map[string]*editNode{}
	}
	c, ok := n.children[name]
	if !ok {
		c = &editNode{}
		n.children[name] = c
	}
	return c
}

// treeEditor writes blobs and trees for a set of file changes.
type treeEditor struct {
	s storer.EncodedObjectStorer
	// applied remembers each subdirectory's edit result by the tree it was
	// applied to: when a write is retried on a branch another writer moved,
	// only the directories that writer changed are edited again.
	applied map[appliedKey]appliedTree
}

type appliedKey struct {
	tree plumbing.Hash // zero: no tree
	n    *editNode
}

type appliedTree struct {
	hash    plumbing.Hash
	changed bool
}

// plan validates the changes, stores their blobs and returns the edit tree
// rooted at the repository root (the configured root is prepended).
func (e *treeEditor) plan(root string, changes []FileChange) (*editNode, error) {
	top := &editNode{}
	base := top
	if root != "" {
		for _, p := range strings.Split(root, "/") {
			base = base.child(p)
		}
	}
	for _, ch := range changes {
		parts, err := cleanRel(ch.Path)
		if err != nil {
			return nil, err
		}
		n := base
		for _, p := range parts {
			n = n.child(p)
		}
		n.leaf, n.children, n.blob = true, nil, nil
		if !ch.Delete {
			h, err := e.writeBlob(ch.Content)
			if err != nil {
				return nil, err
			}
			n.blob = &h
		}
	}
	return top, nil
}

// apply applies n to the tree t (nil for none) and returns the new tree's hash
// (zero if it ended up empty) and whether anything changed.
func (e *treeEditor) apply(t *object.Tree, n *editNode) (plumbing.Hash, bool, error) {
	var entries []object.TreeEntry
	if t != nil {
		entries = append(entries, t.Entries...)
	}
	index := make(map[string]int, len(entries)) // the first entry of each name, as a lookup would find it
	for i := len(entries) - 1; i >= 0; i-- {
		index[entries[i].Name] = i
	}
	changed := false
	var removed []int
	for name, child := range n.children {
		i, ok := index[name]
		if !ok {
			i = -1
		}
		var next *object.TreeEntry
		if child.leaf {
			next = leafEntry(name, child)
		} else {
			var sub plumbing.Hash
			if i >= 0 && entries[i].Mode == filemode.Dir {
				sub = entries[i].Hash
			}
			h, subChanged, err := e.applyDir(sub, child)
			if err != nil {
				return plumbing.ZeroHash, false, err
			}
			if !subChanged {
				continue
			}
			if !h.IsZero() {
				next = &object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: h}
			}
		}
		switch {
		case i < 0 && next == nil:
		case i < 0:
			entries, changed = append(entries, *next), true
			index[name] = len(entries) - 1
		case next == nil:
			removed, changed = append(removed, i), true
			delete(index, name)
		case !sameEntry(entries[i], *next):
			entries[i], changed = *next, true
		}
	}
	entries = without(entries, removed)
	if !changed {
		if t == nil {
			return plumbing.ZeroHash, false, nil
		}
		return t.Hash, false, nil
	}
	if len(entries) == 0 {
		return plumbing.ZeroHash, true, nil
	}
	h, err := e.writeTree(entries)
	return h, true, err
}

// applyDir is apply on the tree tree (zero for none), remembered by tree and
// n (see treeEditor.applied).
func (e *treeEditor) applyDir(tree plumbing.Hash, n *editNode) (plumbing.Hash, bool, error) {
	key := appliedKey{tree: tree, n: n}
	if done, ok := e.applied[key]; ok {
		return done.hash, done.changed, nil
	}
	var t *object.Tree
	if !tree.IsZero() {
		var err error
		if t, err = object.GetTree(e.s, tree); err != nil {
			return plumbing.ZeroHash, false, err
		}
	}
	h, changed, err := e.apply(t, n)
	if err != nil {
		return plumbing.ZeroHash, false, err
	}
	if e.applied == nil {
		e.applied = map[appliedKey]appliedTree{}
	}
	e.applied[key] = appliedTree{hash: h, changed: changed}
	return h, changed, nil
}

// without returns entries without those at the indexes in removed.
func without(entries []object.TreeEntry, removed []int) []object.TreeEntry {
	if len(removed) == 0 {
		return entries
	}
	drop := make(map[int]bool, len(removed))
	for _, i := range removed {
		drop[i] = true
	}
	out := entries[:0]
	for i, en := range entries {
		if !drop[i] {
			out = append(out, en)
		}
	}
	return out
}

// leafEntry is the entry a leaf edit produces, nil for a delete.
func leafEntry(name string, n *editNode) *object.TreeEntry {
	if n.blob == nil {
		return nil
	}
	return &object.TreeEntry{Name: name, Mode: filemode.Regular, Hash: *n.blob}
}

// sameEntry reports whether a and b have the same content and kind (both
// spellings of a regular file's mode count as the same).
func sameEntry(a, b object.TreeEntry) bool {
	return a.Hash == b.Hash && (a.Mode == b.Mode || isRegular(a.Mode) && isRegular(b.Mode))
}

func (e *treeEditor) writeBlob(content []byte) (plumbing.Hash, error) {
	obj := e.s.NewEncodedObject()
	obj.SetType(plumbing.BlobObject)
	obj.SetSize(int64(len(content)))
	w, err := obj.Writer()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if _, err := w.Write(content); err != nil {
		return plumbing.ZeroHash, err
	}
	if err := w.Close(); err != nil {
		return plumbing.ZeroHash, err
	}
	return e.s.SetEncodedObject(obj)
}

func (e *treeEditor) writeTree(entries []object.TreeEntry) (plumbing.Hash, error) {
	sort.Sort(object.TreeEntrySorter(entries))
	obj := e.s.NewEncodedObject()
	if err := (&object.Tree{Entries: entries}).Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	return e.s.SetEncodedObject(obj)
}
