// Package incremental decides which peerings a provider's round visits (plans
// and steps) and which it carries over unchanged from the previous round:
// work scales with what changed, not with the number of peerings. It holds
// decisions only; the reconciler observes what changed (the Loader's changed
// directories, the informers' events) and acts.
//
// A round is full, visiting every peering, when what decides trust for all of
// them may have changed or when the previous round may have left something
// half done (FullRound). Otherwise a peering is visited when it is new to the
// round's memory, its directory on the branch changed, one of its cluster
// objects changed (whoever changed it: objects the agent did not create are
// how hostile objects are noticed), its last outcome was not settled, or its
// certificate's renewal is due (Visit). A quiet round for the resync period
// compares each directory's Git tree with the one its last visit read instead
// of visiting every peering (Checked).
package incremental

import (
	"maps"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
)

// Reasons for a full round (FullRound).
const (
	FirstRound          = "first round"
	PreviousIncomplete  = "previous round incomplete"
	CloneReopened       = "clone reopened"
	GenerationChanged   = "generation changed"
	AnnotationsChanged  = "annotations changed"
	ModeChanged         = "mode changed"
	RewriteAcknowledged = "history rewrite acknowledged"
	OwnershipMigration  = "ownership migration"
	Resync              = "resync period"
)

// Round is what decides trust for every peering of a provider's round at once.
type Round struct {
	// Generation is the PeeringRepository's metadata.generation (its spec).
	Generation int64
	// Annotations are the PeeringRepository's (rekey, mode switch, adoption, revival...).
	Annotations map[string]string
	// Mode is the mode in force (Liqo or standalone, and Liqo's identity).
	Mode string
	// Loader reads the clone; a new one has no memory of the branch.
	Loader *protocol.Loader
}

// Memory is what a provider's round leaves for the next: set once a round
// completed (its commit pushed, or nothing to push), dropped when one fails.
type Memory struct {
	Round
	// FullAt is when the last full round began.
	FullAt time.Time
	// Peerings holds, by consumer, what the last visit of each peering found.
	Peerings map[string]Peering
}

// Peering is what the last visit of one peering found.
type Peering struct {
	// Status is the peering's entry in the status, carried while it is not visited.
	Status gitpeerv1alpha1.PeeringStatus
	// Settled: nothing changes for it until its directory or one of its cluster objects does (Settled).
	Settled bool
	// RenewAt is when its certificate is due for renewal (zero: none).
	RenewAt time.Time
	// Pending: a request answered with a nonce, not issued yet (maxPendingRequests).
	Pending bool
	// HeldBack: the round limit held the peering back (Outcome.HeldBack): the next round plans it first.
	HeldBack bool
	// Tree is the Git tree of its directory that visit read (protocol.Loaded.Tree; zero: none).
	Tree plumbing.Hash
}

// Now is what a round observed before it plans.
type Now struct {
	Round
	// Time is when the round began.
	Time time.Time
	// RewriteAcknowledged: a rewritten history was accepted in this round.
	RewriteAcknowledged bool
	// Migrating: the one-time adoption of an earlier version's objects runs in this round.
	Migrating bool
}

// FullRound returns why the round now must visit every peering, or "" when
// it may visit only those that changed since prev (nil: no round completed
// since the process started or since the last one failed). resync is the
// longest time between full rounds: what the agent does not watch (the nonce
// and records Secrets) is repaired by them.
func FullRound(prev *Memory, now Now, resync time.Duration) string {
	switch {
	case prev == nil:
		return FirstRound
	case prev.Peerings == nil:
		return PreviousIncomplete
	case prev.Loader != now.Loader:
		return CloneReopened
	case prev.Generation != now.Generation:
		return GenerationChanged
	case !maps.Equal(prev.Annotations, now.Annotations):
		return AnnotationsChanged
	case prev.Mode != now.Mode:
		return ModeChanged
	case now.RewriteAcknowledged:
		return RewriteAcknowledged
	case now.Migrating:
		return OwnershipMigration
	case !now.Time.Before(prev.FullAt.Add(resync)):
		return Resync
	}
	return ""
}

// Changes are what changed since the previous round began, by consumer.
type Changes struct {
	// Dirs: the consumer's directory on the branch changed (protocol.Loaded.Changed).
	Dirs map[string]bool
	// Objects: one of the consumer's cluster objects changed (namespace, Tenant, RoleBinding, CSR...).
	Objects map[string]bool
	// Trees, when set (a round that compares hashes: Checked), gives the Git
	// tree of the consumer's directory now (zero: none): a peering whose last
	// visit read another tree is visited.
	Trees func(consumer string) plumbing.Hash
}

