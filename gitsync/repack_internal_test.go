package gitsync

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// runGit runs the git CLI in dir with a fixed identity and no user config,
// and returns its output, trimmed: the external tests' git.
func runGit(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=Mallory", "GIT_AUTHOR_EMAIL=mallory@example.com",
		"GIT_COMMITTER_NAME=Mallory", "GIT_COMMITTER_EMAIL=mallory@example.com", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// packedRepo returns the .git directory of a repository of n commits, each
// in a pack of its own.
func packedRepo(t testing.TB, n int) string {
	dir := t.TempDir()
	runGit(t, dir, "init", "-q")
	for i := range n {
		name := fmt.Sprintf("d%d/f.yaml", i)
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), fmt.Appendf(nil, "file %d", i), 0o644); err != nil {
			t.Fatal(err)
		}
		runGit(t, dir, "add", ".")
		runGit(t, dir, "commit", "-q", "-m", name)
		runGit(t, dir, "repack", "-q") // the new objects in a pack of their own
	}
	return filepath.Join(dir, ".git")
}

// failingFS fails the writes to its temporary files past budget bytes (none
// when negative), as a full disk would, and every rename when noRename.
type failingFS struct {
	billy.Filesystem
	budget   int
	noRename bool
}

func (fs *failingFS) Rename(from, to string) error {
	if fs.noRename {
		return errDiskFull
	}
	return fs.Filesystem.Rename(from, to)
}

func (fs *failingFS) TempFile(dir, prefix string) (billy.File, error) {
	f, err := fs.Filesystem.TempFile(dir, prefix)
	return &failingFile{File: f, fs: fs}, err
}

type failingFile struct {
	billy.File
	fs *failingFS
}

var errDiskFull = errors.New("disk full")

func (f *failingFile) Write(p []byte) (int, error) {
	if f.fs.budget >= 0 && len(p) > f.fs.budget {
		return 0, errDiskFull
	}
	f.fs.budget -= len(p)
	return f.File.Write(p)
}

// readAll reads every object the clone's refs reach through st and returns
// their hashes, sorted.
func readAll(t *testing.T, st *filesystem.Storage) []plumbing.Hash {
	t.Helper()
	objects, err := reachable(st)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range objects {
		if _, err := st.EncodedObject(plumbing.AnyObject, h); err != nil {
			t.Fatalf("object %s: %v", h, err)
		}
	}
	slices.SortFunc(objects, func(a, b plumbing.Hash) int { return bytes.Compare(a[:], b[:]) })
	return objects
}

// A repack that fails while writing its pack leaves the clone as it was:
// every pack, no temporary file, every object readable through the same
// storage and git's check passing; the next repack then makes one pack of
// the same objects, readable through the same storage, and a repack of that
// one pack keeps it.
func TestRepackFailureLeavesCloneReadable(t *testing.T) {
	dir := packedRepo(t, 5)
	fs := &failingFS{Filesystem: osfs.New(dir), budget: 100}
	st := filesystem.NewStorageWithOptions(fs, cache.NewObjectLRUDefault(), filesystem.Options{KeepDescriptors: true})
	t.Cleanup(func() { _ = st.Close() })
	packs := func() []plumbing.Hash {
		t.Helper()
		hs, err := st.ObjectPacks()
		if err != nil {
			t.Fatal(err)
		}
		return hs
	}
	old := packs()
	if len(old) != 5 {
		t.Fatalf("%d packs, want 5", len(old))
	}
	want := readAll(t, st) // opens every pack

	if err := repack(st, old); !errors.Is(err, errDiskFull) {
		t.Fatalf("repack on a full disk: %v, want %v", err, errDiskFull)
	}
	left, err := filepath.Glob(filepath.Join(dir, "objects", "pack", "tmp_*"))
	if err != nil {
		t.Fatal(err)
	}
	if got := packs(); len(left) != 0 || !slices.Equal(got, old) {
		t.Fatalf("after a failed repack: packs %v, temporary files %v; want %v and none", got, left, old)
	}
	if got := readAll(t, st); !slices.Equal(got, want) {
		t.Fatalf("after a failed repack the refs reach %d objects, want %d", len(got), len(want))
	}
	runGit(t, dir, "fsck", "--strict", "--no-dangling")

	fs.budget = -1
	if err := repack(st, old); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second repack writes the very pack it replaces
		one := packs()
		if len(one) != 1 {
			t.Fatalf("after a repack: %d packs, want 1", len(one))
		}
		if got := readAll(t, st); !slices.Equal(got, want) {
			t.Fatalf("after a repack the refs reach %d objects, want %d", len(got), len(want))
		}
		runGit(t, dir, "fsck", "--strict", "--no-dangling")
		if err := repack(st, one); err != nil {
			t.Fatal(err)
		}
	}
}

