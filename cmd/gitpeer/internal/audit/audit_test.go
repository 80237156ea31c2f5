package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// history builds, with the git CLI, the history the agents and a reviewer
// leave in a repository: request and nonce by the agents, the Tenant on a
// review branch merged by Rita Reviewer, the identity, a renewal, then a
// revocation pull request merged by Otto Owner and the provider's revoke.
type history struct {
	t    *testing.T
	dir  string
	tick time.Time
}

func newHistory(t *testing.T) *history {
	h := &history{t: t, dir: t.TempDir(), tick: time.Date(2030, 1, 2, 3, 4, 0, 0, time.UTC)}
	h.git("Init", "init", "-q", "-b", "main")
	return h
}

// git runs git as author (a "Name" or "Name|email"), one minute after the
// previous call.
func (h *history) git(author string, args ...string) {
	h.t.Helper()
	h.tick = h.tick.Add(time.Minute)
	name, email, _ := strings.Cut(author, "|")
	if email == "" {
		email = strings.ToLower(strings.ReplaceAll(name, " ", ".")) + "@example.com"
	}
	cmd := exec.Command("git", args...)
	cmd.Dir = h.dir
	date := h.tick.Format(time.RFC3339)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME="+name, "GIT_AUTHOR_EMAIL="+email, "GIT_AUTHOR_DATE="+date,
		"GIT_COMMITTER_NAME="+name, "GIT_COMMITTER_EMAIL="+email, "GIT_COMMITTER_DATE="+date)
	if out, err := cmd.CombinedOutput(); err != nil {
		h.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// agent commits files (path -> content, "" deletes) with trailers, as gitsync does.
func (h *history) agent(subject, action, provider, consumer string, files map[string]string, extra ...string) {
	h.t.Helper()
	h.change(files)
	msg := fmt.Sprintf("%s\n\nGitpeer-Action: %s\nGitpeer-Provider: %s\nGitpeer-Consumer: %s\n", subject, action, provider, consumer)
	for _, e := range extra {
		msg += e + "\n"
	}
	h.git("gitpeer|gitpeer@localhost", "commit", "-q", "--allow-empty", "-m", msg)
}

func (h *history) change(files map[string]string) {
	h.t.Helper()
	for p, content := range files {
		full := filepath.Join(h.dir, p)
		if content == "" {
			h.git("x", "rm", "-q", p)
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			h.t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			h.t.Fatal(err)
		}
		h.git("x", "add", p)
	}
}

func buildHistory(t *testing.T, root string) *history {
	h := newHistory(t)
	d := filepath.Join(root, "provider-a", "consumer-1") + "/"
	h.change(map[string]string{"README.md": "peers\n"})
	h.git("Admin", "commit", "-q", "-m", "Initial commit")
	h.agent("Request peering of consumer-1 with provider-a", "request", "provider-a", "consumer-1", map[string]string{d + "request.yaml": "r"})
	h.agent("Issue nonce for consumer-1 on provider-a", "issue-nonce", "provider-a", "consumer-1", map[string]string{d + "nonce.yaml": "n1"})
	h.git("x", "checkout", "-q", "-b", "gitpeer/provider-a/consumer-1")
	h.agent("Propose Tenant of consumer-1 for provider-a", "propose-tenant", "provider-a", "consumer-1", map[string]string{d + "tenant.yaml": "t"})
	h.git("x", "checkout", "-q", "main")
	h.git("Rita Reviewer", "merge", "-q", "--no-ff", "-m", "Merge pull request #1 from gitpeer/provider-a/consumer-1", "gitpeer/provider-a/consumer-1")
	h.agent("Issue identity of consumer-1 on provider-a (serial ab12)", "issue-identity", "provider-a", "consumer-1",
		map[string]string{d + "identity.yaml": "i1", d + "nonce.yaml": "n2"}, "Gitpeer-Serial: ab12", "Gitpeer-Expires: 2030-01-03T03:00:00Z")
	h.agent("Renew identity of consumer-1 on provider-a (serial cd34)", "renew-identity", "provider-a", "consumer-1",
		map[string]string{d + "identity.yaml": "i2"}, "Gitpeer-Serial: cd34", "Gitpeer-Expires: 2030-01-04T03:00:00Z")
	// A second consumer requests by hand (gitpeer request), straight on main.
	h.change(map[string]string{filepath.Join(root, "provider-a", "consumer-2", "request.yaml"): "r2"})
	h.git("Carla Consumer", "commit", "-q", "-m", "Request peering of consumer-2 with provider-a")
	h.git("x", "checkout", "-q", "-b", "revoke-consumer-1")
	h.change(map[string]string{d + "tenant.yaml": ""})
	h.git("Otto Owner", "commit", "-q", "-m", "Revoke consumer-1")
	h.git("x", "checkout", "-q", "main")
	h.git("Otto Owner", "merge", "-q", "--no-ff", "-m", "Merge pull request #2 from revoke-consumer-1", "revoke-consumer-1")
	h.agent("Revoke identity of consumer-1 on provider-a", "revoke", "provider-a", "consumer-1", map[string]string{d + "identity.yaml": "", d + "nonce.yaml": ""})
	// Unmerged review branch: never part of the timeline.
	h.git("x", "checkout", "-q", "-b", "gitpeer/provider-a/consumer-2")
	h.agent("Propose Tenant of consumer-2 for provider-a", "propose-tenant", "provider-a", "consumer-2", map[string]string{filepath.Join(root, "provider-a", "consumer-2", "tenant.yaml"): "t2"})
	h.git("x", "checkout", "-q", "main")
	return h
}

func TestTimeline(t *testing.T) {
	h := buildHistory(t, ".")
	events, err := Read(filepath.Join(h.dir, "provider-a"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range events {
		got = append(got, fmt.Sprintf("%s %s/%s by %s: %s%s", e.Event, e.Provider, e.Consumer, e.By.Name, e.Details, e.Serial))
	}
	want := []string{
		"requested provider-a/consumer-1 by gitpeer: Request peering of consumer-1 with provider-a",
		"nonce-issued provider-a/consumer-1 by gitpeer: Issue nonce for consumer-1 on provider-a",
		"tenant-proposed provider-a/consumer-1 by gitpeer: Propose Tenant of consumer-1 for provider-a",
		"approved provider-a/consumer-1 by Rita Reviewer: tenant.yaml merged by Rita Reviewer: Merge pull request #1 from gitpeer/provider-a/consumer-1",
		"identity-issued provider-a/consumer-1 by gitpeer: Issue identity of consumer-1 on provider-a (serial ab12)ab12",
		"identity-renewed provider-a/consumer-1 by gitpeer: Renew identity of consumer-1 on provider-a (serial cd34)cd34",
		"requested provider-a/consumer-2 by Carla Consumer: request.yaml committed directly to the branch",
		"revoked provider-a/consumer-1 by Otto Owner: tenant.yaml deleted, merged by Otto Owner: Merge pull request #2 from revoke-consumer-1",
		"revoked provider-a/consumer-1 by gitpeer: Revoke identity of consumer-1 on provider-a",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("timeline:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	approved := events[3]
	if !approved.Merge || approved.By.Email != "rita.reviewer@example.com" || approved.Time != time.Date(2030, 1, 2, 3, 16, 0, 0, time.UTC) {
		t.Fatalf("approval: %+v", approved)
	}
}

func TestFiltersAndPath(t *testing.T) {
	h := buildHistory(t, "peers")
	for _, tc := range []struct {
		opts Options
		want int
	}{
		{Options{Path: "peers"}, 9},
		{Options{Path: "peers/"}, 9},
		{Options{}, 6}, // wrong root: only the trailer events remain
		{Options{Path: "peers", Consumer: "consumer-2"}, 1},
		{Options{Path: "peers", Provider: "provider-b"}, 0},
		{Options{Path: "peers", Since: time.Date(2030, 1, 2, 3, 14, 0, 0, time.UTC)}, 7},
		{Options{Path: "peers", Branch: "gitpeer/provider-a/consumer-2"}, 11}, // read as if authoritative: its tip is a direct approval,
	} {
		events, err := Read(h.dir, tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		if len(events) != tc.want {
			t.Errorf("%+v: %d events, want %d: %+v", tc.opts, len(events), tc.want, events)
		}
	}
	if _, err := Read(h.dir, Options{Branch: "nope"}); err == nil || !strings.Contains(err.Error(), `branch "nope" not found`) {
		t.Fatalf("missing branch: %v", err)
	}
}

func TestPrint(t *testing.T) {
	h := buildHistory(t, ".")
	events, err := Read(h.dir, Options{Consumer: "consumer-1"})
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	if err := Print(&table, events, ""); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(table.String()), "\n")
	if !strings.HasPrefix(lines[0], "TIME ") || !strings.Contains(lines[0], " BY ") || !strings.Contains(lines[0], " SOURCE ") || len(lines) != 9 {
		t.Fatalf("table:\n%s", table.String())
	}
	if !strings.Contains(table.String(), "approved") || !strings.Contains(lines[4], "Rita Reviewer") || !strings.Contains(lines[5], "serial ab12, expires 2030-01-03T03:00:00Z") {
		t.Fatalf("table:\n%s", table.String())
	}
	var wide bytes.Buffer
	if err := Print(&wide, events, "wide"); err != nil {
		t.Fatal(err)
	}
	lines = strings.Split(strings.TrimSpace(wide.String()), "\n")
	if !strings.Contains(lines[0], " COMMITTER ") || !strings.Contains(lines[0], " MERGE ") || len(lines) != 9 ||
		!strings.Contains(lines[4], events[3].Commit) || !strings.Contains(lines[4], events[3].Committer.Name) || !events[3].Merge || !strings.Contains(lines[4], " true ") {
		t.Fatalf("wide table:\n%s", wide.String())
	}
	var js bytes.Buffer
	if err := Print(&js, events, "json"); err != nil {
		t.Fatal(err)
	}
	var decoded []map[string]any
	if err := json.Unmarshal(js.Bytes(), &decoded); err != nil || len(decoded) != 8 || decoded[3]["by"].(map[string]any)["name"] != "Rita Reviewer" {
		t.Fatalf("json (%v):\n%s", err, js.String())
	}
}

// TestRoundCommit reads one agent commit carrying several steps (one round of
// the provider: its terms, a nonce for one consumer, an identity for another),
// each with its own trailers, as one event per step.
func TestRoundCommit(t *testing.T) {
	h := newHistory(t)
	h.change(map[string]string{"provider-a/terms.yaml": "t", "provider-a/consumer-1/nonce.yaml": "n", "provider-a/consumer-2/identity.yaml": "i"})
	h.git("gitpeer|gitpeer@localhost", "commit", "-q", "-m", "gitpeer on provider-a: 3 changes\n\n"+
		"Gitpeer-Action: publish-terms\nGitpeer-Provider: provider-a\nGitpeer-Summary: Publish the terms of provider-a\n"+
		"Gitpeer-Action: issue-nonce\nGitpeer-Provider: provider-a\nGitpeer-Consumer: consumer-1\nGitpeer-Summary: Issue nonce for consumer-1 on provider-a\n"+
		"Gitpeer-Action: issue-identity\nGitpeer-Provider: provider-a\nGitpeer-Consumer: consumer-2\nGitpeer-Summary: Issue identity of consumer-2 on provider-a (serial ab12)\nGitpeer-Serial: ab12\nGitpeer-Expires: 2030-01-03T03:00:00Z\n")
	events, err := Read(h.dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range events {
		got = append(got, fmt.Sprintf("%s %s/%s: %s|%s|%s", e.Event, e.Provider, e.Consumer, e.Details, e.Serial, e.Expires))
	}
	want := []string{
		"terms-published provider-a/: Publish the terms of provider-a||",
		"nonce-issued provider-a/consumer-1: Issue nonce for consumer-1 on provider-a||",
		"identity-issued provider-a/consumer-2: Issue identity of consumer-2 on provider-a (serial ab12)|ab12|2030-01-03T03:00:00Z",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
