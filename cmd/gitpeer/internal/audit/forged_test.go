package audit

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/gitpeer/gitpeer/examples/repofixture"
)

// TestForgedTrailers: an unsigned commit, backdated to 1990 and authored as
// "gitpeer", that claims the agent revoked consumer-1 is read where the
// commit graph puts it (last), not where its date would sort it, and as a
// claim: it is not shown as the agent's.
func TestForgedTrailers(t *testing.T) {
	h := buildHistory(t, ".")
	h.tick = time.Date(1990, 1, 1, 0, 0, 0, 0, time.UTC)
	h.git("gitpeer|gitpeer@localhost", "commit", "-q", "--allow-empty", "-m",
		"Revoke identity of consumer-1 on provider-a\n\nGitpeer-Action: revoke\nGitpeer-Provider: provider-a\nGitpeer-Consumer: consumer-1\n")
	events, err := Read(h.dir, Options{Consumer: "consumer-1"})
	if err != nil {
		t.Fatal(err)
	}
	var js bytes.Buffer
	if err := Print(&js, events, "json"); err != nil {
		t.Fatal(err)
	}
	var decoded []map[string]any
	if err := json.Unmarshal(js.Bytes(), &decoded); err != nil {
		t.Fatal(err)
	}
	last := decoded[len(decoded)-1]
	if last["time"] != "1990-01-01T00:01:00Z" || last["event"] != Revoked {
		t.Fatalf("the backdated commit is not last: %s", js.String())
	}
	if last["source"] != SourceClaim {
		t.Fatalf("the forged revocation is shown as %v, want %q: %v", last["source"], SourceClaim, last)
	}
}

// TestAgentKeys: with the agent's key, the trailers of a commit it signed
// are the agent's (SourceAgent); the same trailers on unsigned commits, or
// on a commit signed with another key, stay claims; tree changes are
// SourceBranch.
func TestAgentKeys(t *testing.T) {
	h := buildHistory(t, ".")
	var keys [2]*repofixture.AgentKey
	for i := range keys {
		var err error
		if keys[i], err = repofixture.NewAgentKey(); err != nil {
			t.Fatal(err)
		}
	}
	agent, other := keys[0], keys[1]
	repo, err := git.PlainOpen(h.dir)
	if err != nil {
		t.Fatal(err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []*repofixture.AgentKey{agent, other} {
		sig := &object.Signature{Name: "gitpeer", Email: "gitpeer@localhost", When: time.Date(2030, 2, 1, 0, 0, 0, 0, time.UTC)}
		if _, err := wt.Commit("Renew identity of consumer-1 on provider-a (serial ef56)\n\nGitpeer-Action: renew-identity\nGitpeer-Provider: provider-a\nGitpeer-Consumer: consumer-1\nGitpeer-Serial: ef56\nGitpeer-Expires: 2030-02-02T00:00:00Z\n",
			&git.CommitOptions{Author: sig, Committer: sig, AllowEmptyCommits: true, Signer: key.Signer}); err != nil {
			t.Fatal(err)
		}
	}
	events, err := Read(h.dir, Options{Consumer: "consumer-1", AgentKeys: agent.Trusted})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range events {
		got = append(got, e.Event+" "+e.Source)
	}
	want := []string{
		"requested claim", "nonce-issued claim", "tenant-proposed claim", "approved branch", "identity-issued claim",
		"identity-renewed claim", "revoked branch", "revoked claim", "identity-renewed agent", "identity-renewed claim",
	}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Fatalf("sources:\n%s\nwant:\n%s", strings.Join(got, ", "), strings.Join(want, ", "))
	}
}

// TestGraphOrder: every commit comes after its parents, merges included, and
// the order does not change when the commits' dates do (buildHistory's
// dates increase; the forged commit's go back to 1990).
func TestGraphOrder(t *testing.T) {
	h := buildHistory(t, ".")
	h.tick = time.Date(1990, 1, 1, 0, 0, 0, 0, time.UTC)
	h.git("x", "merge", "-q", "--no-ff", "-m", "Merge the unmerged review branch", "gitpeer/provider-a/consumer-2")
	repo, head, err := Open(h.dir, "main")
	if err != nil {
		t.Fatal(err)
	}
	order, err := GraphOrder(repo, head)
	if err != nil {
		t.Fatal(err)
	}
	at := map[string]int{}
	for i, c := range order {
		at[c.String()] = i
	}
	if len(order) != 13 || order[len(order)-1] != head {
		t.Fatalf("%d commits, head last: %v", len(order), order[len(order)-1] == head)
	}
	for _, c := range order {
		commit, err := repo.CommitObject(c)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range commit.ParentHashes {
			if at[p.String()] >= at[c.String()] {
				t.Errorf("parent %s at %d, after its child %s at %d", p, at[p.String()], c, at[c.String()])
			}
		}
	}
}
