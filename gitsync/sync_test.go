package gitsync_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitpeer/gitpeer/gitsync"
)

func TestWriteReadAndChanges(t *testing.T) {
	for _, transport := range []string{"http", "ssh"} {
		t.Run(transport, func(t *testing.T) {
			f := newFixture(t, "sync")
			var r *gitsync.Repo
			if transport == "http" {
				r = f.openHTTP(func(c *gitsync.Config) { c.Path = "peers" })
			} else {
				r = f.openSSH(func(c *gitsync.Config) { c.Path = "peers" })
			}
			if _, err := r.Poll(ctx(t)); !errors.Is(err, gitsync.ErrBranchNotFound) {
				t.Fatalf("empty repo poll: %v", err)
			}
			first := mustWrite(t, r, "request", gitsync.Put("prov/cons/request.yaml", []byte("kind: PeeringRequest\n")))
			if !first.Pushed {
				t.Fatal("first write not pushed")
			}
			head := mustPoll(t, r)
			if head != first.Commit {
				t.Fatalf("poll %s, wrote %s", head, first.Commit)
			}
			cs, err := r.Changes(plumbing.ZeroHash, head)
			if err != nil {
				t.Fatal(err)
			}
			assertChanges(t, cs, "added prov/cons/request.yaml")

			again := mustWrite(t, r, "request again", gitsync.Put("prov/cons/request.yaml", []byte("kind: PeeringRequest\n")))
			if again.Pushed || again.Commit != head {
				t.Fatalf("already-present change made a commit: %+v", again)
			}

			second := mustWrite(t, r, "nonce and tenant",
				gitsync.Put("prov/cons/nonce.yaml", []byte("nonce: 1\n")),
				gitsync.Put("prov/cons/request.yaml", []byte("kind: PeeringRequest\nspec: {}\n")))
			cs, err = r.Changes(head, mustPoll(t, r))
			if err != nil {
				t.Fatal(err)
			}
			assertChanges(t, cs, "added prov/cons/nonce.yaml", "modified prov/cons/request.yaml")
			data, err := r.ReadFile(second.Commit, "prov/cons/nonce.yaml")
			if err != nil || string(data) != "nonce: 1\n" {
				t.Fatalf("read: %q %v", data, err)
			}

			third := mustWrite(t, r, "revoke", gitsync.Delete("prov/cons/nonce.yaml"), gitsync.Delete("prov/cons/request.yaml"))
			cs, err = r.Changes(second.Commit, third.Commit)
			if err != nil {
				t.Fatal(err)
			}
			assertChanges(t, cs, "deleted prov/cons/nonce.yaml", "deleted prov/cons/request.yaml")
			if l, err := r.List(third.Commit); err != nil || len(l.Files) != 0 {
				t.Fatalf("listing after delete: %+v %v", l, err)
			}

			// The commit is the agent's, with a subject and trailers, and
			// only touches the root path.
			work := f.cliClone()
			msg := git(t, work, "log", "-1", "--format=%an <%ae>%n%B", first.Commit.String())
			if !strings.HasPrefix(msg, "gitpeer <gitpeer@localhost>\nrequest\n\nGitpeer-Action: test") {
				t.Fatalf("commit message:\n%s", msg)
			}
			if files := git(t, work, "ls-tree", "-r", "--name-only", second.Commit.String()); files != "peers/prov/cons/nonce.yaml\npeers/prov/cons/request.yaml" {
				t.Fatalf("tree:\n%s", files)
			}
		})
	}
}

