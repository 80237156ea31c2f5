package gitsync_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/gitpeer/gitpeer/gitsync"
)

// A round's exchanges with the remote: a poll of a moved branch is one fetch
// (its ref advertisement and one download); a write right after it builds
// on the clone's heads and only pushes (the push's own ref advertisement
// checks them); a write on a stale clone is retried on the remote's heads at
// once and lands on top of what the other writer pushed.
func TestRoundExchanges(t *testing.T) {
	f := newFixture(t, "exchanges")
	other := f.openHTTP()
	mustWrite(t, other, "request", gitsync.Put("p/c/request.yaml", []byte("r")))
	c := newCounter(t, f.repo.HTTPURL)
	agent := openClone(t, c.URL, f.httpAuth())
	mustPoll(t, agent)

	cost := func(what string, wantAdverts, wantDownloads, wantPushes int64, do func()) {
		t.Helper()
		adverts, downloads, pushes := c.adverts.Load(), c.downloads.Load(), len(c.Pushes())
		do()
		if a, d, p := c.adverts.Load()-adverts, c.downloads.Load()-downloads, int64(len(c.Pushes())-pushes); a != wantAdverts || d != wantDownloads || p != wantPushes {
			t.Fatalf("%s: %d fetch advertisement(s), %d download(s), %d push(es); want %d, %d, %d", what, a, d, p, wantAdverts, wantDownloads, wantPushes)
		}
	}
	moved := mustWrite(t, other, "terms", gitsync.Put("p/terms.yaml", []byte("t"))).Commit
	cost("poll of a moved branch", 1, 1, 0, func() {
		if h := mustPoll(t, agent); h != moved {
			t.Fatalf("poll: %s, want %s", h, moved)
		}
	})
	cost("write after a poll", 0, 0, 1, func() { mustWrite(t, agent, "nonce", gitsync.Put("p/c/nonce.yaml", []byte("n"))) })
	const branch = "gitpeer/p/c"
	review := tenantReviewer(t, agent, branch)
	cost("new review branch", 0, 0, 1, func() { review("t1") })
	cost("review branch extended", 0, 0, 1, func() { review("t2") })
	// Nothing to push on the clone's heads: the remote's heads decide (main, then the review branch).
	cost("review write already there", 2, 0, 0, func() {
		if review("t2").Pushed {
			t.Fatal("unchanged review write made a commit")
		}
	})

	theirs := mustWrite(t, other, "identity", gitsync.Put("p/d/identity.yaml", []byte("i"))).Commit
	var ours gitsync.WriteResult
	cost("write on a stale clone", 1, 1, 1, func() { ours = mustWrite(t, agent, "nonce", gitsync.Put("p/d/nonce.yaml", []byte("n"))) })
	if ours.Attempts != 2 || git(t, f.repo.Dir, "rev-parse", "main^") != theirs.String() || git(t, f.repo.Dir, "rev-parse", "main") != ours.Commit.String() {
		t.Fatalf("stale write: %+v, main^ %s, want on top of %s", ours, git(t, f.repo.Dir, "rev-parse", "main^"), theirs)
	}
}

// A write creates its objects in memory and, once pushed, stores them in the
// clone as one pack: no loose object (a file each, read back by the push and
// the next rounds), and the clone reads the commit, builds the next write on
// it and passes git's own check.
func TestWriteKeepsOnePack(t *testing.T) {
	f := newFixture(t, "onepack")
	mustWrite(t, f.openHTTP(), "request", gitsync.Put("p/c/request.yaml", []byte("r")))
	var dir string
	agent := f.openHTTP(func(c *gitsync.Config) { dir = c.Dir })
	mustPoll(t, agent)
	packs := func() []string { return packsIn(t, dir) }
	before := len(packs())
	var changes []gitsync.FileChange
	for i := range 100 {
		changes = append(changes, gitsync.Put(fmt.Sprintf("p/c%03d/identity.yaml", i), fmt.Appendf(nil, "identity %d", i)))
	}
	first := mustWrite(t, agent, "identities", changes...)
	loose, err := filepath.Glob(filepath.Join(dir, "objects", "[0-9a-f][0-9a-f]", "*"))
	if err != nil {
		t.Fatal(err)
	}
	if len(loose) != 0 || len(packs()) != before+1 {
		t.Fatalf("after a write of 100 files: %d loose objects, %d packs (before %d); want none loose, one pack more", len(loose), len(packs()), before)
	}
	if got, err := agent.ReadFile(first.Commit, "p/c042/identity.yaml"); err != nil || string(got) != "identity 42" {
		t.Fatalf("reading the written file from the clone: %q, %v", got, err)
	}
	second := mustWrite(t, agent, "nonce", gitsync.Put("p/c042/nonce.yaml", []byte("n")))
	if second.Attempts != 1 || git(t, f.repo.Dir, "rev-parse", "main^") != first.Commit.String() {
		t.Fatalf("second write %+v: want one attempt on top of %s", second, first.Commit)
	}
	git(t, dir, "--git-dir", dir, "fsck", "--no-dangling", "--strict")
}

// The clone's packs stay bounded: each write and each fetch adds one, and
// past MaxPacks the next repacks the clone into one. Every file written
// stays readable from the clone, which passes git's own check, shallow or
// not.
func TestPacksStayBounded(t *testing.T) {
	for _, shallow := range []bool{false, true} {
		t.Run(fmt.Sprintf("shallow=%v", shallow), func(t *testing.T) {
			f := newFixture(t, "bounded")
			other := f.openHTTP()
			mustWrite(t, other, "first", gitsync.Put("p/first.yaml", []byte("0")))
			mustWrite(t, other, "second", gitsync.Put("p/second.yaml", []byte("0")))
			var dir string
			agent := f.openHTTP(func(c *gitsync.Config) { dir, c.Shallow = c.Dir, shallow })
			mustPoll(t, agent)
			most, repacked := 0, false
			var last gitsync.WriteResult
			for i := range gitsync.MaxPacks {
				mustWrite(t, other, "theirs", gitsync.Put(fmt.Sprintf("p/o%02d.yaml", i), []byte("o")))
				mustPoll(t, agent) // a fetch: one pack
				last = mustWrite(t, agent, "ours", gitsync.Put(fmt.Sprintf("p/a%02d.yaml", i), []byte("a")))
				n := len(packsIn(t, dir))
				repacked = repacked || n < most
				most = max(most, n)
			}
			if most > gitsync.MaxPacks+1 || !repacked {
				t.Fatalf("%d writes and fetches: at most %d packs, repacked %v; want at most %d, repacked", 2*gitsync.MaxPacks, most, repacked, gitsync.MaxPacks+1)
			}
			for _, name := range []string{"p/first.yaml", "p/o00.yaml", "p/a00.yaml", fmt.Sprintf("p/a%02d.yaml", gitsync.MaxPacks-1)} {
				if _, err := agent.ReadFile(last.Commit, name); err != nil {
					t.Fatalf("reading %s after the repacks: %v", name, err)
				}
			}
			git(t, dir, "--git-dir", dir, "fsck", "--no-dangling", "--strict")
		})
	}
}

// packsIn lists the packs of the clone in dir.
func packsIn(t testing.TB, dir string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "objects", "pack", "*.pack"))
	if err != nil {
		t.Fatal(err)
	}
	return names
}
