package gitsync

import (
	"fmt"
	"io"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// File is a regular file visible under the root at some commit.
type File struct {
	// Path is relative to the configured root.
	Path string
	// Hash is the blob's object id.
	Hash plumbing.Hash
}

// Listing is every visible file under the root at a commit.
type Listing struct {
	Commit plumbing.Hash
	Files  []File
	// Skipped lists entries that are not visible: symlinks, submodules,
	// executables and unsafe names.
	Skipped []*FileError
}

// List returns every regular file under the root at commit, for a full resync.
func (r *Repo) List(commit plumbing.Hash) (*Listing, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	root, err := r.rootTree(commit)
	if err != nil {
		return nil, err
	}
	l := &Listing{Commit: commit}
	d := &treeDiff{storer: r.storage, visit: func(p string, _, to plumbing.Hash) {
		l.Files = append(l.Files, File{Path: p, Hash: to})
	}}
	if err := d.diff("", nil, root); err != nil {
		return nil, err
	}
	l.Skipped = d.skipped
	return l, nil
}

// ReadFile returns the content of the regular file at path (relative to the
// root) in commit. The blob's size is checked against MaxFileSize before it is
// read; symlinks, submodules, executables and unsafe paths are refused with a
// *FileError.
func (r *Repo) ReadFile(commit plumbing.Hash, path string) ([]byte, error) {
	parts, err := cleanRel(path)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	t, err := r.rootTree(commit)
	if err != nil {
		return nil, err
	}
	var entry *object.TreeEntry
	for i, part := range parts {
		if t == nil {
			return nil, &FileError{Path: path, Reason: ErrFileNotFound}
		}
		entry = findEntry(t, part)
		if entry == nil {
			return nil, &FileError{Path: path, Reason: ErrFileNotFound}
		}
		if i < len(parts)-1 {
			if t, err = r.subtree(entry); err != nil {
				return nil, err
			}
		}
	}
	if !isRegular(entry.Mode) {
		return nil, &FileError{Path: path, Reason: ErrNotRegularFile, Detail: entryKind(entry.Mode)}
	}
	return r.readBlob(path, entry.Hash)
}

// readBlob reads a blob after checking its size against the cap.
func (r *Repo) readBlob(path string, h plumbing.Hash) ([]byte, error) {
	size, err := r.storage.EncodedObjectSize(h)
	if err != nil {
		return nil, fmt.Errorf("gitsync: size of %s: %w", path, err)
	}
	if size > r.cfg.MaxFileSize {
		return nil, &FileError{Path: path, Reason: ErrFileTooLarge,
			Detail: fmt.Sprintf("%d bytes, limit %d", size, r.cfg.MaxFileSize)}
	}
	blob, err := r.repo.BlobObject(h)
	if err != nil {
		return nil, err
	}
	rd, err := blob.Reader()
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	return io.ReadAll(io.LimitReader(rd, r.cfg.MaxFileSize))
}

// rootTree returns the tree at the configured root in commit, or nil if the
// root does not exist there (an empty view, not an error).
func (r *Repo) rootTree(commit plumbing.Hash) (*object.Tree, error) {
	c, err := r.repo.CommitObject(commit)
	if err != nil {
		return nil, fmt.Errorf("gitsync: commit %s: %w", commit, err)
	}
	t, err := r.trees.get(c.TreeHash)
	if err != nil {
		return nil, err
	}
	if r.cfg.Path == "" {
		return t, nil
	}
	for _, part := range strings.Split(r.cfg.Path, "/") {
		e := findEntry(t, part)
		if e == nil {
			return nil, nil
		}
		if t, err = r.subtree(e); err != nil || t == nil {
			return nil, err
		}
	}
	return t, nil
}

// subtree loads e if it is a directory, else returns nil.
func (r *Repo) subtree(e *object.TreeEntry) (*object.Tree, error) {
	if e.Mode != filemode.Dir {
		return nil, nil
	}
	return r.trees.get(e.Hash)
}

// findEntry looks name up in t by exact match (no path interpretation).
func findEntry(t *object.Tree, name string) *object.TreeEntry {
	for i := range t.Entries {
		if t.Entries[i].Name == name {
			return &t.Entries[i]
		}
	}
	return nil
}
