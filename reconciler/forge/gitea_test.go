package forge_test

import (
	"context"
	"encoding/base64"
	"testing"
	"time"

	sdk "code.gitea.io/sdk/gitea"

	"github.com/gitpeer/gitpeer/reconciler/forge"
	"github.com/gitpeer/gitpeer/test/gitea"
)

// TestGiteaLive runs Sync and Finish against a real Gitea through Gitea's SDK: the pull request is
// opened once with the status of the checks on its head, left alone when nothing changed, and once
// closed it is reported, its branch deleted, and it is not reopened.
func TestGiteaLive(t *testing.T) {
	srv, u, c := gitea.StartWithRepo(t, "consumer-agent", "peering")
	const branch = "gitpeer/hub/edge-1"
	if _, _, err := c.CreateFile(u.Name, "peering", "hub/edge-1/tenant.yaml", sdk.CreateFileOptions{
		FileOptions: sdk.FileOptions{NewBranchName: branch, Message: "Propose Tenant"}, Content: base64.StdEncoding.EncodeToString([]byte("kind: Tenant\n")),
	}); err != nil {
		t.Fatal(err)
	}
	// Gitea records a pushed branch asynchronously: wait until its API knows it.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		if _, _, err := c.GetRepoBranch(u.Name, "peering", branch); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("branch %s: %v", branch, err)
		}
	}
	repo, err := forge.Locate(srv.URL+u.Name+"/peering.git", forge.Gitea, "")
	if err != nil {
		t.Fatal(err)
	}
	fc, err := forge.New(repo, u.Token)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	p := forge.Proposal{Head: branch, Base: "main", Title: "Peering: edge-1 asks hub for an identity",
		Facts: forge.Facts{Consumer: "edge-1", Provider: "hub", KeyFingerprint: "k", NonceDigest: "n", Path: "hub/edge-1"},
		Verify: func(_ context.Context, read func(string) ([]byte, error)) []string {
			data, err := read("hub/edge-1/tenant.yaml")
			if err != nil || string(data) != "kind: Tenant\n" {
				t.Errorf("read tenant.yaml of the head: %q, %v", data, err)
			}
			return []string{"passed"}
		},
	}
	sync := func(want forge.Action) *forge.PullRequest {
		t.Helper()
		res, err := forge.Sync(ctx, fc, p)
		if err != nil {
			t.Fatalf("Sync: %v\n%s", err, srv.Log())
		}
		if res.Action != want {
			t.Fatalf("Sync: %s, want %s", res.Action, want)
		}
		return res.PullRequest
	}
	pr := sync(forge.Opened)
	sync(forge.Updated) // the description now names the head commit instead of the branch
	sync(forge.Unchanged)
	prs, _, err := c.ListRepoPullRequests(u.Name, "peering", sdk.ListPullRequestsOptions{State: sdk.StateAll})
	if err != nil || len(prs) != 1 {
		t.Fatalf("pull requests: %d, %v; want exactly one", len(prs), err)
	}
	// The proposer's agent posts no status: the review signal is the repository CI's.
	if combined, _, err := c.GetCombinedStatus(u.Name, "peering", pr.Head); err != nil || len(combined.Statuses) != 0 {
		t.Fatalf("status of %s: %+v, %v; want none", pr.Head, combined, err)
	}
	closed := sdk.StateClosed
	if _, _, err := c.EditPullRequest(u.Name, "peering", pr.Number, sdk.EditPullRequestOption{State: &closed}); err != nil {
		t.Fatal(err)
	}
	if sync(forge.WasClosed).State != forge.Closed {
		t.Fatal("closed pull request not reported as closed")
	}
	if _, _, err := c.GetRepoBranch(u.Name, "peering", branch); err == nil {
		t.Fatal("the branch of the closed pull request was not deleted")
	}
	sync(forge.WasClosed)
	if res, err := forge.Finish(ctx, fc, branch, "main"); err != nil || res.Action != forge.WasClosed {
		t.Fatalf("Finish: %+v, %v", res, err)
	}
	if prs, _, _ := c.ListRepoPullRequests(u.Name, "peering", sdk.ListPullRequestsOptions{State: sdk.StateAll}); len(prs) != 1 {
		t.Fatalf("%d pull requests after the close; want the closed one only", len(prs))
	}
}
