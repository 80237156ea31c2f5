package gitsync_test

import (
	"testing"

	"github.com/gitpeer/gitpeer/gitsync"
)

func TestReviewBranch(t *testing.T) {
	f := newFixture(t, "review")
	agent := f.openHTTP()
	base := mustWrite(t, agent, "request", gitsync.Put("p/c/request.yaml", []byte("r"))).Commit
	const branch = "gitpeer/p/c"
	review := tenantReviewer(t, agent, branch)

	// Created from the branch; the branch itself is untouched.
	first := review("t1")
	if !first.Pushed || git(t, f.repo.Dir, "rev-parse", branch+"^") != base.String() || git(t, f.repo.Dir, "rev-parse", "main") != base.String() {
		t.Fatalf("review branch not created from main: %+v", first)
	}
	// Same content again: no commit. New content: extends the review branch.
	if again := review("t1"); again.Pushed {
		t.Fatal("unchanged review write made a commit")
	}
	second := review("t2")
	if git(t, f.repo.Dir, "rev-parse", branch+"^") != first.Commit.String() {
		t.Fatal("review branch not extended")
	}

	// Someone else adds to the review branch: the agent builds on it, never drops it.
	work := f.cliClone()
	git(t, work, "fetch", "-q", "origin", branch)
	git(t, work, "checkout", "-q", "-b", "r", "FETCH_HEAD")
	git(t, work, "commit", "-q", "--allow-empty", "-m", "reviewer note")
	git(t, work, "push", "-q", "origin", "r:"+branch)
	third := review("t3")
	if git(t, f.repo.Dir, "rev-parse", branch+"~2") != second.Commit.String() {
		t.Fatal("review write dropped a foreign commit")
	}

	// Once merged, the change is on main: writing it again is a no-op, and a
	// new change restarts the review branch from main (a fast-forward).
	git(t, f.repo.Dir, "update-ref", "refs/heads/main", third.Commit.String())
	if res := review("t3"); res.Pushed {
		t.Fatal("merged change written again")
	}
	mustWrite(t, agent, "nonce", gitsync.Put("p/c/nonce.yaml", []byte("n")))
	fourth := review("t4")
	if git(t, f.repo.Dir, "rev-parse", branch+"^") != git(t, f.repo.Dir, "rev-parse", "main") {
		t.Fatalf("review branch not restarted from main: %+v", fourth)
	}
}
