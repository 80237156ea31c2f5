package gitsync_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gitpeer/gitpeer/gitsync"
)

// largeWrite is a write of n new identity-sized files (see identityDoc):
// enough to be staged.
func largeWrite(n int, dir string) []gitsync.FileChange {
	changes := make([]gitsync.FileChange, n)
	for i := range changes {
		changes[i] = gitsync.Put(fmt.Sprintf("%s/c%04d/identity.yaml", dir, i), identityDoc())
	}
	return changes
}

// TestLargeWriteRetriesCheaply moves the branch while a large write is being
// pushed: the write lands on the second attempt without sending its files
// again, and the scratch ref it pushed them to is gone afterwards.
func TestLargeWriteRetriesCheaply(t *testing.T) {
	f := newFixture(t, "stage")
	c := newCounter(t, f.repo.HTTPURL)
	agent := f.open(c.URL, f.httpAuth())
	mustWrite(t, agent, "seed", gitsync.Put("README.md", []byte("seed")))
	if n := len(c.Pushes()); n != 1 {
		t.Fatalf("a small write made %d push requests, want 1 (no staging)", n)
	}
	raceLargeWrite(t, c, agent, f.openHTTP(), f.srv.HTTPURLWithCredentials(f.repo))
}

// raceLargeWrite makes a large write with agent, through c, while other
// moves main as soon as the write's first push request arrives (before the
// server has read any of it). The write must land on the second attempt,
// its files crossing the network once, and leave no scratch ref on the
// remote, which the git CLI reaches at cliURL.
func raceLargeWrite(t *testing.T, c *counter, agent, other *gitsync.Repo, cliURL string) {
	t.Helper()
	before := len(c.Pushes())
	moved := make(chan error, 1)
	c.OnPush(func() {
		_, err := other.Write(ctx(t), message("other writer"), []gitsync.FileChange{gitsync.Put("other.yaml", []byte("o"))})
		moved <- err
	})
	const files = 600
	res := mustWrite(t, agent, "large", largeWrite(files, "p")...)
	if err := <-moved; err != nil {
		t.Fatal(err)
	}
	if !res.Pushed || res.Attempts != 2 {
		t.Fatalf("large write: %+v, want pushed on the second attempt", res)
	}
	heads := git(t, "", "ls-remote", cliURL)
	if !strings.Contains(heads, res.Commit.String()+"\trefs/heads/main") {
		t.Fatalf("main is not the large write's commit %s:\n%s", res.Commit, heads)
	}
	if _, err := agent.ReadFile(res.Commit, "other.yaml"); err != nil {
		t.Fatalf("the other writer's file is lost: %v", err)
	}
	if strings.Contains(heads, "refs/gitpeer/") {
		t.Fatalf("scratch ref left behind:\n%s", heads)
	}
	// The files crossed the network once: every push request of the write
	// but the largest is small next to it.
	pushes := c.Pushes()[before:]
	largest, rest := int64(0), int64(0)
	for _, n := range pushes {
		rest += n
		largest = max(largest, n)
	}
	rest -= largest
	if largest < files*identityEntropy || rest > largest/10 {
		t.Fatalf("push requests of the large write: %v bytes; want one carrying the files and the others under a tenth of it", pushes)
	}
}

