package gitsync_test

import (
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
