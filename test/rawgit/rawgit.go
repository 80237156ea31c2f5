// Package rawgit writes Git objects exactly as given, for tests that need
// trees git itself never writes: duplicate or unsorted entries, thousands of
// entries pointing at one blob.
package rawgit

import (
	"fmt"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// Repo stores objects in a go-git repository.
type Repo struct {
	// Storer is where objects go.
	Storer storer.EncodedObjectStorer
}

// Init creates a bare repository in dir.
func Init(dir string) (*Repo, error) {
	repo, err := gogit.PlainInit(dir, true)
	if err != nil {
		return nil, err
	}
	return &Repo{Storer: repo.Storer}, nil
}

// File is a regular-file tree entry.
func File(name string, h plumbing.Hash) object.TreeEntry {
	return object.TreeEntry{Name: name, Mode: filemode.Regular, Hash: h}
}

// Dir is a directory tree entry.
func Dir(name string, h plumbing.Hash) object.TreeEntry {
	return object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: h}
}

// Blob stores data as a blob.
func (r *Repo) Blob(data []byte) (plumbing.Hash, error) {
	obj := r.Storer.NewEncodedObject()
	obj.SetType(plumbing.BlobObject)
	return r.write(obj, func(w interface{ Write([]byte) (int, error) }) error {
		_, err := w.Write(data)
		return err
	})
}

// Tree stores a tree with entries exactly in the given order (go-git's
// encoder refuses unsorted entries, so it is encoded here).
func (r *Repo) Tree(entries ...object.TreeEntry) (plumbing.Hash, error) {
	obj := r.Storer.NewEncodedObject()
	obj.SetType(plumbing.TreeObject)
	return r.write(obj, func(w interface{ Write([]byte) (int, error) }) error {
		for _, e := range entries {
			if _, err := fmt.Fprintf(w, "%o %s\x00", uint32(e.Mode), e.Name); err != nil {
				return err
			}
			if _, err := w.Write(e.Hash[:]); err != nil {
				return err
			}
		}
		return nil
	})
}

// Commit stores a commit of the tree root with parents.
func (r *Repo) Commit(root plumbing.Hash, parents ...plumbing.Hash) (plumbing.Hash, error) {
	sig := object.Signature{Name: "Mallory", Email: "mallory@example.com"}
	obj := r.Storer.NewEncodedObject()
	c := &object.Commit{Author: sig, Committer: sig, Message: "hostile", TreeHash: root, ParentHashes: parents}
	if err := c.Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	return r.Storer.SetEncodedObject(obj)
}

func (r *Repo) write(obj plumbing.EncodedObject, fill func(interface{ Write([]byte) (int, error) }) error) (plumbing.Hash, error) {
	w, err := obj.Writer()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if err := fill(w); err != nil {
		return plumbing.ZeroHash, err
	}
	if err := w.Close(); err != nil {
		return plumbing.ZeroHash, err
	}
	return r.Storer.SetEncodedObject(obj)
}

// TB is what Must needs of a test: *testing.T and GinkgoT() have it.
type TB interface {
	Helper()
	Fatal(args ...any)
	TempDir() string
	Cleanup(func())
}

// Must wraps a Repo for tests: every method fails T on error.
type Must struct {
	T    TB
	Repo *Repo
	// Dir is the repository's directory when New made it.
	Dir string
}

// New initialises a bare repository in a temporary directory of t.
func New(t TB) *Must {
	t.Helper()
	dir := t.TempDir()
	r, err := Init(dir)
	if err != nil {
		t.Fatal(err)
	}
	return &Must{T: t, Repo: r, Dir: dir}
}

func (m *Must) check(h plumbing.Hash, err error) plumbing.Hash {
	m.T.Helper()
	if err != nil {
		m.T.Fatal(err)
	}
	return h
}

// Blob is Repo.Blob.
func (m *Must) Blob(data []byte) plumbing.Hash { return m.check(m.Repo.Blob(data)) }

// Tree is Repo.Tree.
func (m *Must) Tree(entries ...object.TreeEntry) plumbing.Hash {
	return m.check(m.Repo.Tree(entries...))
}

// Commit is Repo.Commit.
func (m *Must) Commit(root plumbing.Hash, parents ...plumbing.Hash) plumbing.Hash {
	return m.check(m.Repo.Commit(root, parents...))
}
