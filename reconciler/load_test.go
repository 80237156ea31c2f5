package reconciler_test

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/examples/repofixture"
	"github.com/gitpeer/gitpeer/gitsync"
	"github.com/gitpeer/gitpeer/reconciler"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/test/rawgit"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// hostileRepo builds one commit with rawgit.
type hostileRepo struct{ *rawgit.Must }

func newHostileRepo(t *testing.T) *hostileRepo { return &hostileRepo{rawgit.New(t)} }

// providerTree returns the tree of provider-a holding the given consumer directories.
func (r *hostileRepo) providerTree(consumers map[string]plumbing.Hash) plumbing.Hash {
	var entries []object.TreeEntry
	for _, c := range slices.Sorted(mapsKeys(consumers)) {
		entries = append(entries, rawgit.Dir(c, consumers[c]))
	}
	return r.Tree(entries...)
}

func mapsKeys(m map[string]plumbing.Hash) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// benign returns the tree of a valid issued peering directory.
func (r *hostileRepo) benign() plumbing.Hash {
	return r.peering("consumer-1", repofixture.Issued, newCA(r.T))
}

func newCA(t rawgit.TB) *repofixture.CA {
	ca, err := repofixture.NewCA("provider-a CA", time.Now().Add(-time.Hour), 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// peering returns the tree of the valid directory provider-a/consumer at stage.
func (r *hostileRepo) peering(consumer string, stage repofixture.Stage, ca *repofixture.CA) plumbing.Hash {
	now := time.Now()
	p, err := repofixture.Build("provider-a", consumer, stage,
		repofixture.Options{CA: ca, APIServer: "https://provider-a.example:6443", NotBefore: now.Add(-time.Minute), TTL: time.Hour})
	if err != nil {
		r.T.Fatal(err)
	}
	var entries []object.TreeEntry
	for _, name := range slices.Sorted(maps.Keys(p.Files)) {
		entries = append(entries, rawgit.File(name, r.Blob(p.Files[name])))
	}
	return r.Tree(entries...)
}

// commit makes a commit whose root holds provider-a with consumers, and
// consumer-1 (benign) beside them, and the directories of others.
func (r *hostileRepo) commit(consumers map[string]plumbing.Hash, others ...object.TreeEntry) (*gitsync.Repo, plumbing.Hash) {
	r.T.Helper()
	consumers["consumer-1"] = r.benign()
	root := append([]object.TreeEntry{rawgit.Dir("provider-a", r.providerTree(consumers))}, others...)
	slices.SortFunc(root, func(a, b object.TreeEntry) int { return strings.Compare(a.Name, b.Name) })
	head := r.Commit(r.Tree(root...))
	repo, err := gitsync.OpenLocal(r.Dir, gitsync.Config{MaxFileSize: protocol.MaxFileSize, Limits: protocol.Limits})
	if err != nil {
		r.T.Fatal(err)
	}
	r.T.Cleanup(func() { _ = repo.Close() })
	return repo, head
}

var providerA = &gitpeerv1alpha1.PeeringRepository{Spec: gitpeerv1alpha1.PeeringRepositorySpec{
	ClusterID: "provider-a", Provider: &gitpeerv1alpha1.ProviderSpec{Enabled: true},
}}

// peakHeap runs load and returns the peak of live heap objects while it ran,
// sampled every 100µs after a GC.
func peakHeap(t *testing.T, load func()) uint64 {
	t.Helper()
	// Collect often while measuring, so that the peak is what load keeps
	// rather than garbage, its own or other goroutines' (informers left by
	// earlier tests), waiting for a collection: the caps bound what is kept.
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var peak atomic.Uint64
	read := func() {
		metrics.Read(sample)
		if v := sample[0].Value.Uint64(); v > peak.Load() {
			peak.Store(v)
		}
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-done:
				return
			case <-time.After(100 * time.Microsecond):
				read()
			}
		}
	}()
	load()
	read()
	close(done)
	<-stopped
	return peak.Load()
}

