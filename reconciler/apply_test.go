package reconciler

import (
	"errors"
	"strings"
	"testing"

	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/gitsync"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/vocabulary"
)

func TestRoundMessage(t *testing.T) {
	nonce := gitStep{msg: protocol.Message{Subject: "Issue nonce for c1 on p", Action: vocabulary.ActionIssueNonce, Provider: "p", Consumer: "c1"},
		changes: []gitsync.FileChange{gitsync.Put("p/c1/nonce.yaml", []byte("n"))}}
	identity := gitStep{msg: protocol.Message{Subject: "Issue identity of c2 on p (serial 1f)", Action: vocabulary.ActionIssueIdentity, Provider: "p", Consumer: "c2",
		Extra: []protocol.Trailer{{Key: vocabulary.TrailerSerial, Value: "1f"}}},
		changes: []gitsync.FileChange{gitsync.Put("p/c2/identity.yaml", []byte("i")), gitsync.Put("p/c2/nonce.yaml", []byte("n"))}}
	unchanged := gitStep{msg: protocol.Message{Subject: "Renew identity of c3 on p (serial 2a)", Action: vocabulary.ActionRenewIdentity, Provider: "p", Consumer: "c3"}}

	t.Run("one step keeps its own message", func(t *testing.T) {
		msg, changes := roundMessage("p", []gitStep{unchanged, nonce})
		if msg.Subject != nonce.msg.Subject || msg.Action != vocabulary.ActionIssueNonce || len(changes) != 1 {
			t.Fatalf("got %+v, %d change(s)", msg, len(changes))
		}
	})
	t.Run("several steps: one commit, each step's trailers", func(t *testing.T) {
		msg, changes := roundMessage("p", []gitStep{nonce, unchanged, identity})
		if len(changes) != 3 {
			t.Fatalf("%d changes, want 3", len(changes))
		}
		text, err := msg.String()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(text, "gitpeer round of p: 1 issue-identity, 1 issue-nonce\n") || strings.Contains(text, "c3") {
			t.Fatalf("message:\n%s", text)
		}
		var got []string
		for _, tr := range protocol.ParseTrailers(text) {
			got = append(got, tr.Key+": "+tr.Value)
		}
		want := []string{
			"Gitpeer-Action: issue-nonce", "Gitpeer-Provider: p", "Gitpeer-Consumer: c1", "Gitpeer-Summary: Issue nonce for c1 on p",
			"Gitpeer-Action: issue-identity", "Gitpeer-Provider: p", "Gitpeer-Consumer: c2", "Gitpeer-Summary: Issue identity of c2 on p (serial 1f)", "Gitpeer-Serial: 1f",
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("trailers:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})
	t.Run("nothing left to write", func(t *testing.T) {
		if _, changes := roundMessage("p", []gitStep{unchanged}); len(changes) != 0 {
			t.Fatalf("%d changes", len(changes))
		}
	})
}

// TestFailPeerings: only the peerings named fail, with their error, and a
// peering that needed attention keeps its reason.
func TestFailPeerings(t *testing.T) {
	waiting := outcome{phase: gitpeerv1alpha1.PhaseNonceIssued, message: "waiting for the certificate to be signed (CSR requested)"}
	overdue := outcome{phase: gitpeerv1alpha1.PhaseIssued, message: "renewing", reason: gitpeerv1alpha1.RenewalOverdueReason}
	results := []result{
		{peer: "c1", role: gitpeerv1alpha1.ProviderRole, o: waiting},
		{peer: "c2", role: gitpeerv1alpha1.ProviderRole, o: overdue},
		{peer: "c1", role: gitpeerv1alpha1.ConsumerRole, o: waiting},
	}
	boom := errors.New("creating the CSR: boom")
	failPeerings(results, map[string]error{
		resultKey(gitpeerv1alpha1.ProviderRole, "c1"): boom,
		resultKey(gitpeerv1alpha1.ProviderRole, "c2"): boom,
	})
	want := []outcome{{err: boom}, {err: boom, reason: gitpeerv1alpha1.RenewalOverdueReason}, waiting}
	for i, res := range results {
		if res.o != want[i] {
			t.Errorf("%s %s: %+v, want %+v", res.role, res.peer, res.o, want[i])
		}
	}
}
