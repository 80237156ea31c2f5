package gitsync

import (
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// maxTreeEntryBytes bounds the encoded size of one tree entry ("100644 ",
// a name of up to 255 bytes, NUL, a 20-byte hash), so a tree object larger
// than MaxTreeEntries of them is refused from its header, before decoding.
const maxTreeEntryBytes = len("100644 ") + 255 + 1 + 20

// loadTree decodes the tree h after checking, from its object header, that it
// can hold at most maxEntries entries (0: no cap), then checks its entry count
// and that its entries are unique and in Git's canonical order. path names the
// tree in errors, which are *FileError for a refused tree.
func loadTree(s storer.EncodedObjectStorer, h plumbing.Hash, path string, maxEntries int) (*object.Tree, error) {
	if maxEntries > 0 {
		size, err := s.EncodedObjectSize(h)
		if err != nil {
			return nil, fmt.Errorf("gitsync: size of tree %s: %w", h, err)
		}
		if size > int64(maxEntries*maxTreeEntryBytes) {
			return nil, &FileError{Path: path, Reason: ErrLimitExceeded,
				Detail: fmt.Sprintf("tree object is %d bytes, more than %d entries can take", size, maxEntries)}
		}
	}
	t, err := object.GetTree(s, h)
	if err != nil {
		return nil, err
	}
	if maxEntries > 0 && len(t.Entries) > maxEntries {
		return nil, tooManyEntries(path, len(t.Entries), maxEntries)
	}
	if err := checkOrder(t); err != nil {
		return nil, &FileError{Path: path, Reason: ErrMalformedTree, Detail: err.Error()}
	}
	return t, nil
}

func tooManyEntries(path string, n, maxEntries int) error {
	return &FileError{Path: path, Reason: ErrLimitExceeded, Detail: fmt.Sprintf("%d entries, limit %d", n, maxEntries)}
}

// checkOrder refuses a tree with two entries of one name or entries out of
// Git's order (by name, a directory's name compared as if it ended in "/").
func checkOrder(t *object.Tree) error {
	seen := make(map[string]bool, len(t.Entries))
	for i, e := range t.Entries {
		if seen[e.Name] {
			return fmt.Errorf("two entries named %q", e.Name)
		}
		seen[e.Name] = true
		if i > 0 && sortKey(t.Entries[i-1]) >= sortKey(e) {
			return fmt.Errorf("entry %q is not sorted after %q", e.Name, t.Entries[i-1].Name)
		}
	}
	return nil
}

// sortKey is the name Git sorts a tree entry by.
func sortKey(e object.TreeEntry) string {
	if e.Mode == filemode.Dir {
		return e.Name + "/"
	}
	return e.Name
}
