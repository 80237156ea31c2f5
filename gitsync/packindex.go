package gitsync

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// Indexing the pack of a branch's first fetch.
//
// Written by hand: go-git's filesystem storage indexes a fetched pack with
// packfile.Parser, which inflates every object once to hash it, then again
// (a delta twice more) to resolve deltas, reading each back from the file:
// 84 % of gitsync's CPU in the initial clone of 10,000 peering directories,
// which took 1.8 times `git clone`. No setting of go-git changes that, and
// the one other Go library found that indexes packs (gg-scm.io/pkg/git's
// BuildIndex, two passes like `git index-pack`) is not served by the Go
// module proxy. What is here is only the order of the work; the pack format,
// delta patching, the bounded cache and the .idx format are go-git's
// (packfile.Scanner, packfile.PatchDelta, cache.BufferLRU, idxfile's
// MemoryIndex and encoder). Each
// object is inflated once, as the pack arrives: a whole object is hashed, a
// delta is patched onto its base's content at once and hashed. Contents stay
// in a bounded cache for the deltas that follow; a base that left it is read
// back from the pack file (as go-git's reader does), and a ref-delta whose
// base comes later in the pack waits for the end of the pack.

// indexCacheSize bounds the contents of the objects the indexer keeps as
// possible delta bases; an object larger than that is hashed as it streams.
// A pack lists a delta soon after its base, so a small cache finds nearly
// every base: indexing the 10,000-peering repository's pack took the same CPU
// with 512 KiB as with 8 MiB, and the clone's peak RSS fell from 47 to 31 MiB
// at 1 MiB (gitsync/BENCHMARKS.md).
const indexCacheSize = 1 << 20

// maxDeltaDepth is Git's bound on the length of a delta chain (pack-objects'
// --depth); a longer chain is refused rather than followed.
const maxDeltaDepth = 4095

// indexingStorage is the clone's storage with packIndexer as its pack writer.
type indexingStorage struct{ *filesystem.Storage }

// PackfileWriter returns a packIndexer storing a fetched pack in the clone.
func (s indexingStorage) PackfileWriter() (io.WriteCloser, error) {
	return newPackIndexer(s.Storage)
}

// packIndexer receives a pack (Write), indexes it as it arrives, and on
// Close stores it and its .idx in objects/pack, or removes it if the pack is
// incomplete or corrupt.
type packIndexer struct {
	st   *filesystem.Storage
	file billy.File // the pack as it arrives, under a temporary name
	pw   *io.PipeWriter
	done chan error

	// Owned by the indexing goroutine until done.
	entries    []packEntry
	byHash     map[plumbing.Hash]int // resolved entries; built on first use
	waiting    []waitingDelta
	bases      *cache.BufferLRU // contents by offset
	rereadFile billy.File
	reread     *packfile.Scanner
	checksum   plumbing.Hash
}

// packEntry is one object of the pack, in pack order.
type packEntry struct {
	offset int64
	hash   plumbing.Hash // zero until resolved
	crc    uint32
	typ    plumbing.ObjectType // the object's type once resolved
	depth  uint16              // delta chain length
	base   int                 // a delta's base entry, or -1
}

func (e *packEntry) resolved() bool { return !e.hash.IsZero() }

// waitingDelta is a delta whose base was not resolved when it arrived.
type waitingDelta struct {
	entry    int
	base     int           // an ofs-delta's base entry; -1 for a ref-delta
	baseHash plumbing.Hash // a ref-delta's base
}

func newPackIndexer(st *filesystem.Storage) (*packIndexer, error) {
	fs := st.Filesystem()
	file, err := fs.TempFile(fs.Join("objects", "pack"), "tmp_pack_")
	if err != nil {
		return nil, err
	}
	pr, pw := io.Pipe()
	w := &packIndexer{st: st, file: file, pw: pw, done: make(chan error, 1),
		bases: cache.NewBufferLRU(cache.FileSize(indexCacheSize))}
	go func() {
		err := w.index(pr)
		if err == nil { // bytes after the checksum stay in the file, as go-git's writer leaves them
			_, err = io.Copy(io.Discard, pr)
		}
		if err != nil {
			err = fmt.Errorf("index fetched pack: %w", err)
		}
		pr.CloseWithError(err) // fails the fetch's Write at once
		w.done <- err
	}()
	return w, nil
}