// TestLoadPeakHeap loads, as the agent does, one hostile shape per case
// beside a benign peering, and asserts that the peak heap stays within the
// peak of the same code on the benign repository plus 32 MiB, that the
// shape is reported invalid (never absent) and the benign peering still read.
func TestLoadPeakHeap(t *testing.T) {
	full := bytes.Repeat([]byte("#"), protocol.MaxFileSize)
	entries := func(r *hostileRepo, n int, first object.TreeEntry, blob plumbing.Hash) plumbing.Hash {
		es := []object.TreeEntry{first}
		for i := range n {
			es = append(es, rawgit.File(fmt.Sprintf("f%05d.yaml", i), blob))
		}
		return r.Tree(es...)
	}
	kustomized := func(n int) func(r *hostileRepo) map[string]plumbing.Hash {
		return func(r *hostileRepo) map[string]plumbing.Hash {
			k := rawgit.File("a-kustomization.yaml", r.Blob([]byte("resources: []\n")))
			tree := entries(r, n, k, r.Blob(full))
			// kustomization.yaml sorts after f*.yaml: rebuild with it last.
			raw, err := object.GetTree(r.Repo.Storer, tree)
			if err != nil {
				r.T.Fatal(err)
			}
			es := append(raw.Entries[1:], rawgit.File("kustomization.yaml", raw.Entries[0].Hash))
			return map[string]plumbing.Hash{"consumer-2": r.Tree(es...)}
		}
	}
	dirs := func(n int, blob []byte) func(r *hostileRepo) map[string]plumbing.Hash {
		return func(r *hostileRepo) map[string]plumbing.Hash {
			tenant := r.Tree(rawgit.File("tenant.yaml", r.Blob(blob)))
			m := map[string]plumbing.Hash{}
			for i := range n {
				m[fmt.Sprintf("consumer-x%05d", i)] = tenant
			}
			return m
		}
	}
	// consumer directories each holding a directory: 1+2n directories in scope.
	manyDirs := func(r *hostileRepo) map[string]plumbing.Hash {
		sub := r.Tree(rawgit.Dir("sub", r.Tree(rawgit.File("tenant.yaml", r.Blob([]byte("kind: Tenant\n"))))))
		m := map[string]plumbing.Hash{}
		for i := range protocol.MaxDirectoriesPerRound/2 + 1 {
			m[fmt.Sprintf("consumer-x%05d", i)] = sub
		}
		return m
	}
	benignRepo := newHostileRepo(t)
	repo, head := benignRepo.commit(map[string]plumbing.Hash{})
	baseline := peakHeap(t, func() { mustLoad(t, repo, head) })
	for _, tc := range []struct {
		name  string
		build func(r *hostileRepo) map[string]plumbing.Hash
		want  error
	}{
		{name: "3000 entries to one 64 KiB blob in a kustomized folder", build: kustomized(3000), want: gitsync.ErrLimitExceeded},
		{name: "1000 entries to one 64 KiB blob in a kustomized folder", build: kustomized(1000), want: protocol.ErrInvalid},
		{name: "a tree of MaxTreeEntries+1 entries", want: gitsync.ErrLimitExceeded, build: func(r *hostileRepo) map[string]plumbing.Hash {
			return map[string]plumbing.Hash{"consumer-2": entries(r, protocol.MaxTreeEntries, rawgit.File("a.yaml", r.Blob(full)), r.Blob(full))}
		}},
		{name: "MaxConsumersPerProvider+1 consumer directories", build: dirs(protocol.MaxConsumersPerProvider+1, []byte("kind: Tenant\n")), want: gitsync.ErrLimitExceeded},
		{name: "MaxDirectoriesPerRound+3 directories", build: manyDirs, want: gitsync.ErrLimitExceeded},
		{name: "64 KiB tenants summing over MaxBytesPerRound", build: dirs(protocol.MaxBytesPerRound/protocol.MaxFileSize+8, full), want: gitsync.ErrLimitExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newHostileRepo(t)
			repo, head := r.commit(tc.build(r))
			var loaded *protocol.Loaded
			peak := peakHeap(t, func() { loaded = mustLoad(t, repo, head) })
			t.Logf("peak heap %.1f MiB, baseline %.1f MiB", float64(peak)/(1<<20), float64(baseline)/(1<<20))
			if peak > baseline+32<<20 {
				t.Errorf("peak heap %d bytes exceeds the baseline %d + 32 MiB", peak, baseline)
			}
			if !slices.ContainsFunc(loaded.Rejected, func(rj protocol.Rejection) bool { return errors.Is(rj.Err, tc.want) }) {
				t.Errorf("no rejection matching %v: %v", tc.want, loaded.Rejected)
			}
			pe := loaded.Documents("provider-a", "consumer-1")
			if read := pe.Tenant != nil && pe.Identity != nil && len(pe.Invalid) == 0; !read && len(pe.Invalid) != len(vocabulary.FileKinds) {
				t.Errorf("benign peering neither read nor marked invalid: %+v", pe)
			}
		})
	}
}

func mustLoad(t *testing.T, repo *gitsync.Repo, head plumbing.Hash) *protocol.Loaded {
	t.Helper()
	loaded, err := reconciler.LoadCommit(repo, head, providerA)
	if err != nil {
		t.Fatal(err)
	}
	return loaded
}

// TestLoadTenThousandConsumers checks that a provider directory of 10,000
// consumers is read whole: before, the cap of 1,024 entries per directory
// refused it, and 1,024 directories per round left most of it unread.
func TestLoadTenThousandConsumers(t *testing.T) {
	r := newHostileRepo(t)
	tenant := r.Tree(rawgit.File("tenant.yaml", r.Blob([]byte("kind: Tenant\n"))))
	consumers := map[string]plumbing.Hash{}
	for i := range 10_000 {
		consumers[fmt.Sprintf("consumer-x%05d", i)] = tenant
	}
	repo, head := r.commit(consumers)
	loaded := mustLoad(t, repo, head)
	if len(loaded.Peerings) != 10_001 {
		t.Errorf("%d peering directories read, want 10,001", len(loaded.Peerings))
	}
	for _, rj := range loaded.Rejected {
		if errors.Is(rj.Err, gitsync.ErrLimitExceeded) {
			t.Fatalf("%s: %v", rj.Path, rj.Err)
		}
	}
	if pe := loaded.Documents("provider-a", "consumer-1"); pe.Tenant == nil || pe.Identity == nil {
		t.Errorf("benign peering not read: %+v", pe)
	}
}