// newBlob holds in p a blob of content "blob i" and returns its hash.
func newBlob(p *pendingObjects, i int) plumbing.Hash {
	o := &plumbing.MemoryObject{}
	o.SetType(plumbing.BlobObject)
	_, _ = o.Write(fmt.Appendf(nil, "blob %d", i))
	h, _ := p.SetEncodedObject(o)
	return h
}

// packedStorage returns a clone's storage holding a pack of base blobs, as
// a first fetch leaves it, then extra packs of one blob each, as writes and
// fetches add them; each pack is read once, as rounds do. It returns the
// storage and a blob of the base pack.
func packedStorage(b *testing.B, base, extra int) (*filesystem.Storage, plumbing.Hash) {
	st := filesystem.NewStorageWithOptions(osfs.New(b.TempDir()), cache.NewObjectLRU(objectCacheSize),
		filesystem.Options{KeepDescriptors: true})
	b.Cleanup(func() { _ = st.Close() })
	if err := st.Init(); err != nil {
		b.Fatal(err)
	}
	p := newPendingObjects(st)
	var first plumbing.Hash
	for i := range base {
		first = newBlob(p, i)
	}
	if err := p.keep(st); err != nil {
		b.Fatal(err)
	}
	read := []plumbing.Hash{first}
	for i := range extra {
		read = append(read, newBlob(p, base+i))
		if err := p.keep(st); err != nil {
			b.Fatal(err)
		}
	}
	for _, h := range read {
		if _, err := st.EncodedObject(plumbing.AnyObject, h); err != nil {
			b.Fatal(err)
		}
	}
	return st, first
}

// BenchmarkPackCount is what a small write costs the clone, by the number of
// packs it holds: storing the write's pack of one blob (keep), then reading
// an object of the base pack and looking up one the clone lacks (as a write
// does for each object it creates), which searches every pack's index.
// live-MiB is the heap in use after a collection at the end. The base pack's
// 40,000 objects are about those of the 10,000-peering repository. Each
// iteration adds a pack: run it with a fixed -benchtime such as 20x.
func BenchmarkPackCount(b *testing.B) {
	for _, packs := range []int{1, maxPacks, 10 * maxPacks} {
		b.Run(fmt.Sprintf("packs=%d", packs), func(b *testing.B) {
			before := liveHeap()
			st, first := packedStorage(b, 40000, packs-1)
			absent := plumbing.ComputeHash(plumbing.BlobObject, []byte("absent"))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				p := newPendingObjects(st)
				newBlob(p, -1-i)
				if err := p.keep(st); err != nil {
					b.Fatal(err)
				}
				if _, err := st.EncodedObject(plumbing.AnyObject, first); err != nil {
					b.Fatal(err)
				}
				if err := st.HasEncodedObject(absent); !errors.Is(err, plumbing.ErrObjectNotFound) {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(liveHeap()-before)/(1<<20), "live-MiB")
			runtime.KeepAlive(st)
		})
	}
}

