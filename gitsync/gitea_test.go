package gitsync_test

import (
	"net/url"
	"testing"

	"github.com/gitpeer/gitpeer/gitsync"
	"github.com/gitpeer/gitpeer/test/gitea"
)

// TestLargeWriteGitea races a large write against another writer on a real
// Gitea: Gitea accepts the scratch ref from a user who may push to the
// repository, advertises it to the next push and lets it be deleted, so the
// retry sends only the rebuilt trees and commit.
func TestLargeWriteGitea(t *testing.T) {
	srv := gitea.Start(t)
	u, err := srv.CreateUser("provider-agent", "write:repository", "read:user")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.CreateRepo(u.Name, "peering"); err != nil {
		t.Fatal(err)
	}
	repoURL, err := url.Parse(srv.URL + u.Name + "/peering.git")
	if err != nil {
		t.Fatal(err)
	}
	auth := &gitsync.Auth{Username: u.Name, Password: u.Token}
	c := newCounter(t, repoURL.String())
	agent := openClone(t, c.URL, auth)
	other := openClone(t, repoURL.String(), auth)
	repoURL.User = url.UserPassword(u.Name, u.Token)
	raceLargeWrite(t, c, agent, other, repoURL.String())
}