// Checked reports whether a round, full for the reason full (FullRound) and
// quiet or not (neither the branch nor the spec changed since the last
// round, which ended Ready), may compare hashes instead of visiting every
// peering: Visit then carries a peering, not full, whose last visit read the
// directory's tree it has now (Changes.Trees), unless something else makes
// it visited (mustVisit). Only a quiet round for the resync period does. The
// resync repairs what the agent does not watch (the nonce and records
// Secrets), but a quiet round reads neither for a settled peering: its visit
// would decode the same documents and plan the same step from the same
// watched objects, so it is the decoding of every directory (~24 s of CPU at
// 10,000 peerings) that the comparison saves. A resync period that passes
// while the branch moves is a round visiting every peering, as before.
func Checked(full string, quiet bool) bool {
	return full == Resync && quiet
}

// Visit splits consumers, in their order, into those the round visits and
// those it carries over from prev (nil, or a full round: none is carried).
// The peerings the previous round held back (its limit) are visited first,
// then the others, each in the order of consumers: a peering held back acts
// before any that was not, so none waits for ever behind others that keep
// acting (new ones, ones failing every round).
func Visit(consumers []string, full bool, prev *Memory, changes Changes, now time.Time) (visit, carry []string) {
	var others []string
	for _, c := range consumers {
		switch {
		case prev != nil && prev.Peerings[c].HeldBack:
			visit = append(visit, c)
		case full || prev == nil || mustVisit(prev.Peerings, c, changes, now):
			others = append(others, c)
		default:
			carry = append(carry, c)
		}
	}
	return append(visit, others...), carry
}

// Waiting reports whether the previous round held back the peering of
// consumer (its limit) and neither its directory nor its cluster objects
// changed since: planned, it would act, so a round whose limit is already
// full may hold it back again without planning it. Nothing is issued or
// refused without a plan: such a peering is only planned a round later.
func Waiting(prev *Memory, consumer string, changes Changes) bool {
	return prev != nil && prev.Peerings[consumer].HeldBack && !changes.Dirs[consumer] && !changes.Objects[consumer]
}

func mustVisit(known map[string]Peering, consumer string, changes Changes, now time.Time) bool {
	p, ok := known[consumer]
	if changes.Trees != nil {
		if t := changes.Trees(consumer); t.IsZero() || t != p.Tree {
			return true
		}
	}
	return !ok || !p.Settled || changes.Dirs[consumer] || changes.Objects[consumer] ||
		(!p.RenewAt.IsZero() && !now.Before(p.RenewAt))
}

// Outcome is what a visit of a peering ended with.
type Outcome struct {
	Phase gitpeerv1alpha1.PeeringPhase
	// Reason is set when the peering needs attention.
	Reason string
	// Failed: the step failed on an error.
	Failed bool
	// Offered: the step was to answer a request with a nonce (NonceIssued then waits for tenant.yaml).
	Offered bool
	// RenewalUnknown: the agent renews this certificate and no renewal time was noted.
	RenewalUnknown bool
	// HeldBack: the round acted on as many peerings as its limit allows and left this one to the next.
	HeldBack bool
}

// Settled reports whether nothing changes for a peering that ended with o
// until its directory on the branch or one of its cluster objects changes:
// issued, cordoned, drained or revoked (with a known renewal time, when the
// agent renews it), refused for good (an invalid or rejected tenant.yaml, a
// consumer not allowed, objects that are not the agent's), or holding a nonce
// and waiting for tenant.yaml. An error, a reason needing attention (a
// deferred request, a renewal overdue, a mode changed), waiting for a CSR to
// be signed or for Liqo, and being held back by the round's limit are not
// settled: the peering is visited again.
func Settled(o Outcome) bool {
	if o.Failed || o.Reason != "" || o.HeldBack {
		return false
	}
	switch o.Phase {
	case gitpeerv1alpha1.PhaseIssued, gitpeerv1alpha1.PhaseCordoned, gitpeerv1alpha1.PhaseDrained:
		return !o.RenewalUnknown
	case gitpeerv1alpha1.PhaseRevoked, gitpeerv1alpha1.PhaseFailed:
		return true
	case gitpeerv1alpha1.PhaseNonceIssued:
		return o.Offered
	}
	return false
}
