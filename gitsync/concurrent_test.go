package gitsync_test

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gitpeer/gitpeer/gitsync"
)

// TestConcurrentWriters runs 8 agents (each with its own clone, half over HTTP
// and half over SSH) making 25 commits each on disjoint files of one branch.
func TestConcurrentWriters(t *testing.T) {
	const writers, commits = 8, 25
	f := newFixture(t, "race")
	mustWrite(t, f.openHTTP(), "seed", gitsync.Put("README.md", []byte("seed")))

	retry := func(c *gitsync.Config) {
		// A generous budget: on a loaded machine a writer can lose many races in a row;
		// the test is about nothing lost or doubled, not about how often one loses.
		c.Retry = gitsync.Retry{Attempts: 200, BaseDelay: 10 * time.Millisecond, MaxDelay: time.Second}
	}
	var wg sync.WaitGroup
	var attempts atomic.Int64
	errs := make(chan error, writers)
	for w := range writers {
		agent := f.openHTTP(retry)
		if w%2 == 1 {
			agent = f.openSSH(retry)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range commits {
				p := fmt.Sprintf("w%d/c%02d.yaml", w, i)
				res, err := agent.Write(ctx(t), message("write "+p), []gitsync.FileChange{gitsync.Put(p, []byte(p))})
				if err != nil {
					errs <- fmt.Errorf("%s: %w", p, err)
					return
				}
				attempts.Add(int64(res.Attempts))
				if !res.Pushed {
					errs <- fmt.Errorf("%s: not pushed", p)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("%d changes landed in %d push attempts", writers*commits, attempts.Load())

	// One commit per change (plus the seed), each adding exactly its own file:
	// nothing lost, nothing applied twice, no empty commit.
	log := git(t, f.repo.Dir, "log", "--format=%s", "--name-status", "main")
	var got []string
	for _, line := range strings.Split(log, "\n") {
		if line != "" {
			got = append(got, line)
		}
	}
	if len(got) != 2*(writers*commits+1) {
		t.Fatalf("log has %d lines, want %d:\n%s", len(got), 2*(writers*commits+1), log)
	}
	seen := map[string]bool{}
	for i := 0; i < len(got); i += 2 {
		subject, status := got[i], got[i+1]
		if subject == "seed" {
			continue
		}
		p := strings.TrimPrefix(subject, "write ")
		if status != "A\t"+p || seen[p] {
			t.Fatalf("commit %q changes %q", subject, status)
		}
		seen[p] = true
	}
	if len(seen) != writers*commits {
		t.Fatalf("%d distinct changes landed, want %d", len(seen), writers*commits)
	}
	if n := git(t, f.repo.Dir, "ls-tree", "-r", "--name-only", "main"); strings.Count(n, "\n")+1 != writers*commits+1 {
		t.Fatalf("tree has %d files", strings.Count(n, "\n")+1)
	}
}
