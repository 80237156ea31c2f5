package incremental_test

import (
	"slices"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/reconciler/plan/incremental"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
)

var (
	t0     = time.Date(2026, 11, 26, 6, 0, 0, 0, time.UTC)
	loader = new(protocol.Loader)
	round  = incremental.Round{Generation: 3, Annotations: map[string]string{"a": "1"}, Mode: "standalone", Loader: loader}
)

func TestFullRound(t *testing.T) {
	const resync = 10 * time.Minute
	prev := func(change func(m *incremental.Memory)) *incremental.Memory {
		m := &incremental.Memory{Round: round, FullAt: t0, Peerings: map[string]incremental.Peering{}}
		if change != nil {
			change(m)
		}
		return m
	}
	now := func(change func(n *incremental.Now)) incremental.Now {
		n := incremental.Now{Round: round, Time: t0.Add(time.Minute)}
		if change != nil {
			change(&n)
		}
		return n
	}
	for _, tc := range []struct {
		name string
		prev *incremental.Memory
		now  incremental.Now
		want string
	}{
		{"nothing changed", prev(nil), now(nil), ""},
		{"no round completed in this process", nil, now(nil), incremental.FirstRound},
		{"the previous round failed", &incremental.Memory{}, now(nil), incremental.PreviousIncomplete},
		{"the clone was reopened", prev(nil), now(func(n *incremental.Now) { n.Loader = new(protocol.Loader) }), incremental.CloneReopened},
		{"the spec changed", prev(nil), now(func(n *incremental.Now) { n.Generation = 4 }), incremental.GenerationChanged},
		{"a rekey annotation appeared", prev(nil), now(func(n *incremental.Now) {
			n.Annotations = map[string]string{"a": "1", gitpeerv1alpha1.RekeyAnnotationPrefix + "c1": "sha"}
		}), incremental.AnnotationsChanged},
		{"an annotation was removed", prev(nil), now(func(n *incremental.Now) { n.Annotations = nil }), incremental.AnnotationsChanged},
		{"an annotation changed value", prev(nil), now(func(n *incremental.Now) { n.Annotations = map[string]string{"a": "2"} }), incremental.AnnotationsChanged},
		{"Liqo mode started", prev(nil), now(func(n *incremental.Now) { n.Mode = "liqo" }), incremental.ModeChanged},
		{"a rewritten history was acknowledged", prev(nil), now(func(n *incremental.Now) { n.RewriteAcknowledged = true }), incremental.RewriteAcknowledged},
		{"the ownership migration runs", prev(nil), now(func(n *incremental.Now) { n.Migrating = true }), incremental.OwnershipMigration},
		{"the resync period passed", prev(nil), now(func(n *incremental.Now) { n.Time = t0.Add(resync) }), incremental.Resync},
		{"just before the resync period", prev(nil), now(func(n *incremental.Now) { n.Time = t0.Add(resync - time.Second) }), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := incremental.FullRound(tc.prev, tc.now, resync); got != tc.want {
				t.Errorf("FullRound = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestVisit(t *testing.T) {
	settled := incremental.Peering{Settled: true, RenewAt: t0.Add(time.Hour)}
	prev := &incremental.Memory{Round: round, FullAt: t0, Peerings: map[string]incremental.Peering{
		"quiet": settled, "dir": settled, "object": settled, "unsettled": {RenewAt: t0.Add(time.Hour)},
		"renewal-due": {Settled: true, RenewAt: t0}, "revoked": {Settled: true}, "zheld": {HeldBack: true},
	}}
	consumers := []string{"dir", "new", "object", "quiet", "renewal-due", "revoked", "unsettled", "zheld"}
	heldFirst := append([]string{"zheld"}, consumers[:len(consumers)-1]...)
	changes := incremental.Changes{Dirs: map[string]bool{"dir": true, "gone-elsewhere": true}, Objects: map[string]bool{"object": true}}
	for _, tc := range []struct {
		name               string
		full               bool
		prev               *incremental.Memory
		changes            incremental.Changes
		now                time.Time
		wantVisit, wantCar []string
	}{
		{"incremental", false, prev, changes, t0.Add(time.Minute),
			[]string{"zheld", "dir", "new", "object", "renewal-due", "unsettled"}, []string{"quiet", "revoked"}},
		{"nothing changed", false, prev, incremental.Changes{}, t0.Add(time.Minute),
			[]string{"zheld", "new", "renewal-due", "unsettled"}, []string{"dir", "object", "quiet", "revoked"}},
		{"renewals fall due", false, prev, incremental.Changes{}, t0.Add(time.Hour),
			[]string{"zheld", "dir", "new", "object", "quiet", "renewal-due", "unsettled"}, []string{"revoked"}},
		{"full: held back first", true, prev, changes, t0.Add(time.Minute), heldFirst, nil},
		{"no memory", false, nil, changes, t0.Add(time.Minute), consumers, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			visit, carry := incremental.Visit(consumers, tc.full, tc.prev, tc.changes, tc.now)
			if !slices.Equal(visit, tc.wantVisit) || !slices.Equal(carry, tc.wantCar) {
				t.Errorf("Visit = %v, carried %v; want %v, carried %v", visit, carry, tc.wantVisit, tc.wantCar)
			}
		})
	}
}

// TestVisitComparesTrees: with Changes.Trees (a quiet resync) a peering is
// carried only when its directory's tree is the one its last visit read.
func TestVisitComparesTrees(t *testing.T) {
	a, b := plumbing.NewHash("0a"), plumbing.NewHash("0b")
	prev := &incremental.Memory{Round: round, FullAt: t0, Peerings: map[string]incremental.Peering{
		"same": {Settled: true, Tree: a}, "other": {Settled: true, Tree: a}, "gone": {Settled: true, Tree: a}, "unknown": {Settled: true},
	}}
	trees := map[string]plumbing.Hash{"same": a, "other": b, "unknown": a}
	changes := incremental.Changes{Trees: func(c string) plumbing.Hash { return trees[c] }}
	visit, carry := incremental.Visit([]string{"gone", "other", "same", "unknown"}, false, prev, changes, t0.Add(time.Minute))
	if want := []string{"gone", "other", "unknown"}; !slices.Equal(visit, want) || !slices.Equal(carry, []string{"same"}) {
		t.Errorf("Visit = %v, carried %v; want %v, carried [same]", visit, carry, want)
	}
}

func TestChecked(t *testing.T) {
	for _, tc := range []struct {
		full  string
		quiet bool
		want  bool
	}{
		{incremental.Resync, true, true},
		{incremental.Resync, false, false},
		{incremental.FirstRound, true, false},
		{incremental.AnnotationsChanged, true, false},
		{"", true, false},
	} {
		if got := incremental.Checked(tc.full, tc.quiet); got != tc.want {
			t.Errorf("Checked(%q, %t) = %t, want %t", tc.full, tc.quiet, got, tc.want)
		}
	}
}

func TestWaiting(t *testing.T) {
	prev := &incremental.Memory{Round: round, FullAt: t0, Peerings: map[string]incremental.Peering{
		"held": {HeldBack: true}, "held-dir": {HeldBack: true}, "held-object": {HeldBack: true}, "unsettled": {}, "settled": {Settled: true},
	}}
	changes := incremental.Changes{Dirs: map[string]bool{"held-dir": true}, Objects: map[string]bool{"held-object": true}}
	for c, want := range map[string]bool{"held": true, "held-dir": false, "held-object": false, "unsettled": false, "settled": false, "new": false} {
		if got := incremental.Waiting(prev, c, changes); got != want {
			t.Errorf("Waiting(%s) = %t, want %t", c, got, want)
		}
	}
	if incremental.Waiting(nil, "held", incremental.Changes{}) {
		t.Error("Waiting with no memory = true, want false")
	}
}

func TestSettled(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    incremental.Outcome
		want bool
	}{
		{"issued", incremental.Outcome{Phase: gitpeerv1alpha1.PhaseIssued}, true},
		{"cordoned", incremental.Outcome{Phase: gitpeerv1alpha1.PhaseCordoned}, true},
		{"drained", incremental.Outcome{Phase: gitpeerv1alpha1.PhaseDrained}, true},
		{"revoked", incremental.Outcome{Phase: gitpeerv1alpha1.PhaseRevoked}, true},
		{"rejected tenant.yaml, foreign objects", incremental.Outcome{Phase: gitpeerv1alpha1.PhaseFailed}, true},
		{"nonce offered, waiting for tenant.yaml", incremental.Outcome{Phase: gitpeerv1alpha1.PhaseNonceIssued, Offered: true}, true},
		{"waiting for the CSR to be signed", incremental.Outcome{Phase: gitpeerv1alpha1.PhaseNonceIssued}, false},
		{"renewing, waiting for the CSR", incremental.Outcome{Phase: gitpeerv1alpha1.PhaseIssued, RenewalUnknown: true}, false},
		{"an error", incremental.Outcome{Phase: gitpeerv1alpha1.PhaseFailed, Failed: true}, false},
		{"deferred by maxPendingRequests", incremental.Outcome{Phase: gitpeerv1alpha1.PhaseRequested, Reason: "RequestsDeferred"}, false},
		{"renewal overdue", incremental.Outcome{Phase: gitpeerv1alpha1.PhaseIssued, Reason: "RenewalOverdue"}, false},
		{"mode changed", incremental.Outcome{Phase: gitpeerv1alpha1.PhaseFailed, Reason: "ModeChanged"}, false},
		{"waiting for Liqo's nonce", incremental.Outcome{Phase: gitpeerv1alpha1.PhaseRequested, Offered: true}, false},
		{"held back by the round limit", incremental.Outcome{Phase: gitpeerv1alpha1.PhaseNonceIssued, Offered: true, HeldBack: true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := incremental.Settled(tc.o); got != tc.want {
				t.Errorf("Settled(%+v) = %v, want %v", tc.o, got, tc.want)
			}
		})
	}
}
