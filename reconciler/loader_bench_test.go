package reconciler_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/gitpeer/gitpeer/examples/repofixture"
	"github.com/gitpeer/gitpeer/gitsync"
	"github.com/gitpeer/gitpeer/reconciler"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/test/rawgit"
)

// BenchmarkLoader reads, as provider-a's agent does, a repository where
// provider-a has 10,000 issued peerings (request, nonce, tenant and identity
// each): a fresh read (the first round, `gitpeer verify`), a round where
// nothing changed, a full round (nothing changed, every peering's documents
// asked for), a round where one directory changed, and the heap the Loader
// keeps between rounds (and, apart, what the open clone's object cache holds
// after the round).
//
//	GOTOOLCHAIN=local go test ./reconciler/ -run '^$' -bench Loader -benchtime 5x
func BenchmarkLoader(b *testing.B) {
	const n = 10_000
	r := &hostileRepo{rawgit.New(b)}
	ca := newCA(b)
	dirs := make([]object.TreeEntry, n)
	for i := range dirs {
		name := fmt.Sprintf("consumer-%05d", i)
		dirs[i] = rawgit.Dir(name, r.peering(name, repofixture.Issued, ca))
	}
	commit := func(dirs []object.TreeEntry) plumbing.Hash {
		return r.Commit(r.Tree(rawgit.Dir("provider-a", r.Tree(dirs...))))
	}
	head := commit(dirs)
	last := dirs[n-1].Name
	changed := commit(append(dirs[:n-1:n-1], rawgit.Dir(last, r.peering(last, repofixture.Requested, ca))))
	open := func(b *testing.B) *gitsync.Repo {
		repo, err := gitsync.OpenLocal(r.Dir, gitsync.Config{MaxFileSize: protocol.MaxFileSize, Limits: protocol.Limits})
		if err != nil {
			b.Fatal(err)
		}
		return repo
	}
	repo := open(b)
	b.Cleanup(func() { _ = repo.Close() })
	load := func(b *testing.B, repo *gitsync.Repo, loader *protocol.Loader, commit plumbing.Hash) *protocol.Loaded {
		loaded, err := reconciler.LoadChanged(loader, repo, commit, providerA)
		if err != nil {
			b.Fatal(err)
		}
		if len(loaded.Rejected) != 0 {
			b.Fatalf("rejected %v", loaded.Rejected)
		}
		return loaded
	}
	b.Run("fresh", func(b *testing.B) {
		for b.Loop() {
			if loaded := load(b, repo, new(protocol.Loader), head); len(loaded.Peerings) != n {
				b.Fatalf("%d peerings decoded", len(loaded.Peerings))
			}
		}
	})
	b.Run("no-change", func(b *testing.B) {
		loader := new(protocol.Loader)
		load(b, repo, loader, head)
		for b.Loop() {
			if loaded := load(b, repo, loader, head); len(loaded.Changed) != 0 {
				b.Fatalf("changed %v", loaded.Changed)
			}
		}
	})
	// A full round: nothing changed, and the round asks for the documents of every peering.
	b.Run("full-round", func(b *testing.B) {
		loader := new(protocol.Loader)
		load(b, repo, loader, head)
		for b.Loop() {
			loaded := load(b, repo, loader, head)
			dirs := loaded.Dirs()
			for _, d := range dirs {
				if pe := loaded.Documents(d.Provider, d.Consumer); pe.Identity == nil {
					b.Fatalf("%s/%s: no identity, invalid %v", d.Provider, d.Consumer, pe.Invalid)
				}
			}
			if len(dirs) != n {
				b.Fatalf("%d peerings", len(dirs))
			}
		}
	})
	b.Run("one-changed", func(b *testing.B) {
		loader := new(protocol.Loader)
		load(b, repo, loader, head)
		commits := []plumbing.Hash{changed, head}
		i := 0
		for b.Loop() {
			load(b, repo, loader, commits[i%2])
			i++
		}
	})
	b.Run("retained", func(b *testing.B) {
		for b.Loop() {
			before := liveHeap()
			clone := open(b)
			loader := new(protocol.Loader)
			load(b, clone, loader, head)
			withClone := liveHeap()
			if err := clone.Close(); err != nil {
				b.Fatal(err)
			}
			held := liveHeap()
			runtime.KeepAlive(loader)
			b.ReportMetric(float64(held-before)/(1<<20), "retained-MiB")
			b.ReportMetric(float64(held-before)/n, "retained-B/peering")
			b.ReportMetric(float64(withClone-held)/(1<<20), "clone-cache-MiB")
		}
	})
}

// liveHeap returns the bytes of live heap objects after a collection.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
