package forge

import (
	"context"
	"testing"
)

// TestSyncRequests replays, for GitHub and GitLab, what their APIs answer to the requests Sync
// sends through go-github and GitLab's client-go: the requests must be exactly the recorded ones.
func TestSyncRequests(t *testing.T) {
	for _, tc := range []struct {
		fixture  string
		request  bool
		provider Provider
		check    CheckState
		want     Action
		state    State
	}{
		{"github-open", false, GitHub, CheckSuccess, Opened, Open},
		{"github-update", false, GitHub, CheckSuccess, Updated, Open},
		{"github-closed", false, GitHub, CheckSuccess, WasClosed, Closed},
		// A closed request keeps its branch: no DELETE is recorded.
		{"github-request-closed", true, GitHub, CheckSuccess, WasClosed, Closed},
		{"github-reproposed", false, GitHub, CheckSuccess, Opened, Open},
		{"gitlab-open", false, GitLab, CheckFailure, Opened, Open},
		{"gitlab-update", false, GitLab, CheckFailure, Updated, Open},
		{"gitlab-merged", false, GitLab, CheckFailure, WasMerged, Merged},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			srv := replay(t, tc.fixture)
			c, err := New(Repository{Provider: tc.provider, APIURL: srv.URL, Owner: "team", Name: "peering"}, "token")
			if err != nil {
				t.Fatal(err)
			}
			facts := testFacts()
			if tc.request {
				facts.NonceDigest = ""
			}
			res, err := Sync(context.Background(), c, Proposal{
				Head: "gitpeer/hub/edge-1", Base: "main", Title: "Peering: edge-1 asks hub for an identity", Facts: facts, KeepClosed: tc.request,
				Verify: func(_ context.Context, read func(string) ([]byte, error)) (Check, []string) {
					data, err := read("hub/edge-1/tenant.yaml")
					if err != nil {
						t.Fatalf("read tenant.yaml of the head: %v", err)
					}
					if string(data) != "kind: Tenant\n" {
						t.Fatalf("tenant.yaml of the head = %q", data)
					}
					return Check{Context: "gitpeer/verify", State: tc.check, Description: "offline checks"}, testFacts().Checks
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.Action != tc.want || res.PullRequest.State != tc.state {
				t.Fatalf("Sync: %s, pull request %s; want %s, %s", res.Action, res.PullRequest.State, tc.want, tc.state)
			}
		})
	}
}
