package gitsync

import (
	"errors"
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

// Dir is a directory below the root that a listing reached.
type Dir struct {
	// Path is relative to the configured root.
	Path string
	// Hash is the tree's object id.
	Hash plumbing.Hash
	// Known: the reader knew this tree (ListUnknown), so it was not read and
	// nothing under it is listed.
	Known bool
}

// Listing is every visible file under the root at a commit.
type Listing struct {
	Commit plumbing.Hash
	Files  []File
	// Skipped lists entries that are not visible: symlinks, submodules,
	// executables and unsafe names.
	Skipped []*FileError
	// Dirs lists the directories read, and the known ones, in tree order.
	Dirs []Dir
}

// List returns every regular file under the root at commit, for a full
// resync. Trees are refused as Limits and loadTree say: a refused directory
// below the root, and every directory beyond Limits.MaxDirectories, is listed
// in Skipped (so it never reads as absent) and not descended into; a refused
// root is an error.
func (r *Repo) List(commit plumbing.Hash) (*Listing, error) {
	return r.ListWithin(commit, nil)
}

// ListWithin is List restricted to the directories within accepts (nil: all).
// within receives the path of each directory below the root, relative to it,
// before it is loaded; a directory it refuses is neither loaded nor counted
// against Limits, and neither it nor anything under it is listed, so what
// lies outside the reader's scope cannot push the directories within it over
// a cap.
func (r *Repo) ListWithin(commit plumbing.Hash, within func(dir string) bool) (*Listing, error) {
	return r.ListUnknown(commit, within, nil)
}

// ListUnknown is ListWithin that skips the directories the reader already
// knows: a directory within accepts whose tree known reports (by its path and
// hash) is neither loaded nor counted against Limits, and nothing under it is
// listed; it is in Listing.Dirs, marked Known. A reader that keeps what it
// decoded from each directory by tree hash reads only what changed.
func (r *Repo) ListUnknown(commit plumbing.Hash, within func(dir string) bool, known func(dir string, tree plumbing.Hash) bool) (*Listing, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	root, err := r.rootTree(commit)
	if err != nil {
		return nil, err
	}
	return r.list(commit, func(d *treeDiff) error {
		d.within, d.known = within, known
		return d.diff("", nil, root)
	})
}

// ListDir lists, as ListUnknown would, only the directory dir (relative to
// the root, listed by ListUnknown at commit) whose tree is tree: a reader
// that knew the directory (Dir.Known) reads it again alone, without listing
// its parents. It is listed first in Listing.Dirs; refused, it is in
// Listing.Skipped. It counts against Limits on its own.
func (r *Repo) ListDir(commit plumbing.Hash, dir string, tree plumbing.Hash) (*Listing, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.list(commit, func(d *treeDiff) error {
		t, err := d.load(dir, tree)
		var refusedDir *FileError
		if errors.As(err, &refusedDir) {
			d.skipped = append(d.skipped, refusedDir)
			return nil
		}
		if err != nil {
			return err
		}
		d.listed = append(d.listed, Dir{Path: dir, Hash: tree})
		return d.diff(dir, nil, t)
	})
}

// list returns the listing of commit that walk makes with a treeDiff.
func (r *Repo) list(commit plumbing.Hash, walk func(d *treeDiff) error) (*Listing, error) {
	l := &Listing{Commit: commit}
	d := r.newDiff(func(p string, _, to plumbing.Hash) {
		l.Files = append(l.Files, File{Path: p, Hash: to})
	})
	if err := walk(d); err != nil {
		return nil, err
	}
	l.Skipped, l.Dirs = d.skipped, d.listed
	return l, nil
}

// ReadFile returns the content of the regular file at path (relative to the
// root) in commit. The blob's size is checked against MaxFileSize before it is
// read; symlinks, submodules, executables and unsafe paths are refused with a
// *FileError.
func (r *Repo) ReadFile(commit plumbing.Hash, path string) ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, err := r.lookup(commit, path)
	if err != nil {
		return nil, err
	}
	if _, err := r.blobSize(path, e.Hash); err != nil {
		return nil, err
	}
	return r.readBlob(e.Hash)
}

// Round reads the files of one commit's listing for one round of reading (one
// reconciliation, one `gitpeer verify`): the blobs it reads may not sum to
// more than Limits.MaxRoundBytes, checked from their headers before reading.
// Files are read by the hash their listing gives, without looking their path
// up again.
type Round struct {
	repo   *Repo
	commit plumbing.Hash
	read   int64
}

