package gitsync

import (
	"errors"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// pendingObjects is the clone's storage as one write sees it: the blobs,
// trees and commits the write creates are held in memory, over the clone's
// objects, until its push succeeds; keep then stores them in the clone as one
// pack. Written loose, each would cost a file created through a temporary
// one, read back by the push and by the rounds that read it next: about a
// fifth of the agent's CPU while it issued 1,000 identities
// (docs/benchmarks.md). A write holds at most its own files and the trees
// leading to them, which the round's limit bounds.
type pendingObjects struct {
	storer.EncodedObjectStorer // the clone's objects
	objects                    map[plumbing.Hash]plumbing.EncodedObject
	order                      []plumbing.Hash // as created: a pack lists them so
}

func newPendingObjects(clone storer.EncodedObjectStorer) *pendingObjects {
	return &pendingObjects{EncodedObjectStorer: clone, objects: map[plumbing.Hash]plumbing.EncodedObject{}}
}

// NewEncodedObject returns an object in memory.
func (p *pendingObjects) NewEncodedObject() plumbing.EncodedObject {
	return &plumbing.MemoryObject{}
}

// SetEncodedObject holds o in memory, once.
func (p *pendingObjects) SetEncodedObject(o plumbing.EncodedObject) (plumbing.Hash, error) {
	h := o.Hash()
	if _, ok := p.objects[h]; !ok {
		p.objects[h] = o
		p.order = append(p.order, h)
	}
	return h, nil
}

// EncodedObject returns the object h of type t (or any type) created by the
// write, else the clone's.
func (p *pendingObjects) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	if o, ok := p.objects[h]; ok {
		if t != plumbing.AnyObject && o.Type() != t {
			return nil, plumbing.ErrObjectNotFound
		}
		return o, nil
	}
	return p.EncodedObjectStorer.EncodedObject(t, h)
}

// HasEncodedObject reports whether the write created h or the clone holds it.
func (p *pendingObjects) HasEncodedObject(h plumbing.Hash) error {
	if _, ok := p.objects[h]; ok {
		return nil
	}
	return p.EncodedObjectStorer.HasEncodedObject(h)
}

// EncodedObjectSize is the size of h, created by the write or in the clone.
func (p *pendingObjects) EncodedObjectSize(h plumbing.Hash) (int64, error) {
	if o, ok := p.objects[h]; ok {
		return o.Size(), nil
	}
	return p.EncodedObjectStorer.EncodedObjectSize(h)
}

// keep stores the objects the write created in the clone st, as one pack,
// and forgets them. The pack goes through go-git's own pack writer, which
// adds the new pack's index to the storage alone, where packIndexer's save
// makes the storage read every pack's index again (Reindex), a cost that
// grows with the clone (gitsync/BENCHMARKS.md).
// A write's pack holds whole objects only, which go-git's parser indexes in
// one pass.
func (p *pendingObjects) keep(st *filesystem.Storage) (err error) {
	if len(p.order) == 0 {
		return nil
	}
	w, err := st.PackfileWriter()
	if err != nil {
		return err
	}
	err = writePack(w, p, p.order)
	if err = errors.Join(err, w.Close()); err != nil {
		// go-git's writer adds the pack's index even when the pack could
		// not be stored: the storage reads the indexes of the packs there.
		st.Reindex()
		return err
	}
	p.objects, p.order = map[plumbing.Hash]plumbing.EncodedObject{}, nil
	return nil
}
