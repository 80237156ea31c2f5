package gitsync_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

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

// refuseNonBranches installs a pre-receive hook in the server's repository
// that refuses any push updating a ref outside refs/heads, as some forges do,
// and logs every ref it is asked to update.
func refuseNonBranches(t *testing.T, f *fixture) (log string) {
	log = filepath.Join(t.TempDir(), "refs.log")
	hook := fmt.Sprintf(`#!/bin/sh
status=0
while read old new ref; do
	echo "$ref" >>%q
	case "$ref" in refs/heads/*) ;; *) echo "only branches"; status=1 ;; esac
done
exit $status
`, log)
	if err := os.WriteFile(filepath.Join(f.repo.Dir, "hooks", "pre-receive"), []byte(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	return log
}

// TestLargeWriteStagingRefused writes through a server that refuses the
// scratch ref: the write lands as it would without staging, and the Repo
// does not try the scratch ref again.
func TestLargeWriteStagingRefused(t *testing.T) {
	f := newFixture(t, "refused")
	log := refuseNonBranches(t, f)
	c := newCounter(t, f.repo.HTTPURL)
	agent := f.open(c.URL, f.httpAuth())

	first := mustWrite(t, agent, "first", largeWrite(300, "a")...)
	second := mustWrite(t, agent, "second", largeWrite(300, "b")...)
	if !first.Pushed || !second.Pushed || git(t, f.repo.Dir, "rev-parse", "main") != second.Commit.String() {
		t.Fatalf("writes did not land: %+v %+v", first, second)
	}
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	want := "refs/gitpeer/staging/main\nrefs/heads/main\nrefs/heads/main\n"
	if string(data) != want {
		t.Fatalf("refs pushed:\n%swant:\n%s", data, want)
	}
	if n := len(c.Pushes()); n != 3 {
		t.Fatalf("%d push requests, want 3 (the refused scratch ref, then the branch twice)", n)
	}
}
