package reconciler

import (
	"context"
	"fmt"
	"runtime/debug"
	"slices"

	"golang.org/x/sync/errgroup"
	"sigs.k8s.io/controller-runtime/pkg/log"

	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/reconciler/incremental"
	"github.com/gitpeer/gitpeer/reconciler/provider"
)

// DefaultPeeringWorkers is how many peerings of a provider's round take their
// step at once unless ControllerOptions.PeeringWorkers says otherwise.
const DefaultPeeringWorkers = 16

// provideAll runs the provider side of the peerings with consumers, in this
// order: it plans them one after the other (planProvide: the same requests
// are admitted as if they ran in this order), then takes their steps
// (provide) s.r.peeringWorkers at a time. The results, and the round's writes
// to the branch (stage), are in the order of consumers whatever order the
// steps ended in; a failure of one peering never blocks the others.
func (s *session) provideAll(ctx context.Context, consumers []string) []result {
	me := string(s.obj.Spec.ClusterID)
	plans := make([]providing, len(consumers))
	for i, c := range consumers {
		plans[i] = s.planProvide(ctx, s.peering(me, c))
	}
	staged := len(s.staged)
	results := make([]result, len(consumers))
	forEachAtOnce(len(plans), s.r.peeringWorkers, func(i int) {
		results[i] = result{peer: consumers[i], role: gitpeerv1alpha1.ProviderRole, o: s.provideRecovering(ctx, plans[i])}
	})
	for i := range results {
		o := results[i].o
		_, renews := s.renewals[consumers[i]]
		results[i].settled = incremental.Settled(incremental.Outcome{
			Phase: o.phase, Reason: o.reason, Failed: o.err != nil,
			Offered:        plans[i].done == nil && plans[i].step == provider.OfferNonce,
			RenewalUnknown: !s.liqoMode() && !renews,
		})
	}
	inRoundOrder(s.staged[staged:], consumers)
	return results
}

// inRoundOrder sorts steps of the provider side of peerings with consumers
// in the order of consumers; a peering's own steps keep their order.
func inRoundOrder(steps []gitStep, consumers []string) {
	order := map[string]int{}
	for i, c := range consumers {
		order[resultKey(gitpeerv1alpha1.ProviderRole, c)] = i
	}
	slices.SortStableFunc(steps, func(a, b gitStep) int { return order[a.key] - order[b.key] })
}

// provideRecovering is provide, with a panic turned into the peering's
// error: the other peerings of the round go on, and the agent does.
func (s *session) provideRecovering(ctx context.Context, p providing) (o outcome) {
	defer func() {
		if r := recover(); r != nil {
			log.FromContext(ctx).Error(fmt.Errorf("%v", r), "peering step panicked", "consumer", p.pe.Consumer, "stack", string(debug.Stack()))
			o = outcome{err: fmt.Errorf("panic: %v [recovered]", r)}
		}
	}()
	return s.provide(ctx, p)
}

// forEachAtOnce calls do(i) for every i in [0, n), at most workers (at
// least one) at once, and returns when every call returned.
func forEachAtOnce(n, workers int, do func(i int)) {
	var g errgroup.Group
	g.SetLimit(max(workers, 1))
	for i := range n {
		g.Go(func() error {
			do(i)
			return nil
		})
	}
	_ = g.Wait()
}
