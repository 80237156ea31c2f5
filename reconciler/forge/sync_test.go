package forge

import (
	"context"
	"strings"
	"testing"
)

// TestSyncRequests replays, for GitHub and GitLab, what their APIs answer to the requests Sync
// sends through go-github and GitLab's client-go: the requests must be exactly the recorded ones.
func TestSyncRequests(t *testing.T) {
	for _, tc := range []struct {
		fixture  string
		request  bool
		provider Provider
		want     Action
		state    State
	}{
		{"github-open", false, GitHub, Opened, Open},
		{"github-update", false, GitHub, Updated, Open},
		{"github-closed", false, GitHub, WasClosed, Closed},
		// A closed request keeps its branch: no DELETE is recorded.
		{"github-request-closed", true, GitHub, WasClosed, Closed},
		{"github-reproposed", false, GitHub, Opened, Open},
		{"gitlab-open", false, GitLab, Opened, Open},
		{"gitlab-update", false, GitLab, Updated, Open},
		{"gitlab-merged", false, GitLab, WasMerged, Merged},
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
				Verify: func(_ context.Context, read func(string) ([]byte, error)) []string {
					data, err := read("hub/edge-1/tenant.yaml")
					if err != nil {
						t.Fatalf("read tenant.yaml of the head: %v", err)
					}
					if string(data) != "kind: Tenant\n" {
						t.Fatalf("tenant.yaml of the head = %q", data)
					}
					return testFacts().Checks
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

// pushedMeanwhile is a forge whose open pull request's head moves while Sync runs: Find reports
// the head the proposer's checks read, Edit answers with a newer one (someone pushed to the review
// branch in between).
type pushedMeanwhile struct {
	pr    PullRequest
	reads []string
}

func (f *pushedMeanwhile) Find(context.Context, string, string) (*PullRequest, error) {
	pr := f.pr
	return &pr, nil
}

func (f *pushedMeanwhile) Create(context.Context, string, string, string, string) (*PullRequest, error) {
	panic("unexpected Create")
}

func (f *pushedMeanwhile) Edit(_ context.Context, _ int64, title, body string) (*PullRequest, error) {
	f.pr.Title, f.pr.Body, f.pr.Head = title, body, "b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0"
	pr := f.pr
	return &pr, nil
}

func (f *pushedMeanwhile) DeleteBranch(context.Context, string) error {
	panic("unexpected DeleteBranch")
}

func (f *pushedMeanwhile) ReadFile(_ context.Context, ref, _ string) ([]byte, error) {
	f.reads = append(f.reads, ref)
	return []byte("kind: Tenant\n"), nil
}

// TestSyncSetsNoReviewSignal: the proposer's agent never posts the check a reviewer relies on (it
// would vouch for its own proposal, and a push between its read and its post got the old
// verdict: Client has no way to post a status any more); its own checks go in the description,
// labelled as its claim and naming the exact commit they read.
func TestSyncSetsNoReviewSignal(t *testing.T) {
	const read = "a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1"
	f := &pushedMeanwhile{pr: PullRequest{Number: 7, State: Open, Head: read, Body: "old"}}
	res, err := Sync(context.Background(), f, Proposal{
		Head: "gitpeer/hub/edge-1", Base: "main", Title: "Peering: edge-1 asks hub for an identity", Facts: testFacts(),
		Verify: func(_ context.Context, rd func(string) ([]byte, error)) []string {
			if _, err := rd("hub/edge-1/tenant.yaml"); err != nil {
				t.Fatal(err)
			}
			return []string{"passed: hub/edge-1/tenant.yaml"}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.reads) != 1 || f.reads[0] != read || !strings.Contains(res.PullRequest.Body, "The proposer's own checks of "+read+"\n") ||
		!strings.Contains(res.PullRequest.Body, "not the review signal") {
		t.Errorf("checks read %q; the description must name the commit read, %s:\n%s", f.reads, read, res.PullRequest.Body)
	}
}