// Write stores p in the pack file, then hands it to the indexer: what the
// indexer reads back is always in the file.
func (w *packIndexer) Write(p []byte) (int, error) {
	if n, err := w.file.Write(p); err != nil {
		return n, err
	}
	return w.pw.Write(p)
}

// Close waits for the indexer, then stores the pack and its index under
// their final names; on any error it removes the pack file. An empty pack
// (nothing to fetch) stores nothing and is no error.
func (w *packIndexer) Close() error {
	w.pw.Close()
	err := <-w.done
	if w.rereadFile != nil {
		err = errors.Join(err, w.rereadFile.Close())
	}
	if err = errors.Join(err, w.file.Close()); err == nil {
		if err = w.save(); err != nil {
			err = fmt.Errorf("store fetched pack: %w", err)
		}
	}
	if err != nil {
		_ = w.st.Filesystem().Remove(w.file.Name())
		if errors.Is(err, packfile.ErrEmptyPackfile) {
			return nil
		}
	}
	return err
}

// index reads the pack from r and resolves every object in it.
func (w *packIndexer) index(r io.Reader) error {
	s := packfile.NewScanner(r)
	_, count, err := s.Header()
	if err != nil {
		return err
	}
	// The count is the sender's word: it sizes the slices only up to a bound.
	w.entries = make([]packEntry, 0, min(count, 1<<16))
	for range count {
		if err := w.next(s); err != nil {
			return err
		}
	}
	if w.checksum, err = s.Checksum(); err != nil {
		return err
	}
	if err := w.resolveWaiting(); err != nil {
		return err
	}
	return nil
}

// next reads the next object of the pack and resolves it if it can.
func (w *packIndexer) next(s *packfile.Scanner) error {
	h, err := s.NextObjectHeader()
	if err != nil {
		return err
	}
	i := len(w.entries)
	w.entries = append(w.entries, packEntry{offset: h.Offset, typ: h.Type, base: -1})
	e := &w.entries[i]
	switch h.Type {
	case plumbing.CommitObject, plumbing.TreeObject, plumbing.BlobObject, plumbing.TagObject:
		if h.Length > indexCacheSize { // too large to keep: hash it as it streams
			hasher := plumbing.NewHasher(h.Type, h.Length)
			if e.crc, err = inflate(s, hasher, h.Length); err != nil {
				return err
			}
			e.hash = hasher.Sum()
			w.resolved(i, nil)
			return nil
		}
		var data []byte
		if data, e.crc, err = inflateAll(s, h.Length); err != nil {
			return err
		}
		e.hash = plumbing.ComputeHash(h.Type, data)
		w.resolved(i, data)
		return nil
	case plumbing.OFSDeltaObject, plumbing.REFDeltaObject:
		delta, crc, err := inflateAll(s, h.Length)
		if err != nil {
			return err
		}
		e.crc = crc
		var base int // an ofs-delta's base entry; a ref-delta's if resolved, else -1
		if h.Type == plumbing.OFSDeltaObject {
			if base = w.entryAt(h.OffsetReference); base < 0 {
				return fmt.Errorf("%w: delta base at offset %d is no object", packfile.ErrMalformedPackFile, h.OffsetReference)
			}
		} else {
			base = w.entryByHash(h.Reference)
		}
		if base >= 0 && w.entries[base].resolved() {
			return w.patch(i, base, delta)
		}
		w.waiting = append(w.waiting, waitingDelta{entry: i, base: base, baseHash: h.Reference})
		return nil
	}
	return fmt.Errorf("%w: object of type %d at offset %d", packfile.ErrMalformedPackFile, h.Type, h.Offset)
}

// patch resolves the delta entry i, of content delta, against the resolved
// entry base.
func (w *packIndexer) patch(i, base int, delta []byte) error {
	b, e := w.entries[base], &w.entries[i]
	if b.depth >= maxDeltaDepth {
		return fmt.Errorf("%w: delta chain longer than %d at offset %d", packfile.ErrMalformedPackFile, maxDeltaDepth, e.offset)
	}
	src, err := w.content(base)
	if err != nil {
		return err
	}
	data, err := packfile.PatchDelta(src, delta)
	if err != nil {
		return fmt.Errorf("delta at offset %d: %w", e.offset, err)
	}
	e.typ, e.depth, e.base = b.typ, b.depth+1, base
	e.hash = plumbing.ComputeHash(e.typ, data)
	w.resolved(i, data)
	return nil
}

