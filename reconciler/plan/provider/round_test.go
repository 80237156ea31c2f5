package provider

import (
	"fmt"
	"strings"
	"testing"
	"time"

	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1/documents"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// summary names a plan's actions, in order, as the table tests compare them.
func summary(p Plan) string {
	var out []string
	for _, a := range p.Actions {
		switch a := a.(type) {
		case Event:
			out = append(out, "Event "+a.Reason)
		case PutNonceSecret:
			out = append(out, "PutNonceSecret "+a.Nonce)
			if a.Exists {
				out[len(out)-1] += " replacing"
			}
		case Stage:
			var files []string
			for _, c := range a.Changes {
				op := "put "
				if c.Delete {
					op = "delete "
				}
				files = append(files, op+c.Path)
			}
			out = append(out, fmt.Sprintf("Stage %s [%s]", a.Message.Action, strings.Join(files, ", ")))
		default:
			out = append(out, strings.TrimPrefix(fmt.Sprintf("%T", a), "provider."))
		}
	}
	return strings.Join(out, "; ")
}

func nonceDoc(nonce string) *documents.Nonce {
	return &documents.Nonce{Spec: documents.NonceSpec{Nonce: nonce}}
}

// TestPlanOffer: each case of answering an admitted request with a nonce.
func TestPlanOffer(t *testing.T) {
	request := &documents.PeeringRequest{}
	docs := func(nonce *documents.Nonce) *protocol.Documents {
		return &protocol.Documents{Provider: "p", Consumer: "c", Request: request, Nonce: nonce}
	}
	stored, other := "n1", "n2"
	const put = "Stage " + vocabulary.ActionIssueNonce + " [put p/c/nonce.yaml]"
	waiting := Outcome{Phase: gitpeerv1alpha1.PhaseNonceIssued, Message: "waiting for a merged tenant.yaml"}
	forLiqo := Outcome{Phase: gitpeerv1alpha1.PhaseRequested, Message: "waiting for Liqo's nonce creator to fill Secret liqo-nonce"}
	for name, tc := range map[string]struct {
		s    Snapshot
		want string
		o    Outcome
	}{
		"new request: namespace, nonce, nonce.yaml": {Snapshot{Docs: docs(nil), FreshNonce: "f"}, "EnsureNamespace; PutNonceSecret f; " + put, waiting},
		"nonce Secret lost: a fresh one":            {Snapshot{Docs: docs(nonceDoc(stored)), Namespace: true, FreshNonce: "f"}, "PutNonceSecret f; " + put, waiting},
		"nonce.yaml matches the Secret":             {Snapshot{Docs: docs(nonceDoc(stored)), Namespace: true, Nonce: &stored}, "", waiting},
		"nonce.yaml stale: committed again":         {Snapshot{Docs: docs(nonceDoc(other)), Namespace: true, Nonce: &stored}, put, waiting},
		"quiet round, nonce.yaml on the branch":     {Snapshot{Docs: docs(nonceDoc(stored)), Namespace: true, Quiet: true}, "", waiting},
		"quiet round, no nonce.yaml: committed":     {Snapshot{Docs: docs(nil), Namespace: true, Quiet: true, Nonce: &stored}, put, waiting},
		"Liqo: an empty Secret for Liqo to fill":    {Snapshot{Docs: docs(nil), Liqo: true}, "EnsureNamespace; CreateLiqoNonce", forLiqo},
		"Liqo: Secret not filled yet":               {Snapshot{Docs: docs(nil), Liqo: true, Namespace: true, Nonce: new(string)}, "", forLiqo},
		"Liqo: Liqo's nonce committed":              {Snapshot{Docs: docs(nil), Liqo: true, Namespace: true, Nonce: &stored}, put, waiting},
	} {
		t.Run(name, func(t *testing.T) {
			p := PlanOffer(tc.s)
			if got := summary(p); got != tc.want {
				t.Errorf("actions:\n got %s\nwant %s", got, tc.want)
			}
			if p.Outcome != tc.o {
				t.Errorf("outcome = %+v, want %+v", p.Outcome, tc.o)
			}
		})
	}
}

// TestPlanOfferCommitsTheSecretsNonce: nonce.yaml holds the nonce the Secret
// holds, and the commit is announced once the branch holds it, pushed or not.
func TestPlanOfferCommitsTheSecretsNonce(t *testing.T) {
	fresh := crypto.GenerateNonce()
	p := PlanOffer(Snapshot{Docs: &protocol.Documents{Provider: "p", Consumer: "c"}, FreshNonce: fresh})
	stage := p.Actions[len(p.Actions)-1].(Stage)
	var got protocol.Documents
	if err := got.Decode(protocol.Path{Provider: "p", Consumer: "c", Kind: vocabulary.NonceFile}, stage.Changes[0].Content); err != nil {
		t.Fatal(err)
	}
	if got.Nonce.Spec.Nonce != fresh {
		t.Errorf("nonce.yaml holds %q, want the Secret's %q", got.Nonce.Spec.Nonce, fresh)
	}
	want := []Routine{{Reason: gitpeerv1alpha1.NonceIssuedReason, What: "nonce issued", Item: "c"}}
	if fmt.Sprint(stage.Routine) != fmt.Sprint(want) {
		t.Errorf("routine = %+v, want %+v", stage.Routine, want)
	}
}

// TestPlanRevoke: the cluster's objects go first (PlanRevocation), then
// the files, announced only by the commit that removes them; the certificate
// is no longer noted. A revocation that waits stages nothing.
func TestPlanRevoke(t *testing.T) {
	now := time.Now()
	docs := &protocol.Documents{Provider: "p", Consumer: "c"}
	p := PlanRevoke(Snapshot{Docs: docs, Revocation: &RevocationSnapshot{Consumer: "c", Namespace: "liqo-tenant-c"}}, now)
	want := "MarkRevoked; DeleteOwned; Stage " + vocabulary.ActionRevoke + " [delete p/c/identity.yaml, delete p/c/nonce.yaml, delete p/c/request.yaml]; NoteCertificate"
	if got := summary(p); got != want {
		t.Errorf("actions:\n got %s\nwant %s", got, want)
	}
	if p.Outcome.Phase != gitpeerv1alpha1.PhaseRevoked || p.Outcome.Message != "tenant.yaml removed: access revoked" {
		t.Errorf("outcome = %+v", p.Outcome)
	}
	if r := p.Actions[2].(Stage).Routine; len(r) != 1 || !r[0].IfPushed || r[0].Reason != gitpeerv1alpha1.RevokedReason {
		t.Errorf("routine = %+v", r)
	}
	if n := p.Actions[3].(NoteCertificate); n != (NoteCertificate{}) {
		t.Errorf("note = %+v, want none", n)
	}

	waiting := PlanRevoke(Snapshot{Docs: docs, Revocation: &RevocationSnapshot{Consumer: "c", Namespace: "liqo-tenant-c", Liqo: true, Bound: []string{"b"}}}, now)
	if got := summary(waiting); got != "MarkRevoked; DeleteOwned" || waiting.Outcome.Err == nil {
		t.Errorf("a waiting revocation: %s, %+v", got, waiting.Outcome)
	}
	if p := PlanRevoke(Snapshot{Docs: docs}, now); p.Outcome.Err == nil || len(p.Actions) > 0 {
		t.Errorf("without a revocation observed: %+v", p)
	}

	elsewhere := PlanRevoke(Snapshot{Docs: docs, Revocation: &RevocationSnapshot{Consumer: "c", Namespace: "liqo-tenant-c",
		Replicated: []LiqoObject{{Kind: "NamespaceMap", Namespace: "default", Name: "m"}}}}, now)
	if !strings.Contains(elsewhere.Outcome.Message, "access revoked; NamespaceMap default/m") {
		t.Errorf("what stands outside tenant namespaces is not in the message: %q", elsewhere.Outcome.Message)
	}
}

// TestPlanSkip: an invalid tenant.yaml does nothing but say so.
func TestPlanSkip(t *testing.T) {
	pe := &protocol.Documents{Provider: "p", Consumer: "c"}
	pe.MarkInvalid(vocabulary.TenantFile, protocol.ErrInvalid)
	p := PlanSkip(Snapshot{Docs: pe})
	if len(p.Actions) != 0 || p.Outcome.Phase != gitpeerv1alpha1.PhaseFailed || !strings.Contains(p.Outcome.Message, "skipped") {
		t.Errorf("plan = %+v", p)
	}
}

// TestPlanMode: a peering goes on in the mode its tenant namespace records,
// switches when a person accepted it, and is otherwise left alone.
func TestPlanMode(t *testing.T) {
	docs := &protocol.Documents{Provider: "p", Consumer: "c"}
	for name, tc := range map[string]struct {
		s       Snapshot
		want    string
		blocked bool
	}{
		"a new peering":                   {Snapshot{Mode: gitpeerv1alpha1.PeeringModeLiqo}, "", false},
		"made in this mode":               {Snapshot{Namespace: true, NamespaceMode: gitpeerv1alpha1.PeeringModeLiqo, Mode: gitpeerv1alpha1.PeeringModeLiqo}, "", false},
		"made by an earlier version":      {Snapshot{Namespace: true, Mode: gitpeerv1alpha1.PeeringModeStandalone}, "", false},
		"made in the other mode":          {Snapshot{Namespace: true, Mode: gitpeerv1alpha1.PeeringModeLiqo}, "Log; Event " + vocabulary.ReasonModeChanged, true},
		"switch accepted: recorded":       {Snapshot{Namespace: true, Mode: gitpeerv1alpha1.PeeringModeLiqo, SwitchAccepted: gitpeerv1alpha1.PeeringModeLiqo}, "RecordMode; RemoveAnnotation; Log; Event " + vocabulary.ReasonModeSwitched, false},
		"switch accepted to another mode": {Snapshot{Namespace: true, Mode: gitpeerv1alpha1.PeeringModeLiqo, SwitchAccepted: gitpeerv1alpha1.PeeringModeStandalone}, "Log; Event " + vocabulary.ReasonModeChanged, true},
	} {
		t.Run(name, func(t *testing.T) {
			tc.s.Docs = docs
			p, blocked := PlanMode(tc.s)
			if got := summary(p); got != tc.want || blocked != tc.blocked {
				t.Errorf("actions %q blocked %v, want %q %v", got, blocked, tc.want, tc.blocked)
			}
			if blocked && (p.Outcome.Phase != gitpeerv1alpha1.PhaseFailed || p.Outcome.Reason != vocabulary.ReasonModeChanged) {
				t.Errorf("outcome %+v", p.Outcome)
			}
		})
	}
}
