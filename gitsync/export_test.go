package gitsync

import (
	"io"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// IndexPack stores the pack read from r in the bare repository at dir as a
// clone's first fetch does: through the storage's pack writer.
func IndexPack(dir string, r io.Reader) error {
	st := filesystem.NewStorage(osfs.New(dir), cache.NewObjectLRUDefault())
	return packfile.UpdateObjectStorage(indexingStorage{st}, r)
}

// MaxPacks is the number of packs past which the clone is repacked.
const MaxPacks = maxPacks

// Repack repacks the clone into one pack, as a write or fetch does past
// MaxPacks.
func (r *Repo) Repack() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	packs, err := r.storage.ObjectPacks()
	if err != nil {
		return err
	}
	return repack(r.storage, packs)
}

// RunGit runs the git CLI in dir as Mallory and returns its output, trimmed.
var RunGit = runGit

// LiveHeap returns the bytes of live heap objects after a full collection.
var LiveHeap = liveHeap