// NewRound starts a round of reading commit.
func (r *Repo) NewRound(commit plumbing.Hash) *Round {
	return &Round{repo: r, commit: commit}
}

// Size returns the size of file f of the round's listing from its object
// header, without reading it, refusing it over MaxFileSize.
func (rd *Round) Size(f File) (int64, error) {
	r := rd.repo
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.blobSize(f.Path, f.Hash)
}

// ReadFile reads file f of the round's listing within the round's budget: a
// file over MaxFileSize, or that would take the round past
// Limits.MaxRoundBytes (ErrRoundLimitExceeded), is refused before it is read.
func (rd *Round) ReadFile(f File) ([]byte, error) {
	r := rd.repo
	r.mu.Lock()
	defer r.mu.Unlock()
	size, err := r.blobSize(f.Path, f.Hash)
	if err != nil {
		return nil, err
	}
	if err := rd.charge(f.Path, size); err != nil {
		return nil, err
	}
	return r.readBlob(f.Hash)
}

// Charge counts against the round's budget n bytes of files read in an
// earlier round that the reader holds or may read again in this one, so
// that the budget bounds what the round holds, not only what it reads now.
func (rd *Round) Charge(n int64) {
	rd.read += n
}

// charge counts size bytes of the file at path against the budget, refusing
// them over Limits.MaxRoundBytes.
func (rd *Round) charge(path string, size int64) error {
	if limit := rd.repo.cfg.Limits.MaxRoundBytes; limit > 0 && rd.read+size > limit {
		return &FileError{Path: path, Reason: ErrRoundLimitExceeded,
			Detail: fmt.Sprintf("this round already read %d bytes, limit %d", rd.read, limit)}
	}
	rd.read += size
	return nil
}

// lookup finds the regular-file entry at path (relative to the root) in commit.
func (r *Repo) lookup(commit plumbing.Hash, path string) (*object.TreeEntry, error) {
	parts, err := cleanRel(path)
	if err != nil {
		return nil, err
	}
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
			if t, err = r.subtree(entry, strings.Join(parts[:i+1], "/")); err != nil {
				return nil, err
			}
		}
	}
	if !isRegular(entry.Mode) {
		return nil, &FileError{Path: path, Reason: ErrNotRegularFile, Detail: EntryKind(entry.Mode)}
	}
	return entry, nil
}

// blobSize returns the size of blob h from its header, refusing it when it is
// over MaxFileSize.
func (r *Repo) blobSize(path string, h plumbing.Hash) (int64, error) {
	size, err := r.storage.EncodedObjectSize(h)
	if err != nil {
		return 0, fmt.Errorf("gitsync: size of %s: %w", path, err)
	}
	if size > r.cfg.MaxFileSize {
		return 0, &FileError{Path: path, Reason: ErrFileTooLarge,
			Detail: fmt.Sprintf("%d bytes, limit %d", size, r.cfg.MaxFileSize)}
	}
	return size, nil
}

// readBlob reads a blob whose size was checked, never more than MaxFileSize.
func (r *Repo) readBlob(h plumbing.Hash) ([]byte, error) {
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
	tree, err := r.treeOf(commit)
	if err != nil {
		return nil, err
	}
	t, err := r.trees.get(tree, "/", 0)
	if err != nil {
		return nil, err
	}
	if r.cfg.Path == "" {
		return t, nil
	}
	parts := strings.Split(r.cfg.Path, "/")
	for i, part := range parts {
		e := findEntry(t, part)
		if e == nil {
			return nil, nil
		}
		if e.Mode != filemode.Dir {
			return nil, nil
		}
		if t, err = r.trees.get(e.Hash, strings.Join(parts[:i+1], "/"), 0); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// treeOf returns the tree of commit, remembering the last commit asked: a
// round reads many files of one commit, and decoding a commit reads all of
// its message (a round's commit lists every peering it wrote).
func (r *Repo) treeOf(commit plumbing.Hash) (plumbing.Hash, error) {
	if commit == r.last.commit && !commit.IsZero() {
		return r.last.tree, nil
	}
	c, err := r.repo.CommitObject(commit)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("gitsync: commit %s: %w", commit, err)
	}
	r.last = commitTree{commit: commit, tree: c.TreeHash}
	return c.TreeHash, nil
}

// subtree loads e if it is a directory, else returns nil; path, relative to
// the root, names it in errors and sets its level.
func (r *Repo) subtree(e *object.TreeEntry, path string) (*object.Tree, error) {
	if e.Mode != filemode.Dir {
		return nil, nil
	}
	return r.trees.get(e.Hash, path, levelOf(path))
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
