package gitea_test

import (
	"testing"

	"github.com/gitpeer/gitpeer/test/gitea"
)

// TestStart proves the harness runs a working Gitea: a user created through the admin API owns a
// repository with an initial commit on main, and its token reads it.
func TestStart(t *testing.T) {
	s := gitea.Start(t)
	u, err := s.CreateUser("alice", "write:repository", "read:user")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateRepo(u.Name, "peering"); err != nil {
		t.Fatal(err)
	}
	c, err := s.Client(u.Token)
	if err != nil {
		t.Fatal(err)
	}
	branch, _, err := c.GetRepoBranch(u.Name, "peering", "main")
	if err != nil {
		t.Fatalf("read main of alice/peering with alice's token: %v\n%s", err, s.Log())
	}
	if branch.Commit == nil || branch.Commit.ID == "" {
		t.Fatalf("main has no commit: %+v", branch)
	}
}
