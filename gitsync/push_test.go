package gitsync_test

import (
	"crypto/rand"
	"fmt"
	"testing"

	"github.com/gitpeer/gitpeer/gitsync"
)

// TestPushSendsNoDeltas writes two files that differ in one byte: the push
// sends both whole (a delta search costs more memory than it saves on a
// round's files, which do not resemble each other).
func TestPushSendsNoDeltas(t *testing.T) {
	f := newFixture(t, "deltas")
	c := newCounter(t, f.repo.HTTPURL)
	agent := f.open(c.URL, f.httpAuth())
	body := make([]byte, 16<<10)
	_, _ = rand.Read(body)
	twin := append([]byte{}, body...)
	twin[0]++
	mustWrite(t, agent, "twins", gitsync.Put("a", body), gitsync.Put("b", twin))
	if pushes := c.Pushes(); len(pushes) != 1 || pushes[0] < 2*int64(len(body)) {
		t.Fatalf("push requests %v bytes, want one holding both files whole (%d bytes each)", pushes, len(body))
	}
}

// TestPushSendsOnlyChanged changes one file among many in a directory, and
// in a directory of directories: the push sends that file and the trees
// above it, not the files the remote holds at the same paths.
func TestPushSendsOnlyChanged(t *testing.T) {
	f := newFixture(t, "changed")
	c := newCounter(t, f.repo.HTTPURL)
	agent := f.open(c.URL, f.httpAuth())
	var files []gitsync.FileChange
	for i := range 200 {
		body := make([]byte, 1<<10)
		_, _ = rand.Read(body)
		files = append(files, gitsync.Put(fmt.Sprintf("flat/f%03d", i), body), gitsync.Put(fmt.Sprintf("nested/d%03d/f", i), body),
			gitsync.Put(fmt.Sprintf("nested/d%03d.x", i), body))
	}
	mustWrite(t, agent, "many", files...)
	mustWrite(t, agent, "one", gitsync.Put("flat/f100", []byte("changed")), gitsync.Put("nested/d100/f", []byte("changed")))
	pushes := c.Pushes()
	if last := pushes[len(pushes)-1]; last > 64<<10 {
		t.Fatalf("a two-file change pushed %d bytes, want the changed files and trees alone (the remote holds the other 600 KiB)", last)
	}
	git(t, f.repo.Dir, "fsck", "--strict", "--no-dangling")
}

// TestPushKindChanges writes one content at several new paths, then
// replaces a file with a directory holding the same content, and back: each
// push sends what the server lacks, once (the server's receive-pack checks
// that every object the new commit reaches is there).
func TestPushKindChanges(t *testing.T) {
	f := newFixture(t, "kinds")
	agent := f.openSSH()
	mustWrite(t, agent, "file", gitsync.Put("a", []byte("same")), gitsync.Put("keep/x", []byte("x")),
		gitsync.Put("d1/x", []byte("x")), gitsync.Put("d2/x", []byte("x")))
	mustWrite(t, agent, "file to directory", gitsync.Put("a/b", []byte("same")))
	if got := git(t, f.repo.Dir, "show", "main:a/b"); got != "same" {
		t.Fatalf("a/b = %q", got)
	}
	mustWrite(t, agent, "directory to file", gitsync.Put("a", []byte("other")))
	if got := git(t, f.repo.Dir, "show", "main:a"); got != "other" {
		t.Fatalf("a = %q", got)
	}
	git(t, f.repo.Dir, "fsck", "--strict", "--no-dangling")
}

// TestPushesReleaseConnections pushes several times over HTTP: the pushes
// release their connections. go-git's HTTP push never closed the response,
// which kept each push's connection (and the whole request, pack included)
// for the life of the process.
func TestPushesReleaseConnections(t *testing.T) {
	f := newFixture(t, "conns")
	c := newCounter(t, f.repo.HTTPURL)
	agent := f.open(c.URL, f.httpAuth())
	const writes = 8
	for i := range writes {
		mustWrite(t, agent, "write", gitsync.Put(fmt.Sprintf("f%d", i), []byte("x")))
	}
	if n := c.OpenConns(writes); n >= writes {
		t.Fatalf("%d writes left %d connections open, want fewer (each push kept its own)", writes, n)
	}
}

// TestPushHTTPS fetches and pushes over HTTPS from a server whose
// certificate only the configured CA bundle vouches for.
func TestPushHTTPS(t *testing.T) {
	f := newFixture(t, "https")
	c := newTLSCounter(t, f.repo.HTTPURL)
	auth := f.httpAuth()
	auth.CA = c.CA
	agent := f.open(c.URL, auth)
	res := mustWrite(t, agent, "over https", gitsync.Put("a", []byte("a")))
	if got := git(t, f.repo.Dir, "rev-parse", "main"); !res.Pushed || got != res.Commit.String() {
		t.Fatalf("pushed %+v, server's main is %s", res, got)
	}
}
