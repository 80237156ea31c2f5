package records

import (
	"bytes"
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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/gitpeer/gitpeer/cmd/gitpeer/internal/printer"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/examples/repofixture"
	"github.com/gitpeer/gitpeer/reconciler/plan/provider"
	"github.com/gitpeer/gitpeer/vocabulary"
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
	// key, if set, signs the agent's commits.
	key  *repofixture.AgentKey
	sign bool
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
	opts := &git.CommitOptions{Author: sig, Committer: sig, AllowEmptyCommits: true}
	if h.sign && h.key != nil {
		opts.Signer = h.key.Signer
	}
	h.sign = false
	if _, err := h.wt.Commit(message, opts); err != nil {
		h.t.Fatal(err)
	}
	return when
}

// agent commits files with the agent's trailers, as gitsync writes them,
// signed with h.key if set.
func (h *history) agent(action, provider, consumer string, files map[string][]byte, extra ...string) time.Time {
	h.t.Helper()
	h.sign = true
	msg := fmt.Sprintf("%s of %s on %s\n\nGitpeer-Action: %s\nGitpeer-Provider: %s\nGitpeer-Consumer: %s\n", action, consumer, provider, action, provider, consumer)
	for _, e := range extra {
		msg += e + "\n"
	}
	return h.commit(msg, files)
}

