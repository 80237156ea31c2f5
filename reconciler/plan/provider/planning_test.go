package provider

import (
	"crypto/x509"
	"strings"
	"testing"
	"time"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1/documents"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/reconciler/plan/ownership"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// TestRoundPlan: every decision of planning one peering, from what was
// observed and the round so far: adoption and refusal of its tenant
// namespace and Tenant, a mode change, admission, the round's limit.
func TestRoundPlan(t *testing.T) {
	now := time.Now()
	key, _ := crypto.GenerateKey(crypto.Ed25519)
	merged := &authv1beta1.Tenant{Spec: authv1beta1.TenantSpec{Signature: []byte("sig"), CSR: []byte("csr")}}
	issued := func(notAfter time.Time) *authv1beta1.Tenant {
		crt := liqoCert(t, key, func(c *x509.Certificate) { c.NotBefore, c.NotAfter = now.Add(-30*24*time.Hour), notAfter })
		return &authv1beta1.Tenant{Spec: merged.Spec, Status: authv1beta1.TenantStatus{AuthParams: &authv1beta1.AuthParams{SignedCRT: crt}}}
	}
	fresh, due := issued(now.Add(365*24*time.Hour)), issued(now.Add(time.Hour))
	request := func() *protocol.Documents {
		return &protocol.Documents{Provider: "p", Consumer: "c", Request: &documents.PeeringRequest{}}
	}
	withTenant := &protocol.Documents{Provider: "p", Consumer: "c", Request: &documents.PeeringRequest{}, Nonce: nonceDoc("n"), Tenant: merged}
	ours := Namespace{Name: "liqo-tenant-c", Found: true, Owner: ownership.Ours}
	legacy := func(c ownership.Claim) Namespace {
		return Namespace{Name: "liqo-tenant-c", Found: true, Owner: ownership.Legacy, Claim: c}
	}
	migrating := ownership.Claim{Migrating: true, Listed: true, Sole: true}
	liqoMade := func(c ownership.LiqoClaim) Namespace {
		return Namespace{Name: "liqo-tenant-c", Found: true, Owner: ownership.Others, LiqoCreated: true, LiqoClaim: c, LiqoNonce: "uid"}
	}
	adoptable := ownership.LiqoClaim{LiqoMode: true, Listed: true, Sole: true}
	standalone := func(docs *protocol.Documents, ns Namespace) Peering {
		return Peering{Docs: docs, Namespace: ns, Mode: gitpeerv1alpha1.PeeringModeStandalone}
	}
	withTenantOf := func(p Peering, tenant *authv1beta1.Tenant, owner ownership.Owner) Peering {
		p.Tenant, p.TenantOwner = tenant, owner
		return p
	}
	failed, requested := gitpeerv1alpha1.PhaseFailed, gitpeerv1alpha1.PhaseRequested
	type want struct {
		step    Step
		opening string
		phase   gitpeerv1alpha1.PeeringPhase // "": not settled
		message string                       // substring of the settled outcome's message
		reason  string
		signs   bool
		held    bool
		after   Round
	}
	for name, tc := range map[string]struct {
		round Round
		p     Peering
		want  want
	}{
		"new request admitted, counted pending": {Round{MaxPending: 1}, standalone(request(), Namespace{Name: "liqo-tenant-c"}),
			want{step: OfferNonce, after: Round{MaxPending: 1, Pending: 1, Limit: RoundLimit{Acting: 1}}}},
		"request answered earlier: not counted again": {Round{Pending: 1, MaxPending: 1}, standalone(request(), ours),
			want{step: OfferNonce, after: Round{Pending: 1, MaxPending: 1, Limit: RoundLimit{Acting: 1}}}},
		"request beyond maxPendingRequests: deferred": {Round{Pending: 2, MaxPending: 2}, standalone(request(), Namespace{Name: "liqo-tenant-c"}),
			want{step: OfferNonce, phase: requested, reason: vocabulary.ReasonRequestsDeferred, message: "deferred: 2 pending requests (maxPendingRequests 2)", after: Round{Pending: 2, MaxPending: 2, Deferred: 1}}},
		"consumer not allowed: refused with an event": {Round{MaxPending: 1}, func() Peering {
			p := standalone(request(), Namespace{Name: "liqo-tenant-c"})
			p.Allowed = []string{"other-*"}
			return p
		}(), want{step: OfferNonce, opening: "Event " + vocabulary.ReasonRequestsDeferred, phase: failed, message: "not in allowedConsumers", after: Round{MaxPending: 1}}},
		"no request: nothing to answer": {Round{MaxPending: 1}, standalone(&protocol.Documents{Provider: "p", Consumer: "c"}, Namespace{Name: "liqo-tenant-c"}),
			want{step: OfferNonce, phase: gitpeerv1alpha1.PhaseRevoked, message: "no request", after: Round{MaxPending: 1}}},
		"round limit reached: request held back, not counted": {Round{MaxPending: 5, Limit: RoundLimit{Max: 1, Acting: 1}}, standalone(request(), Namespace{Name: "liqo-tenant-c"}),
			want{step: OfferNonce, phase: requested, message: "held back", held: true, after: Round{MaxPending: 5, Limit: RoundLimit{Max: 1, Acting: 1, Held: 1}}}},
		"round limit reached: issuance held back": {Round{Limit: RoundLimit{Max: 1, Acting: 1}}, standalone(withTenant, ours),
			want{step: Issue, phase: gitpeerv1alpha1.PhaseNonceIssued, message: "Tenant merged, not issued yet; held back", held: true, after: Round{Limit: RoundLimit{Max: 1, Acting: 1, Held: 1}}}},
		"round limit reached: renewal due held back": {Round{Limit: RoundLimit{Max: 1, Acting: 1}}, withTenantOf(standalone(withTenant, ours), due, ownership.Ours),
			want{step: Maintain, phase: gitpeerv1alpha1.PhaseIssued, message: "renewal held back", held: true, after: Round{Limit: RoundLimit{Max: 1, Acting: 1, Held: 1}}}},
		"round limit reached: a peering kept as it is still goes": {Round{Limit: RoundLimit{Max: 1, Acting: 1}}, withTenantOf(standalone(withTenant, ours), fresh, ownership.Ours),
			want{step: Maintain, after: Round{Limit: RoundLimit{Max: 1, Acting: 1}}}},
		"renewal due: signs": {Round{}, withTenantOf(standalone(withTenant, ours), due, ownership.Ours),
			want{step: Maintain, signs: true, after: Round{Limit: RoundLimit{Acting: 1}}}},
		"issuance: signs": {Round{}, standalone(withTenant, ours),
			want{step: Issue, signs: true, after: Round{Limit: RoundLimit{Acting: 1}}}},
		"issuance in Liqo mode: Liqo signs": {Round{}, func() Peering {
			p := standalone(withTenant, ours)
			p.Liqo, p.Mode, p.Namespace.Mode = true, gitpeerv1alpha1.PeeringModeLiqo, gitpeerv1alpha1.PeeringModeLiqo
			return p
		}(), want{step: Issue, after: Round{Limit: RoundLimit{Acting: 1}}}},
		"legacy namespace, one-time migration: adopted": {Round{MaxPending: 1}, standalone(request(), legacy(migrating)),
			want{step: OfferNonce, opening: "AdoptNamespace", after: Round{MaxPending: 1, Limit: RoundLimit{Acting: 1}}}},
		"legacy namespace and Tenant: both adopted": {Round{}, withTenantOf(standalone(withTenant, legacy(migrating)), fresh, ownership.Legacy),
			want{step: Maintain, opening: "AdoptNamespace"}},
		"legacy namespace, no migration nor annotation: refused": {Round{MaxPending: 1}, standalone(request(), legacy(ownership.Claim{Listed: true, Sole: true})),
			want{opening: "Event " + gitpeerv1alpha1.RejectedReason, phase: failed, message: "adopt-unowned", after: Round{MaxPending: 1}}},
		"legacy namespace, another claimant: refused": {Round{MaxPending: 1}, standalone(request(), legacy(ownership.Claim{Annotated: true, Listed: true})),
			want{opening: "Event " + gitpeerv1alpha1.RejectedReason, phase: failed, message: "was not created by this PeeringRepository", after: Round{MaxPending: 1}}},
		"another's namespace: refused": {Round{MaxPending: 1}, standalone(request(), Namespace{Name: "liqo-tenant-c", Found: true, Owner: ownership.Others}),
			want{opening: "Event " + gitpeerv1alpha1.RejectedReason, phase: failed, message: "namespace liqo-tenant-c exists and was not created", after: Round{MaxPending: 1}}},
		"another's Tenant in our namespace: refused": {Round{}, withTenantOf(standalone(withTenant, ours), fresh, ownership.Others),
			want{opening: "Event " + gitpeerv1alpha1.RejectedReason, phase: failed, message: "Tenant liqo-tenant-c/c exists"}},
		"legacy Tenant in our namespace: refused": {Round{}, withTenantOf(standalone(withTenant, ours), fresh, ownership.Legacy),
			want{opening: "Event " + gitpeerv1alpha1.RejectedReason, phase: failed, message: "Tenant liqo-tenant-c/c exists"}},
		"namespace Liqo created, Liqo mode: adopted, its mode recorded": {Round{MaxPending: 1}, func() Peering {
			p := standalone(request(), liqoMade(adoptable))
			p.Liqo, p.Mode = true, gitpeerv1alpha1.PeeringModeLiqo
			return p
		}(), want{step: OfferNonce, opening: "AdoptLiqoNamespace", after: Round{MaxPending: 1, Limit: RoundLimit{Acting: 1}}}},
		"namespace Liqo created holding a Tenant: refused": {Round{MaxPending: 1}, func() Peering {
			p := standalone(request(), liqoMade(ownership.LiqoClaim{LiqoMode: true, Listed: true, Sole: true, Found: []string{"Tenant c"}}))
			p.Liqo, p.Mode = true, gitpeerv1alpha1.PeeringModeLiqo
			return p
		}(), want{opening: "Event " + vocabulary.ReasonLiqoNamespaceRefused, phase: failed, reason: vocabulary.ReasonLiqoNamespaceRefused, message: "Tenant c", after: Round{MaxPending: 1}}},
		"mode changed: left alone, not counted": {Round{MaxPending: 1}, func() Peering {
			p := standalone(request(), ours)
			p.Liqo, p.Mode = true, gitpeerv1alpha1.PeeringModeLiqo
			return p
		}(), want{step: OfferNonce, opening: "Log; Event " + vocabulary.ReasonModeChanged, phase: failed, reason: vocabulary.ReasonModeChanged, after: Round{MaxPending: 1}}},
		"mode switch accepted: recorded, then the step": {Round{MaxPending: 1}, func() Peering {
			p := standalone(request(), ours)
			p.Liqo, p.Mode, p.SwitchAccepted = true, gitpeerv1alpha1.PeeringModeLiqo, gitpeerv1alpha1.PeeringModeLiqo
			return p
		}(), want{step: OfferNonce, opening: "RecordMode; RemoveAnnotation; Log; Event " + vocabulary.ReasonModeSwitched, after: Round{MaxPending: 1, Limit: RoundLimit{Acting: 1}}}},
		"revocation: never held back, mode not checked": {Round{Limit: RoundLimit{Max: 1, Acting: 1}}, func() Peering {
			p := withTenantOf(standalone(&protocol.Documents{Provider: "p", Consumer: "c"}, ours), fresh, ownership.Ours)
			p.Liqo, p.Mode = true, gitpeerv1alpha1.PeeringModeLiqo
			return p
		}(), want{step: Revoke, after: Round{Limit: RoundLimit{Max: 1, Acting: 1}}}},
	} {
		t.Run(name, func(t *testing.T) {
			r := tc.round
			got := r.Plan(tc.p, now)
			if tc.want.phase != "" || got.Done != nil {
				if got.Done == nil {
					t.Fatalf("not settled, want %s", tc.want.phase)
				}
				if got.Done.Phase != tc.want.phase || got.Done.Reason != tc.want.reason || !strings.Contains(got.Done.Message, tc.want.message) || got.Done.Err != nil {
					t.Errorf("settled %+v, want phase %s, reason %q, message containing %q", *got.Done, tc.want.phase, tc.want.reason, tc.want.message)
				}
			} else if got.Step != tc.want.step {
				t.Errorf("step %s, want %s", got.Step, tc.want.step)
			}
			if s := summary(Plan{Actions: got.Opening}); s != tc.want.opening {
				t.Errorf("opening %q, want %q", s, tc.want.opening)
			}
			if got.Signs != tc.want.signs || got.HeldBack != tc.want.held {
				t.Errorf("signs %t, held back %t; want %t, %t", got.Signs, got.HeldBack, tc.want.signs, tc.want.held)
			}
			if r != tc.want.after {
				t.Errorf("round after %+v, want %+v", r, tc.want.after)
			}
		})
	}
}

// TestRoundPlanOrder: a round admits requests in the order it plans them,
// whatever order their steps then run in: with room for one pending request
// and one acting peering, the first is admitted, the second deferred; a
// request held back by the limit is not counted pending.
func TestRoundPlanOrder(t *testing.T) {
	now := time.Now()
	req := func(c string) Peering {
		return Peering{Docs: &protocol.Documents{Provider: "p", Consumer: c, Request: &documents.PeeringRequest{}},
			Namespace: Namespace{Name: "liqo-tenant-" + c}, Mode: gitpeerv1alpha1.PeeringModeStandalone}
	}
	r := Round{MaxPending: 1}
	var got []string
	for _, c := range []string{"a", "b", "c"} {
		pl := r.Plan(req(c), now)
		state := "admitted"
		if pl.Done != nil {
			state = string(pl.Done.Phase) + " " + pl.Done.Reason
		}
		got = append(got, c+": "+state)
	}
	want := []string{"a: admitted", "b: Requested " + vocabulary.ReasonRequestsDeferred, "c: Requested " + vocabulary.ReasonRequestsDeferred}
	if strings.Join(got, "; ") != strings.Join(want, "; ") || r.Pending != 1 || r.Deferred != 2 {
		t.Errorf("planned %q (pending %d, deferred %d), want %q (1, 2)", got, r.Pending, r.Deferred, want)
	}

	r = Round{MaxPending: 5, Limit: RoundLimit{Max: 1}}
	first, second := r.Plan(req("a"), now), r.Plan(req("b"), now)
	if first.HeldBack || !second.HeldBack || r.Pending != 1 || r.Limit.Held != 1 {
		t.Errorf("held back %t, %t (pending %d, held %d), want false, true (1, 1)", first.HeldBack, second.HeldBack, r.Pending, r.Limit.Held)
	}
}
