package records

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/gitpeer/gitpeer/reconciler"
	"github.com/gitpeer/gitpeer/reconciler/provider"
	"github.com/gitpeer/gitpeer/test/repofixture"
)

// history builds a repository's history with go-git, one commit a minute.
type history struct {
	t    *testing.T
	dir  string
	wt   *git.Worktree
	tick time.Time
	// when, if set, dates the next commit instead; dates dates the commits
	// whose subject it names.
	when  time.Time
	dates map[string]time.Time
}

var start = time.Date(2030, 1, 2, 3, 0, 0, 0, time.UTC)

func newHistory(t *testing.T) *history {
	dir := t.TempDir()
	repo, err := git.PlainInitWithOptions(dir, &git.PlainInitOptions{InitOptions: git.InitOptions{DefaultBranch: plumbing.NewBranchReferenceName("main")}})
	if err != nil {
		t.Fatal(err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	return &history{t: t, dir: dir, wt: wt, tick: start}
}

// commit writes files (path -> content; nil deletes) and commits them with
// message, one minute after the previous commit, and returns its time.
func (h *history) commit(message string, files map[string][]byte) time.Time {
	h.t.Helper()
	for p, content := range files {
		var err error
		if content == nil {
			_, err = h.wt.Remove(p)
		} else if err = os.MkdirAll(filepath.Dir(filepath.Join(h.dir, p)), 0o755); err == nil {
			if err = os.WriteFile(filepath.Join(h.dir, p), content, 0o644); err == nil {
				_, err = h.wt.Add(p)
			}
		}
		if err != nil {
			h.t.Fatal(err)
		}
	}
	h.tick = h.tick.Add(time.Minute)
	when := h.tick
	subject, _, _ := strings.Cut(message, "\n")
	if d, ok := h.dates[subject]; ok {
		when = d
	}
	if !h.when.IsZero() {
		when, h.when = h.when, time.Time{}
	}
	sig := &object.Signature{Name: "gitpeer", Email: "gitpeer@localhost", When: when}
	if _, err := h.wt.Commit(message, &git.CommitOptions{Author: sig, Committer: sig, AllowEmptyCommits: true}); err != nil {
		h.t.Fatal(err)
	}
	return when
}

// agent commits files with the agent's trailers, as gitsync writes them.
func (h *history) agent(action, provider, consumer string, files map[string][]byte, extra ...string) time.Time {
	h.t.Helper()
	msg := fmt.Sprintf("%s of %s on %s\n\nGitpeer-Action: %s\nGitpeer-Provider: %s\nGitpeer-Consumer: %s\n", action, consumer, provider, action, provider, consumer)
	for _, e := range extra {
		msg += e + "\n"
	}
	return h.commit(msg, files)
}

// identity commits an identity of provider for consumer with serial and
// expiry trailers.
func (h *history) identity(action, provider, consumer, serial string, expires time.Time) time.Time {
	h.t.Helper()
	return h.agent(action, provider, consumer, map[string][]byte{filepath.Join("peers", provider, consumer, "identity.yaml"): []byte(serial)},
		"Gitpeer-Serial: "+serial, "Gitpeer-Expires: "+expires.Format(time.RFC3339))
}

func tenant(t *testing.T, consumer string) ([]byte, string) {
	t.Helper()
	p, err := repofixture.Build("provider-a", consumer, repofixture.TenantProposed, repofixture.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pin, err := reconciler.KeyPin(p.Key.Public())
	if err != nil {
		t.Fatal(err)
	}
	return p.Files["tenant.yaml"], pin
}

// TestRebuild: the records rebuilt from a history of issuance, renewal,
// revocation (by a person removing tenant.yaml, then the agent) and
// re-issuance under a new key are what the provider kept, and the Secret
// printed is read by the agent's own reader, which refuses revival while a
// revoked certificate is unexpired.
func TestRebuild(t *testing.T) {
	h := newHistory(t)
	tenant1 := filepath.Join("peers", "provider-a", "consumer-1", "tenant.yaml")
	first, _ := tenant(t, "consumer-1")
	second, secondPin := tenant(t, "consumer-1")
	day := 24 * time.Hour

	h.commit("Initial commit", map[string][]byte{"README.md": []byte("peers\n")})
	h.commit("Approve consumer-1", map[string][]byte{tenant1: first})
	h.identity("issue-identity", "provider-a", "consumer-1", "e0", start.Add(5*time.Minute)) // expired by the revocation
	h.identity("renew-identity", "provider-a", "consumer-1", "a1", start.Add(day))
	h.identity("renew-identity", "provider-a", "consumer-1", "b2", start.Add(2*day))
	h.identity("issue-identity", "provider-b", "consumer-1", "ff", start.Add(3*day)) // another provider
	revokedAt := h.commit("Revoke consumer-1", map[string][]byte{tenant1: nil})
	h.agent("revoke", "provider-a", "consumer-1", map[string][]byte{filepath.Join("peers", "provider-a", "consumer-1", "identity.yaml"): nil})
	h.commit("Approve consumer-1 again, new key", map[string][]byte{tenant1: second})
	h.identity("issue-identity", "provider-a", "consumer-1", "c3", start.Add(day+time.Hour))
	h.identity("issue-identity", "provider-a", "consumer-2", "d4", start.Add(day)) // no tenant.yaml: no pin
	h.agent("renew-identity", "provider-a", "consumer-2", nil, "Gitpeer-Serial: d5", "Gitpeer-Expires: tomorrow")
	h.agent("renew-identity", "provider-a", "consumer-2", nil, "Gitpeer-Serial: not-hex", "Gitpeer-Expires: 2030-01-04T00:00:00Z")

	res, err := Rebuild(filepath.Join(h.dir, "peers"), Options{Path: "peers", Provider: "provider-a"})
	if err != nil {
		t.Fatal(err)
	}
	c1, c2 := res.Records["consumer-1"], res.Records["consumer-2"]
	got := describe(c1) + " | " + describe(c2)
	want := fmt.Sprintf("pin %s: a1 until %s revoked %s, b2 until %s revoked %s, c3 until %s | pin : d4 until %s",
		secondPin[:8], stamp(start.Add(day)), stamp(revokedAt), stamp(start.Add(2*day)), stamp(revokedAt), stamp(start.Add(day+time.Hour)), stamp(start.Add(day)))
	if got != want || len(res.Records) != 2 {
		t.Fatalf("records:\n%s\nwant:\n%s\n(%d consumers)", got, want, len(res.Records))
	}
	if len(res.Warnings) != 3 || !strings.Contains(res.Warnings[0], "Gitpeer-Expires") || !strings.Contains(res.Warnings[1], "Gitpeer-Serial") ||
		!strings.Contains(res.Warnings[2], "key pin of consumer-2") {
		t.Fatalf("warnings: %q", res.Warnings)
	}

	secrets, err := Secrets("gitpeer-system", "peering", "uid-1", res.Records, start)
	if err != nil {
		t.Fatal(err)
	}
	list := roundTrip(t, secrets)
	if len(list) != 2 || list[0].Name == list[1].Name {
		t.Fatalf("%d Secrets, want one per consumer here (two shards)", len(list))
	}
	shard := map[string]*corev1.Secret{}
	for _, applied := range list {
		if applied.Namespace != "gitpeer-system" || applied.Type != corev1.SecretTypeOpaque ||
			applied.Labels[reconciler.OwnerLabel] != "uid-1" || applied.Labels[reconciler.ManagedByLabel] != "gitpeer" || len(applied.Data) != 1 {
			t.Fatalf("secret: %+v", applied.ObjectMeta)
		}
		for consumer := range applied.Data {
			if applied.Name != reconciler.RecordsSecretName("peering", consumer) {
				t.Errorf("records of %s in %s", consumer, applied.Name)
			}
			shard[consumer] = applied
		}
	}
	applied := shard["consumer-1"]
	read, err := reconciler.DecodeRecords(applied, "consumer-1")
	if err != nil || describe(read) != describe(c1) {
		t.Fatalf("the agent reads %s (%v), want %s", describe(read), err, describe(c1))
	}
	for _, tc := range []struct {
		now  time.Time
		want string
	}{
		{revokedAt.Add(time.Hour), "b2"},     // both revoked certificates are unexpired: the longest-valid one blocks
		{start.Add(day + time.Minute), "b2"}, // a1 expired
		{start.Add(2*day + time.Second), ""}, // both expired: consumer-1 may be bound again
	} {
		blocker := provider.RevivalBlocker(read.Certificates, tc.now)
		if (blocker == nil) != (tc.want == "") || blocker != nil && blocker.Serial != tc.want {
			t.Errorf("at %s: revival blocked by %+v, want %q", stamp(tc.now), blocker, tc.want)
		}
	}
	unowned, err := Secrets("gitpeer-system", "peering", "", res.Records, start)
	if err != nil || len(unowned[0].Labels) != 1 {
		t.Fatalf("without an owner UID: %v, labels %v", err, unowned[0].Labels)
	}
	// The agent reads a Secret without the owner label alike, and its next write adds the label.
	if read, err := reconciler.DecodeRecords(unowned[0], "consumer-1"); err != nil || describe(read) != describe(c1) {
		t.Fatalf("without an owner UID the agent reads %s (%v)", describe(read), err)
	}
	if err := reconciler.SetRecords(unowned[0], "uid-2", "consumer-3", reconciler.ConsumerRecords{}); err != nil ||
		unowned[0].Labels[reconciler.OwnerLabel] != "uid-2" || len(unowned[0].Data) != 2 {
		t.Fatalf("the agent's next write: %v, %+v", err, unowned[0].ObjectMeta)
	}
	// Certificates expired when the records are rebuilt are left out, as the agent drops them.
	later, err := Secrets("gitpeer-system", "peering", "", res.Records, start.Add(day+time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if read, err := reconciler.DecodeRecords(later[0], "consumer-1"); err != nil || strings.Contains(describe(read), " a1 until") || !strings.Contains(describe(read), " b2 until") {
		t.Fatalf("rebuilt later: %s (%v), want a1 dropped", describe(read), err)
	}
}

// TestRebuildRevokeCommitOnly: with a peering root that is not the repository's,
// the tenant.yaml removals are not seen, but the agent's revoke commit is.
func TestRebuildRevokeCommitOnly(t *testing.T) {
	h := newHistory(t)
	t1, pin := tenant(t, "consumer-1")
	h.commit("Approve consumer-1", map[string][]byte{filepath.Join("peers", "provider-a", "consumer-1", "tenant.yaml"): t1})
	h.identity("issue-identity", "provider-a", "consumer-1", "a1", start.Add(time.Hour))
	revokedAt := h.agent("revoke", "provider-a", "consumer-1", nil)
	res, err := Rebuild(h.dir, Options{Path: "other", Provider: "provider-a"})
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("pin : a1 until %s revoked %s", stamp(start.Add(time.Hour)), stamp(revokedAt))
	if got := describe(res.Records["consumer-1"]); got != want || len(res.Warnings) != 1 {
		t.Fatalf("records %s, want %s; warnings %q", got, want, res.Warnings)
	}
	if res, err = Rebuild(h.dir, Options{Path: "peers", Provider: "provider-a"}); err != nil || res.Records["consumer-1"].PinnedKey != pin {
		t.Fatalf("with the right root: %v, %+v", err, res)
	}
	if _, err := Rebuild(h.dir, Options{}); err == nil {
		t.Fatal("no provider: no error")
	}
}

// roundTrip prints secrets as `gitpeer records` does (a List) and reads them
// back as the API server stores them after `kubectl apply`.
func roundTrip(t *testing.T, secrets []*corev1.Secret) []*corev1.Secret {
	t.Helper()
	out, err := yaml.Marshal(NewList(secrets))
	if err != nil {
		t.Fatal(err)
	}
	var applied List
	if err := yaml.UnmarshalStrict(out, &applied); err != nil || applied.Kind != "List" || applied.APIVersion != "v1" {
		t.Fatalf("%v\n%s", err, out)
	}
	return applied.Items
}

func describe(r reconciler.ConsumerRecords) string {
	pin := r.PinnedKey[:min(8, len(r.PinnedKey))]
	var certs []string
	for _, c := range r.Certificates {
		s := c.Serial + " until " + stamp(c.NotAfter)
		if c.RevokedAt != nil {
			s += " revoked " + stamp(*c.RevokedAt)
		}
		certs = append(certs, s)
	}
	return "pin " + pin + ": " + strings.Join(certs, ", ")
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }
