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
	"github.com/gitpeer/gitpeer/reconciler/consumer"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// gitStep is what one peering of a round writes to the branch: its files, the
// commit message it would have on its own, and what follows once the files
// are on the branch (pushed by this round or already there).
type gitStep struct {
	key     string // role/peer
	msg     protocol.Message
	changes []gitsync.FileChange
	// done runs once the changes are on the branch; pushed says whether this
	// round's commit put them there (events announce only what it pushed).
	done func(ctx context.Context, pushed bool) error
	// announce are the events of a commit that put the changes there (the consumer's steps).
	announce []consumer.Event
	// err: the branch held every change already and done failed (stage).
	err error
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

// stage queues a write of the peering (role, peer) for the round's commit.
// Changes the round's head holds already are dropped at once; when none is
// left, done runs at once (pushed false) and nothing is queued but its
// error: a round that visits thousands of settled peerings holds only what
// it writes.
func (s *session) stage(ctx context.Context, role gitpeerv1alpha1.PeeringRole, peer string, msg protocol.Message, done func(ctx context.Context, pushed bool) error, changes ...gitsync.FileChange) {
	s.queue(ctx, gitStep{key: resultKey(role, peer), msg: msg, done: done}, changes)
}

// queue queues st with those of changes the round's head does not hold (stage).
func (s *session) queue(ctx context.Context, st gitStep, changes []gitsync.FileChange) {
	for _, c := range changes {
		if !s.onBranch(c) {
			st.changes = append(st.changes, c)
		}
	}
	if len(st.changes) == 0 {
		if st.done == nil {
			return
		}
		if st.err = st.done(ctx, false); st.err == nil {
			return
		}
		st.done, st.announce = nil, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.staged = append(s.staged, st)
}

// commitRound writes every staged change of the round to the branch in one
// commit, with each step's trailers, runs the done functions of the steps
// whose changes are on the branch and fails the peerings whose changes did
// not land, or whose done failed.
func (s *session) commitRound(ctx context.Context, results []result) error {
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
		switch written := len(st.changes) > 0; {
		case st.err != nil:
			failed[st.key] = st.err
		case written && err != nil:
			failed[st.key] = err // only the peerings whose changes did not land fail
		case pushed && written && len(st.announce) > 0:
			s.consumerEvents(st.announce)
		case st.done != nil:
			if err := st.done(ctx, pushed && written); err != nil {
				failed[st.key] = err
			}
		}
	}
	failPeerings(results, failed)
	return err
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
func (s *session) onBranch(c gitsync.FileChange) bool {
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
func (s *session) write(ctx context.Context, msg protocol.Message, changes ...gitsync.FileChange) (bool, error) {
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
func (s *session) markRenewals() {
	switch {
	case !s.obj.IsProvider():
		deleteCondition(s.obj, gitpeerv1alpha1.CertificatesRenewedCondition)
	case len(s.overdue) > 0:
		first := s.overdue[slices.Min(slices.Collect(maps.Keys(s.overdue)))]
		markFalse(s.obj, gitpeerv1alpha1.CertificatesRenewedCondition, gitpeerv1alpha1.RenewalOverdueReason, "%d renewal(s) overdue: %s", len(s.overdue), first)
	default:
		markTrue(s.obj, gitpeerv1alpha1.CertificatesRenewedCondition, meta.SucceededReason, "no renewal overdue")
	}
}
