package gitea_test

import (
	"testing"

	"github.com/gitpeer/gitpeer/test/gitea"
)

// TestStart proves the harness runs a working Gitea: a user created through the admin API owns a
// repository with an initial commit on main, and its token reads it.
func TestStart(t *testing.T) {
	s, u, c := gitea.StartWithRepo(t, "alice", "peering")
	branch, _, err := c.GetRepoBranch(u.Name, "peering", "main")
	if err != nil {
		t.Fatalf("read main of alice/peering with alice's token: %v\n%s", err, s.Log())
	}
	if branch.Commit == nil || branch.Commit.ID == "" {
		t.Fatalf("main has no commit: %+v", branch)
	}
}