// refHook installs a pre-receive hook in the server's repository that logs
// every ref it is asked to update, one line each, and with refuseNonBranches
// refuses any push updating a ref outside refs/heads, as some forges do.
func refHook(t *testing.T, f *fixture, refuseNonBranches bool) (log string) {
	log = filepath.Join(t.TempDir(), "refs.log")
	hook := fmt.Sprintf(`#!/bin/sh
status=0
while read old new ref; do
	echo "$ref" >>%q
	case "$ref" in refs/heads/*) ;; *) if %t; then echo "only branches"; status=1; fi ;; esac
done
exit $status
`, log, refuseNonBranches)
	if err := os.WriteFile(filepath.Join(f.repo.Dir, "hooks", "pre-receive"), []byte(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	return log
}

// refLog is what refHook logged: the refs pushed, in order.
func refLog(t *testing.T, log string) []string {
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(data))
}

// TestLargeWriteStagingRefused writes through a server that refuses the
// scratch ref: the write lands as it would without staging, and the Repo
// does not try the scratch ref again.
func TestLargeWriteStagingRefused(t *testing.T) {
	f := newFixture(t, "refused")
	log := refHook(t, f, true)
	c := newCounter(t, f.repo.HTTPURL)
	agent := f.open(c.URL, f.httpAuth())

	first := mustWrite(t, agent, "first", largeWrite(300, "a")...)
	second := mustWrite(t, agent, "second", largeWrite(300, "b")...)
	if !first.Pushed || !second.Pushed || git(t, f.repo.Dir, "rev-parse", "main") != second.Commit.String() {
		t.Fatalf("writes did not land: %+v %+v", first, second)
	}
	refs := refLog(t, log)
	if len(refs) != 3 || !strings.HasPrefix(refs[0], "refs/gitpeer/staging/") || !strings.HasSuffix(refs[0], "/main") ||
		refs[1] != "refs/heads/main" || refs[2] != "refs/heads/main" {
		t.Fatalf("refs pushed: %q; want a scratch ref of main, then main twice", refs)
	}
	if n := len(c.Pushes()); n != 3 {
		t.Fatalf("%d push requests, want 3 (the refused scratch ref, then the branch twice)", n)
	}
}

// TestLargeWritesConcurrent has two clones (two agents, or a provider's and
// a consumer's) write 300 files each to main at once: each stages its commit
// to a scratch ref of its own, which it deletes after, and both writes land.
func TestLargeWritesConcurrent(t *testing.T) {
	f := newFixture(t, "concurrent")
	log := refHook(t, f, false)
	writers := []*gitsync.Repo{f.openHTTP(), f.openHTTP()}
	c := ctx(t)
	results := make([]gitsync.WriteResult, len(writers))
	errs := make([]error, len(writers))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, w := range writers {
		wg.Go(func() {
			<-start
			results[i], errs[i] = w.Write(c, message(fmt.Sprintf("writer %d\n\nGitpeer-Action: test\n", i)), largeWrite(300, fmt.Sprintf("w%d", i)))
		})
	}
	close(start)
	wg.Wait()
	for i := range writers {
		if errs[i] != nil || !results[i].Pushed {
			t.Fatalf("writer %d: %+v, %v", i, results[i], errs[i])
		}
	}
	files := strings.Fields(git(t, f.repo.Dir, "ls-tree", "-r", "--name-only", "main"))
	for i := range writers {
		n := 0
		for _, name := range files {
			if strings.HasPrefix(name, fmt.Sprintf("w%d/", i)) {
				n++
			}
		}
		if n != 300 {
			t.Errorf("main holds %d of writer %d's 300 files", n, i)
		}
	}
	staged := map[string]int{} // scratch ref: updates (creation, deletion)
	for _, ref := range refLog(t, log) {
		if strings.HasPrefix(ref, "refs/gitpeer/staging/") {
			staged[ref]++
		}
	}
	if len(staged) != len(writers) {
		t.Errorf("scratch refs pushed: %v; want one per writer", staged)
	}
	for ref, n := range staged {
		if n != 2 {
			t.Errorf("%s updated %d times; want twice (staged, deleted)", ref, n)
		}
	}
	if refs := git(t, f.repo.Dir, "for-each-ref", "refs/gitpeer/"); refs != "" {
		t.Errorf("scratch refs left behind:\n%s", refs)
	}
}

// TestLargeWriteDeletesStaleStagingRefs checks a large write deletes, with
// its own scratch ref, those other writers left behind over an hour ago and
// the one an earlier version of the agent named after the branch alone
// (refs/gitpeer/staging/<branch>), and leaves alone another writer's recent
// one, an earlier version's for another branch, and any ref no version named.
func TestLargeWriteDeletesStaleStagingRefs(t *testing.T) {
	f := newFixture(t, "stale")
	agent := f.openHTTP()
	seed := mustWrite(t, agent, "seed", gitsync.Put("README.md", []byte("seed")))
	old, recent := time.Now().Add(-2*time.Hour).Unix(), time.Now().Add(-time.Minute).Unix()
	kept := map[string]bool{
		fmt.Sprintf("refs/gitpeer/staging/%d-0123456789abcdef/main", old):           false,
		fmt.Sprintf("refs/gitpeer/staging/%d-fedcba9876543210/gitpeer/review", old): false,
		fmt.Sprintf("refs/gitpeer/staging/%d-0123456789abcdef/main", recent):        true,
		fmt.Sprintf("refs/gitpeer/staging/%d-0123456789ABCDEF/main", old):           true,
		fmt.Sprintf("refs/gitpeer/staging/%d-not-hex/main", old):                    true,
		"refs/gitpeer/staging/main":                                                 false,
		"refs/gitpeer/staging/gitpeer/review":                                       true,
		"refs/gitpeer/other":                                                        true,
	}
	for ref := range kept {
		git(t, f.repo.Dir, "update-ref", ref, seed.Commit.String())
	}
	mustWrite(t, agent, "large", largeWrite(300, "p")...)
	left := strings.Fields(git(t, f.repo.Dir, "for-each-ref", "--format=%(refname)", "refs/gitpeer/"))
	for ref, keep := range kept {
		if slices.Contains(left, ref) != keep {
			t.Errorf("%s kept: %v, want %v", ref, !keep, keep)
		}
	}
	for _, ref := range left {
		if _, ok := kept[ref]; !ok {
			t.Errorf("the write's scratch ref %s is left behind", ref)
		}
	}
}
