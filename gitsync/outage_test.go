package gitsync_test

import (
	"errors"
	"testing"

	"github.com/gitpeer/gitpeer/gitsync"
)

// TestServerLostMidPush cuts the server when a push starts: the write fails
// as ErrUnreachable, so do polls while it is down, and the write retried
// once it is back lands exactly one commit.
func TestServerLostMidPush(t *testing.T) {
	f := newFixture(t, "outage")
	proxy := f.srv.NewProxy(t)
	r := f.open(proxy.URL(f.repo), f.httpAuth())
	mustWrite(t, r, "seed", gitsync.Put("a.yaml", []byte("a")))

	proxy.OnPush(proxy.Cut)
	change := gitsync.Put("b.yaml", []byte("b"))
	if _, err := r.Write(ctx(t), message("b"), []gitsync.FileChange{change}); !errors.Is(err, gitsync.ErrUnreachable) {
		t.Fatalf("write cut mid-push: %v", err)
	}
	if _, err := r.Poll(ctx(t)); !errors.Is(err, gitsync.ErrUnreachable) || proxy.Refused.Load() == 0 {
		t.Fatalf("poll while cut: %v (%d connections refused)", err, proxy.Refused.Load())
	}
	if got := git(t, f.repo.Dir, "rev-list", "--count", "main"); got != "1" {
		t.Fatalf("%s commits on main while cut, want 1", got)
	}

	proxy.Restore()
	if res := mustWrite(t, r, "b", change); !res.Pushed {
		t.Fatal("retried write not pushed")
	}
	mustWrite(t, r, "b again", change)
	if got := git(t, f.repo.Dir, "rev-list", "--count", "main"); got != "2" {
		t.Fatalf("%s commits on main, want 2", got)
	}
}