// liveHeap returns the bytes of live heap objects after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// A write's pack that cannot be stored leaves the clone as it was: its
// objects are not found, the clone's are read.
func TestKeepFailureLeavesCloneReadable(t *testing.T) {
	dir := packedRepo(t, 1)
	fs := &failingFS{Filesystem: osfs.New(dir), budget: -1, noRename: true}
	st := filesystem.NewStorageWithOptions(fs, cache.NewObjectLRUDefault(), filesystem.Options{KeepDescriptors: true})
	t.Cleanup(func() { _ = st.Close() })
	want := readAll(t, st)
	p := newPendingObjects(st)
	blob := newBlob(p, 0)
	if err := p.keep(st); !errors.Is(err, errDiskFull) {
		t.Fatalf("keep with no rename: %v, want %v", err, errDiskFull)
	}
	if err := st.HasEncodedObject(blob); !errors.Is(err, plumbing.ErrObjectNotFound) {
		t.Fatalf("the blob of a pack not stored: %v, want %v", err, plumbing.ErrObjectNotFound)
	}
	if got := readAll(t, st); !slices.Equal(got, want) {
		t.Fatalf("after a failed keep the refs reach %d objects, want %d", len(got), len(want))
	}
	fs.noRename = false
	if err := p.keep(st); err != nil {
		t.Fatal(err)
	}
	if _, err := st.EncodedObject(plumbing.BlobObject, blob); err != nil {
		t.Fatal(err)
	}
}

// A repack keeps what the refs reach and drops the rest: a blob stored by
// a write whose commit no ref holds is gone after it.
func TestRepackDropsUnreachable(t *testing.T) {
	dir := packedRepo(t, 2)
	st := filesystem.NewStorageWithOptions(osfs.New(dir), cache.NewObjectLRUDefault(), filesystem.Options{KeepDescriptors: true})
	t.Cleanup(func() { _ = st.Close() })
	want := readAll(t, st)
	p := newPendingObjects(st)
	stray := newBlob(p, 0)
	if err := p.keep(st); err != nil {
		t.Fatal(err)
	}
	packs, err := st.ObjectPacks()
	if err != nil || len(packs) != 3 {
		t.Fatalf("packs %v, %v; want 3", packs, err)
	}
	if err := repack(st, packs); err != nil {
		t.Fatal(err)
	}
	if err := st.HasEncodedObject(stray); !errors.Is(err, plumbing.ErrObjectNotFound) {
		t.Fatalf("unreachable blob after a repack: %v, want %v", err, plumbing.ErrObjectNotFound)
	}
	if got := readAll(t, st); !slices.Equal(got, want) {
		t.Fatalf("after a repack the refs reach %d objects, want %d", len(got), len(want))
	}
	runGit(t, dir, "fsck", "--strict", "--no-dangling")
}

// A repack that fails past maxPacks fails nothing else: consolidate keeps
// the packs and leaves the error for RepackFailure, which returns it once.
func TestConsolidateFailureIsReportedOnce(t *testing.T) {
	dir := packedRepo(t, maxPacks+1)
	st := filesystem.NewStorageWithOptions(&failingFS{Filesystem: osfs.New(dir), budget: 100}, cache.NewObjectLRUDefault(), filesystem.Options{})
	t.Cleanup(func() { _ = st.Close() })
	r := &Repo{storage: st}
	r.consolidate()
	if err := r.RepackFailure(); !errors.Is(err, errDiskFull) {
		t.Fatalf("RepackFailure after a failed repack: %v, want %v", err, errDiskFull)
	}
	if err := r.RepackFailure(); err != nil {
		t.Fatalf("RepackFailure again: %v, want nil", err)
	}
	if packs, err := st.ObjectPacks(); err != nil || len(packs) != maxPacks+1 {
		t.Fatalf("after a failed repack: %d packs (%v), want %d", len(packs), err, maxPacks+1)
	}
}