// resolved records the resolved entry i, of content data (nil when too
// large to keep).
func (w *packIndexer) resolved(i int, data []byte) {
	e := &w.entries[i]
	if w.byHash != nil {
		w.byHash[e.hash] = i
	}
	if data != nil {
		w.bases.Put(e.offset, data)
	}
}

// content returns the content of the resolved entry i, from the cache or
// read back from the pack file.
func (w *packIndexer) content(i int) ([]byte, error) {
	e := w.entries[i]
	if data, ok := w.bases.Get(e.offset); ok {
		return data, nil
	}
	data, err := w.readBack(e.offset)
	if err == nil && e.base >= 0 {
		var src []byte
		if src, err = w.content(e.base); err == nil {
			data, err = packfile.PatchDelta(src, data)
		}
	}
	if err != nil {
		return nil, err
	}
	w.bases.Put(e.offset, data)
	return data, nil
}

// readBack inflates the object at offset from the pack file (for a delta,
// the delta).
func (w *packIndexer) readBack(offset int64) ([]byte, error) {
	if w.reread == nil {
		f, err := w.st.Filesystem().Open(w.file.Name())
		if err != nil {
			return nil, err
		}
		w.rereadFile, w.reread = f, packfile.NewScanner(f)
	}
	h, err := w.reread.SeekObjectHeader(offset)
	if err != nil {
		return nil, err
	}
	data, _, err := inflateAll(w.reread, h.Length)
	return data, err
}

// resolveWaiting resolves the deltas that arrived before their base (a
// ref-delta, and deltas on top of it), each once its base is resolved, and
// fails if any base is not in the pack.
func (w *packIndexer) resolveWaiting() error {
	onEntry := make(map[int][]int)
	onHash := make(map[plumbing.Hash][]int)
	var ready [][2]int // delta, base
	for _, d := range w.waiting {
		base := d.base
		if base < 0 {
			base = w.entryByHash(d.baseHash)
		}
		switch {
		case base >= 0 && w.entries[base].resolved():
			ready = append(ready, [2]int{d.entry, base})
		case d.base >= 0:
			onEntry[d.base] = append(onEntry[d.base], d.entry)
		default:
			onHash[d.baseHash] = append(onHash[d.baseHash], d.entry)
		}
	}
	for len(ready) > 0 {
		d, base := ready[len(ready)-1][0], ready[len(ready)-1][1]
		ready = ready[:len(ready)-1]
		delta, err := w.readBack(w.entries[d].offset)
		if err == nil {
			err = w.patch(d, base, delta)
		}
		if err != nil {
			return err
		}
		for _, c := range onEntry[d] {
			ready = append(ready, [2]int{c, d})
		}
		for _, c := range onHash[w.entries[d].hash] {
			ready = append(ready, [2]int{c, d})
		}
		delete(onEntry, d)
		delete(onHash, w.entries[d].hash)
	}
	for _, d := range w.waiting {
		if !w.entries[d.entry].resolved() {
			return fmt.Errorf("%w: the base of the delta at offset %d is not in the pack",
				packfile.ErrMalformedPackFile, w.entries[d.entry].offset)
		}
	}
	return nil
}

// entryAt returns the entry at offset, or -1.
func (w *packIndexer) entryAt(offset int64) int {
	i := sort.Search(len(w.entries), func(i int) bool { return w.entries[i].offset >= offset })
	if i < len(w.entries) && w.entries[i].offset == offset {
		return i
	}
	return -1
}

// entryByHash returns the resolved entry of hash h, or -1. Its map is built
// on first use: a pack fetched with ofs-deltas has few ref-deltas, if any.
func (w *packIndexer) entryByHash(h plumbing.Hash) int {
	if w.byHash == nil {
		w.byHash = make(map[plumbing.Hash]int, len(w.entries))
		for i, e := range w.entries {
			if e.resolved() {
				w.byHash[e.hash] = i
			}
		}
	}
	if i, ok := w.byHash[h]; ok {
		return i
	}
	return -1
}