// tenant returns a consumer's request.yaml and tenant.yaml, and its key's pin.
func tenant(t *testing.T, consumer string) ([]byte, []byte, string) {
	t.Helper()
	p, err := repofixture.Build("provider-a", consumer, repofixture.TenantProposed, repofixture.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pin, err := crypto.KeyPin(p.Key.Public())
	if err != nil {
		t.Fatal(err)
	}
	return p.Files["request.yaml"], p.Files["tenant.yaml"], pin
}

// TestRebuild: the records rebuilt from a history of issuance, renewal,
// revocation (by a person removing tenant.yaml, then the agent) and
// re-issuance under a new key, the agent's commits signed, are what the
// provider kept, and the Secret printed is read by the agent's own reader,
// which refuses revival while a revoked certificate is unexpired.
func TestRebuild(t *testing.T) {
	h := newHistory(t)
	h.key = agentKey(t)
	ca := newCA(t)
	first, second, other := newPeer(t, ca, "consumer-1"), newPeer(t, ca, "consumer-1"), newPeer(t, ca, "consumer-2")
	day := 24 * time.Hour

	h.commit("Initial commit", map[string][]byte{"README.md": []byte("peers\n")})
	h.commit("Approve consumer-1", approval(first))
	e0 := first.issue(h, "issue-identity", start.Add(5*time.Minute)) // expired by the revocation: kept, it expires by itself
	a1 := first.issue(h, "renew-identity", start.Add(day))
	b2 := first.issue(h, "renew-identity", start.Add(2*day))
	h.agent("issue-identity", "provider-b", "consumer-1", map[string][]byte{filepath.Join("peers", "provider-b", "consumer-1", "identity.yaml"): []byte("x")},
		"Gitpeer-Serial: ff", "Gitpeer-Expires: "+start.Add(3*day).Format(time.RFC3339)) // another provider
	revokedAt := h.commit("Revoke consumer-1", map[string][]byte{first.path(vocabulary.TenantFile): nil})
	h.agent("revoke", "provider-a", "consumer-1", map[string][]byte{first.path(vocabulary.IdentityFile): nil})
	h.commit("Approve consumer-1 again, new key", approval(second))
	c3 := second.issue(h, "issue-identity", start.Add(day+time.Hour))
	d4 := other.issue(h, "issue-identity", start.Add(day)) // no tenant.yaml: no pin
	h.agent("renew-identity", "provider-a", "consumer-2", nil, "Gitpeer-Serial: d5", "Gitpeer-Expires: tomorrow")
	h.agent("renew-identity", "provider-a", "consumer-2", nil, "Gitpeer-Serial: not-hex", "Gitpeer-Expires: 2030-01-04T00:00:00Z")

	res, err := Rebuild(filepath.Join(h.dir, "peers"), Options{Path: "peers", Provider: "provider-a", AgentKeys: h.key.Trusted})
	if err != nil {
		t.Fatal(err)
	}
	c1, c2 := res.Records["consumer-1"], res.Records["consumer-2"]
	got := describe(c1) + " | " + describe(c2)
	want := fmt.Sprintf("pin %s: %s until %s revoked %s, %s until %s revoked %s, %s until %s revoked %s, %s until %s | pin : %s until %s",
		second.pin[:8], e0, stamp(start.Add(5*time.Minute)), stamp(revokedAt), a1, stamp(start.Add(day)), stamp(revokedAt), b2, stamp(start.Add(2*day)), stamp(revokedAt),
		c3, stamp(start.Add(day+time.Hour)), d4, stamp(start.Add(day)))
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
			applied.Labels[vocabulary.OwnerLabel] != "uid-1" || applied.Labels[vocabulary.ManagedByLabel] != "gitpeer" || len(applied.Data) != 1 {
			t.Fatalf("secret: %+v", applied.ObjectMeta)
		}
		for consumer := range applied.Data {
			if applied.Name != vocabulary.RecordsSecretName("peering", consumer) {
				t.Errorf("records of %s in %s", consumer, applied.Name)
			}
			shard[consumer] = applied
		}
	}
	applied := shard["consumer-1"]
	read, err := vocabulary.DecodeRecords(applied, "consumer-1")
	if err != nil || describe(read) != describe(c1) {
		t.Fatalf("the agent reads %s (%v), want %s", describe(read), err, describe(c1))
	}
	for _, tc := range []struct {
		now  time.Time
		want string
	}{
		{revokedAt.Add(time.Hour), b2},       // both revoked certificates are unexpired: the longest-valid one blocks
		{start.Add(day + time.Minute), b2},   // a1 expired
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
	if read, err := vocabulary.DecodeRecords(unowned[0], "consumer-1"); err != nil || describe(read) != describe(c1) {
		t.Fatalf("without an owner UID the agent reads %s (%v)", describe(read), err)
	}
	if err := vocabulary.SetRecords(unowned[0], "uid-2", "consumer-3", vocabulary.ConsumerRecords{}); err != nil ||
		unowned[0].Labels[vocabulary.OwnerLabel] != "uid-2" || len(unowned[0].Data) != 2 {
		t.Fatalf("the agent's next write: %v, %+v", err, unowned[0].ObjectMeta)
	}
	// Certificates expired when the records are rebuilt are left out, as the agent drops them.
	later, err := Secrets("gitpeer-system", "peering", "", res.Records, start.Add(day+time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if read, err := vocabulary.DecodeRecords(later[0], "consumer-1"); err != nil || strings.Contains(describe(read), a1+" until") || strings.Contains(describe(read), e0+" until") || !strings.Contains(describe(read), b2+" until") {
		t.Fatalf("rebuilt later: %s (%v), want %s and %s dropped", describe(read), err, e0, a1)
	}
}

// TestRebuildRevokeCommitOnly: with a peering root that is not the repository's,
// neither the identity.yaml files nor the tenant.yaml removals are seen, but
// the agent's signed identity and revoke commits are.
func TestRebuildRevokeCommitOnly(t *testing.T) {
	h := newHistory(t)
	h.key = agentKey(t)
	p := newPeer(t, newCA(t), "consumer-1")
	h.commit("Approve consumer-1", approval(p))
	a1 := p.issue(h, "issue-identity", start.Add(time.Hour))
	revokedAt := h.agent("revoke", "provider-a", "consumer-1", nil)
	res, err := Rebuild(h.dir, Options{Path: "other", Provider: "provider-a", AgentKeys: h.key.Trusted})
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("pin : %s until %s revoked %s", a1, stamp(start.Add(time.Hour)), stamp(revokedAt))
	if got := describe(res.Records["consumer-1"]); got != want || len(res.Warnings) != 1 {
		t.Fatalf("records %s, want %s; warnings %q", got, want, res.Warnings)
	}
	if res, err = Rebuild(h.dir, Options{Path: "peers", Provider: "provider-a", AgentKeys: h.key.Trusted}); err != nil || res.Records["consumer-1"].PinnedKey != p.pin {
		t.Fatalf("with the right root: %v, %+v", err, res)
	}
	if _, err := Rebuild(h.dir, Options{}); err == nil {
		t.Fatal("no provider: no error")
	}
}

func agentKey(t *testing.T) *repofixture.AgentKey {
	t.Helper()
	key, err := repofixture.NewAgentKey()
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// roundTrip prints secrets as `gitpeer records` does (a List) and reads them
// back as the API server stores them after `kubectl apply`.
func roundTrip(t *testing.T, secrets []*corev1.Secret) []*corev1.Secret {
	t.Helper()
	var out bytes.Buffer
	if err := printer.WriteObject(&out, printer.YAML, NewList(secrets)); err != nil {
		t.Fatal(err)
	}
	var applied struct {
		metav1.TypeMeta `json:",inline"`
		metav1.ListMeta `json:"metadata"`
		Items           []*corev1.Secret `json:"items"`
	}
	if err := yaml.UnmarshalStrict(out.Bytes(), &applied); err != nil || applied.Kind != "List" || applied.APIVersion != "v1" {
		t.Fatalf("%v\n%s", err, out.String())
	}
	return applied.Items
}

func describe(r vocabulary.ConsumerRecords) string {
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
