package reconciler

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/go-git/go-git/v5/plumbing"

	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/gitsync"
	"github.com/gitpeer/gitpeer/reconciler/plan/consumer"
	"github.com/gitpeer/gitpeer/reconciler/plan/provider"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// gitStep is what one peering of a round writes to the branch: its files, the
// commit message it would have on its own, and the events of a commit that
// put them there: data, recorded after the push; nothing of the step runs then.
type gitStep struct {
	key     string // role/peer
	msg     protocol.Message
	changes []gitsync.FileChange
	// routine are the provider's routine events of the step (provider.Routine).
	routine []provider.Routine
	// announce are the events of a commit that put the changes there (the consumer's steps).
	announce []consumer.Event
}

// result is one peering's outcome in a round.
type result struct {
	peer string
	role gitpeerv1alpha1.PeeringRole
	o    outcome
	// settled: nothing changes for this provider's peering until its
	// directory or a cluster object of it does (incremental.Settled).
	settled bool
	// heldBack: the round's limit held this provider's peering back (provider.RoundLimit).
	heldBack bool
}

func resultKey(role gitpeerv1alpha1.PeeringRole, peer string) string {
	return string(role) + "/" + peer
}

// stage queues a write of the peering (role, peer) for the round's commit,
// with its routine events.
func (s branchIO) stage(role gitpeerv1alpha1.PeeringRole, peer string, msg protocol.Message, routine []provider.Routine, changes ...gitsync.FileChange) {
	s.queue(gitStep{key: resultKey(role, peer), msg: msg, routine: routine}, changes)
}

// queue queues st with those of changes the round's head does not hold.
// When none is left, nothing is queued and the routine events that do not
// wait for a push are noted at once: a round that visits thousands of
// settled peerings holds only what it writes.
func (s branchIO) queue(st gitStep, changes []gitsync.FileChange) {
	for _, c := range changes {
		if !s.onBranch(c) {
			st.changes = append(st.changes, c)
		}
	}
	if len(st.changes) == 0 {
		s.noteRoutine(st.routine, false)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.staged = append(s.staged, st)
}

// commitRound writes every staged change of the round to the branch in one
// commit, with each step's trailers, notes the events of the steps it
// pushed and fails the peerings whose changes did not land.
func (s branchIO) commitRound(ctx context.Context, results []result) error {
	steps := s.staged
	s.staged = nil
	if len(steps) == 0 {
		return nil
	}
	failed := map[string]error{}
	msg, changes := roundMessage(string(s.obj.Spec.ClusterID), steps)
	pushed, err := s.write(ctx, msg, changes...)
	if pushed && s.loader != nil {
		// The next round acts on these directories again, even if a push reverted them meanwhile.
		paths := make([]string, len(changes))
		for i, c := range changes {
			paths[i] = c.Path
		}
		s.loader.Wrote(paths...)
	}
	for _, st := range steps {
		switch {
		case err != nil:
			failed[st.key] = err // only the peerings whose changes did not land fail
		case pushed:
			s.consumerStep().consumerEvents(st.announce)
			s.noteRoutine(st.routine, true)
		default:
			s.noteRoutine(st.routine, false)
		}
	}
	failPeerings(results, failed)
	return err
}

// noteRoutine notes routine, the routine events of a step whose changes are
// on the branch; pushed: this round's commit put them there.
func (s branchIO) noteRoutine(routine []provider.Routine, pushed bool) {
	for _, r := range routine {
		if pushed || !r.IfPushed {
			s.roundReport().routine.add(r.Reason, r.What, r.Item)
		}
	}
}

// failPeerings turns the outcome of each peering in failed (by resultKey)
// into its error; the reason of a peering needing attention is kept.
func failPeerings(results []result, failed map[string]error) {
	for i := range results {
		if err := failed[resultKey(results[i].role, results[i].peer)]; err != nil {
			results[i].o = outcome{err: err, reason: results[i].o.reason}
		}
	}
}

// onBranch reports whether the round's head already holds change.
func (s branchIO) onBranch(c gitsync.FileChange) bool {
	if s.head.IsZero() {
		return false
	}
	got, err := s.repo.ReadFile(s.head, c.Path)
	if c.Delete {
		return err != nil
	}
	return err == nil && bytes.Equal(got, c.Content)
}

// roundMessage is the commit of a round's steps: a step alone keeps its own
// message; several are listed in the body, each with its own trailers
// (Gitpeer-Action first, then provider, consumer, summary and extras) so
// that `gitpeer audit` tells each peering's story. Steps with no changes
// left are not in the message.
func roundMessage(cluster string, steps []gitStep) (protocol.Message, []gitsync.FileChange) {
	var changes []gitsync.FileChange
	var written []gitStep
	for _, st := range steps {
		if len(st.changes) > 0 {
			written = append(written, st)
			changes = append(changes, st.changes...)
		}
	}
	if len(written) == 1 {
		return written[0].msg, changes
	}
	counts := map[string]int{}
	var body strings.Builder
	var trailers []protocol.Trailer
	for _, st := range written {
		counts[st.msg.Action]++
		fmt.Fprintf(&body, "- %s\n", st.msg.Subject)
		own := st.msg.Trailers()
		trailers = append(trailers, own[:len(own)-len(st.msg.Extra)]...)
		trailers = append(trailers, protocol.Trailer{Key: vocabulary.TrailerSummary, Value: st.msg.Subject})
		trailers = append(trailers, st.msg.Extra...)
	}
	var parts []string
	for a, n := range counts {
		parts = append(parts, fmt.Sprintf("%d %s", n, a))
	}
	sort.Strings(parts)
	return protocol.Message{
		Subject: fmt.Sprintf("gitpeer round of %s: %s", cluster, strings.Join(parts, ", ")),
		Body:    body.String(),
		Extra:   trailers,
	}, changes
}

// write commits changes to the branch (a no-op when they are already there)
// and reports whether a commit was pushed.
func (s branchIO) write(ctx context.Context, msg protocol.Message, changes ...gitsync.FileChange) (bool, error) {
	if len(changes) == 0 {
		return false, nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.obj.GetTimeout())
	defer cancel()
	var res gitsync.WriteResult
	_, err := observeGit("write", func() (plumbing.Hash, error) {
		var err error
		res, err = s.repo.Write(ctx, msg, changes)
		return res.Commit, err
	})
	return res.Pushed, err
}

// markRenewals sets the CertificatesRenewed condition of a provider.
func (s branchIO) markRenewals() {
	switch {
	case !s.obj.IsProvider():
		deleteCondition(s.obj, gitpeerv1alpha1.CertificatesRenewedCondition)
	case len(s.report.overdue) > 0:
		overdue := s.report.overdue
		first := overdue[slices.Min(slices.Collect(maps.Keys(overdue)))]
		markFalse(s.obj, gitpeerv1alpha1.CertificatesRenewedCondition, gitpeerv1alpha1.RenewalOverdueReason, "%d renewal(s) overdue: %s", len(overdue), first)
	default:
		markTrue(s.obj, gitpeerv1alpha1.CertificatesRenewedCondition, meta.SucceededReason, "no renewal overdue")
	}
}