// inflate inflates the next object of s into dst and returns its CRC-32 in
// the pack; the object must inflate to length bytes.
func inflate(s *packfile.Scanner, dst io.Writer, length int64) (uint32, error) {
	n, crc, err := s.NextObject(dst)
	if err == nil && n != length {
		err = fmt.Errorf("%w: object of %d bytes inflates to %d", packfile.ErrMalformedPackFile, length, n)
	}
	return crc, err
}

// inflateAll inflates the next object of s, of length bytes, into memory.
func inflateAll(s *packfile.Scanner, length int64) ([]byte, uint32, error) {
	var buf bytes.Buffer
	buf.Grow(int(min(length, indexCacheSize)))
	crc, err := inflate(s, &buf, length)
	return buf.Bytes(), crc, err
}

// memoryIndex returns the pack's index, built from its entries as go-git's
// idxfile.Writer builds it (sorted by hash; an offset beyond 31 bits in the
// 64-bit table). Built here because the Writer keeps its own copy of every
// entry and a map of their hashes, which made it the largest part of the
// clone's heap. An object the pack holds twice is listed once, at its first
// offset.
func (w *packIndexer) memoryIndex() *idxfile.MemoryIndex {
	order := make([]int32, 0, len(w.entries))
	for i := range w.entries {
		order = append(order, int32(i))
	}
	slices.SortFunc(order, func(a, b int32) int {
		ea, eb := &w.entries[a], &w.entries[b]
		if c := bytes.Compare(ea.hash[:], eb.hash[:]); c != 0 {
			return c
		}
		return cmp.Compare(ea.offset, eb.offset)
	})
	order = slices.CompactFunc(order, func(a, b int32) bool { return w.entries[a].hash == w.entries[b].hash })
	idx := &idxfile.MemoryIndex{Version: idxfile.VersionSupported, PackfileChecksum: w.checksum}
	for i := range idx.FanoutMapping {
		idx.FanoutMapping[i] = -1 // no object starts with this byte
	}
	var word [8]byte
	for n, i := range order {
		e := &w.entries[i]
		fan := int(e.hash[0])
		if idx.FanoutMapping[fan] < 0 {
			idx.FanoutMapping[fan] = len(idx.Names)
			idx.Names, idx.Offset32, idx.CRC32 = append(idx.Names, nil), append(idx.Offset32, nil), append(idx.CRC32, nil)
		}
		idx.Fanout[fan] = uint32(n + 1)
		b := idx.FanoutMapping[fan]
		idx.Names[b] = append(idx.Names[b], e.hash[:]...)
		offset := uint64(e.offset)
		if offset > math.MaxInt32 {
			binary.BigEndian.PutUint64(word[:], offset)
			idx.Offset64 = append(idx.Offset64, word[:]...)
			offset = uint64(len(idx.Offset64)/8-1) | 1<<31
		}
		idx.Offset32[b] = binary.BigEndian.AppendUint32(idx.Offset32[b], uint32(offset))
		idx.CRC32[b] = binary.BigEndian.AppendUint32(idx.CRC32[b], e.crc)
	}
	// A fanout entry counts the objects whose first byte is at most its own.
	for fan := 1; fan < len(idx.Fanout); fan++ {
		idx.Fanout[fan] = max(idx.Fanout[fan], idx.Fanout[fan-1])
	}
	return idx
}

// save writes the index and gives it and the pack their final names, the
// index first (a pack is only read with its index), then makes the storage
// read the new index.
func (w *packIndexer) save() (err error) {
	fs := w.st.Filesystem()
	idx := w.memoryIndex()
	tmp, err := fs.TempFile(fs.Join("objects", "pack"), "tmp_idx_")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = fs.Remove(tmp.Name())
		}
	}()
	out := bufio.NewWriter(tmp)
	_, err = idxfile.NewEncoder(out).Encode(idx)
	if err == nil {
		err = out.Flush()
	}
	if err = errors.Join(err, tmp.Close()); err != nil {
		return err
	}
	name := fs.Join("objects", "pack", "pack-"+w.checksum.String())
	if err := fs.Rename(tmp.Name(), name+".idx"); err != nil {
		return err
	}
	if err := fs.Rename(w.file.Name(), name+".pack"); err != nil {
		return err
	}
	if ch, ok := fs.(billy.Chmod); ok { // read-only, as Git leaves packs
		_ = ch.Chmod(name+".idx", 0o444)
		_ = ch.Chmod(name+".pack", 0o444)
	}
	w.st.Reindex()
	return nil
}