func TestPollCostAndPersistence(t *testing.T) {
	f := newFixture(t, "poll")
	writer := f.openHTTP()
	mustWrite(t, writer, "seed", gitsync.Put("a/b/request.yaml", []byte("1")))

	c := newCounter(t, f.repo.HTTPURL)
	dir := filepath.Join(t.TempDir(), "agent")
	open := func() *gitsync.Repo {
		r, err := gitsync.Open(gitsync.Config{URL: c.URL, Dir: dir, Auth: f.httpAuth()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = r.Close() })
		return r
	}
	agent := open()
	h1 := mustPoll(t, agent)
	if c.downloads.Load() != 1 {
		t.Fatalf("initial clone: %d pack downloads", c.downloads.Load())
	}
	before := c.adverts.Load()
	if mustPoll(t, agent) != h1 || c.downloads.Load() != 1 || c.adverts.Load() != before+1 {
		t.Fatalf("no-change poll: adverts %d->%d, downloads %d", before, c.adverts.Load(), c.downloads.Load())
	}

	// A restarted agent reuses its clone: still no download.
	if err := agent.Close(); err != nil {
		t.Fatal(err)
	}
	agent = open()
	if mustPoll(t, agent) != h1 || c.downloads.Load() != 1 {
		t.Fatalf("restart re-downloaded: %d", c.downloads.Load())
	}

	// A moved branch is fetched incrementally: one download, and the pack
	// holds only the new objects (commit, root, a, a/b trees and the blob).
	h2 := mustWrite(t, writer, "change", gitsync.Put("a/b/request.yaml", []byte("2"))).Commit
	if mustPoll(t, agent) != h2 || c.downloads.Load() != 2 {
		t.Fatalf("moved branch: downloads %d", c.downloads.Load())
	}
	cs, err := agent.Changes(h1, h2)
	if err != nil {
		t.Fatal(err)
	}
	assertChanges(t, cs, "modified a/b/request.yaml")
	if n := countObjects(t, dir); n != 5+5 {
		t.Fatalf("clone holds %d objects, want 10 (5 per commit)", n)
	}
}

func TestForcePushDetected(t *testing.T) {
	f := newFixture(t, "force")
	agent := f.openHTTP()
	mustWrite(t, agent, "one", gitsync.Put("p/c/request.yaml", []byte("1")))
	last := mustWrite(t, agent, "two", gitsync.Put("p/c/nonce.yaml", []byte("2"))).Commit

	work := f.cliClone()
	git(t, work, "reset", "--hard", "HEAD~1")
	if err := os.WriteFile(filepath.Join(work, "p", "c", "tenant.yaml"), []byte("forged"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, work, "add", ".")
	git(t, work, "commit", "-q", "-m", "rewrite")
	git(t, work, "push", "-q", "--force", "origin", "HEAD:main")

	head := mustPoll(t, agent)
	_, err := agent.Changes(last, head)
	var he *gitsync.HistoryError
	if !errors.Is(err, gitsync.ErrHistoryRewritten) || !errors.As(err, &he) || he.Last != last || he.New != head {
		t.Fatalf("rewritten history not detected: %v", err)
	}
	// A fresh agent that never saw the old commit reports it the same way.
	if _, err := f.openHTTP().Changes(last, head); err == nil {
		t.Fatal("unknown last commit accepted")
	}
}

func assertChanges(t *testing.T, cs *gitsync.ChangeSet, want ...string) {
	t.Helper()
	var got []string
	for _, c := range cs.Changes {
		got = append(got, string(c.Op)+" "+c.Path)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("changes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// countObjects counts the objects in a clone's packs and loose objects.
func countObjects(t *testing.T, dir string) int {
	t.Helper()
	out := git(t, dir, "count-objects", "-v")
	n := 0
	for _, line := range strings.Split(out, "\n") {
		var v int
		if k, val, ok := strings.Cut(line, ": "); ok && (k == "count" || k == "in-pack") {
			for _, ch := range val {
				v = v*10 + int(ch-'0')
			}
			n += v
		}
	}
	return n
}

// TestReadFileAcrossCommits: reads alternating between commits each see their
// own commit's content (the repository remembers the tree of the last commit
// read).
func TestReadFileAcrossCommits(t *testing.T) {
	f := newFixture(t, "across")
	r := f.openHTTP()
	first := mustWrite(t, r, "first", gitsync.Put("p/c/nonce.yaml", []byte("one"))).Commit
	second := mustWrite(t, r, "second", gitsync.Put("p/c/nonce.yaml", []byte("two")), gitsync.Put("p/d/nonce.yaml", []byte("d"))).Commit
	for _, read := range []struct {
		commit plumbing.Hash
		path   string
		want   string
	}{
		{first, "p/c/nonce.yaml", "one"},
		{second, "p/c/nonce.yaml", "two"},
		{second, "p/d/nonce.yaml", "d"},
		{first, "p/c/nonce.yaml", "one"},
		{first, "p/d/nonce.yaml", ""},
	} {
		got, err := r.ReadFile(read.commit, read.path)
		if read.want == "" {
			if err == nil {
				t.Errorf("ReadFile(%s, %s) = %q, want not found", read.commit, read.path, got)
			}
			continue
		}
		if err != nil || string(got) != read.want {
			t.Errorf("ReadFile(%s, %s) = %q, %v; want %q", read.commit, read.path, got, err, read.want)
		}
	}
}
