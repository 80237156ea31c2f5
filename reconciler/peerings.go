package reconciler

import (
	"context"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"

	"golang.org/x/sync/errgroup"
	"sigs.k8s.io/controller-runtime/pkg/log"

	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/reconciler/plan/incremental"
	"github.com/gitpeer/gitpeer/reconciler/plan/provider"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// DefaultPeeringWorkers is how many peerings of a provider's round take their
// step at once unless ControllerOptions.PeeringWorkers says otherwise.
const DefaultPeeringWorkers = 16

// planChunk is how many peerings of a provider's round are planned, then
// stepped, together (provideAll): a round holds the plans (copies of cached
// objects, parsed certificates) of one chunk at a time, whatever the number
// of peerings it visits. A chunk of 256 held ~8 MiB more at the peak of a
// full round of 10,000 peerings (decoded directories, Tenants, certificates,
// rendered identities) than one of 64, which still gives every worker of
// the default 16 four steps.
const planChunk = 64

// planned is the plan of the peering at index i of a round's consumers.
type planned struct {
	i int
	p providing
}

// provideAll runs the provider side of the peerings the round visits
// (plan.visit), in this order: it plans them one after the other
// (planProvide: the same requests are admitted, and the same peerings act
// within the round's limit, as if they ran in this order), planChunk at a
// time, and takes the steps of each chunk (provide) s.r.peeringWorkers at a
// time. Once the limit is full, a peering waiting since the previous round
// held it back (plan.waiting) is held back again without being planned. The
// steps that sign a certificate (at most the round's limit) are taken last,
// planChunk at a time, with one read of the round's CSRs for their consumers
// alone (labelledCSRs); their documents are decoded again then, rather than
// held from their plan through every chunk of the round (up to the round's
// limit of them, megabytes), in the order of their records Secrets, each
// chunk's records written once per Secret (stepRecorded). The records read
// for the steps are dropped once they are done (dropShards). The results, and the round's writes to the branch (stage),
// are in the order of the visit whatever order the steps ended in; a failure
// of one peering never blocks the others.
func (s *session) provideAll(ctx context.Context, plan *providerPlan) []result {
	me, consumers := string(s.obj.Spec.ClusterID), plan.visit
	round := &plan.round
	staged := len(s.branch.staged)
	results := make([]result, len(consumers))
	var signing []planned
	for start := 0; start < len(consumers); start += planChunk {
		var chunk []planned
		for i := start; i < min(start+planChunk, len(consumers)); i++ {
			if round.Limit.Full() && plan.waiting[consumers[i]] {
				round.Limit.HoldBack()
				results[i] = stillHeldBack(consumers[i], plan.prev.Peerings[consumers[i]].Status)
				continue
			}
			pl := planned{i, s.providerStep().planProvide(ctx, s.peering(me, consumers[i]), round)}
			if pl.p.signs {
				pl.p.pe = nil // decoded again to sign, below: not held through every chunk
				signing = append(signing, pl)
			} else {
				chunk = append(chunk, pl)
			}
		}
		s.stepAll(ctx, chunk, consumers, results)
	}
	signers := make([]string, len(signing))
	for k, pl := range signing {
		signers[k] = consumers[pl.i]
	}
	s.issuance.expect(signers)
	// In the order of their records Secrets: a chunk's records are written once per Secret (stepRecorded).
	slices.SortStableFunc(signing, func(a, b planned) int {
		return strings.Compare(vocabulary.RecordsSecretName(s.obj.Name, consumers[a.i]), vocabulary.RecordsSecretName(s.obj.Name, consumers[b.i]))
	})
	for start := 0; start < len(signing); start += planChunk {
		chunk := signing[start:min(start+planChunk, len(signing))]
		for k := range chunk {
			if chunk[k].p.pe = s.peering(me, consumers[chunk[k].i]); chunk[k].p.pe.Tenant == nil {
				o := outcome{err: fmt.Errorf("%s/%s: tenant.yaml no longer decodes as when its step was planned", me, consumers[chunk[k].i])}
				chunk[k].p.done = &o // nothing signed; the next round plans it again
			}
		}
		s.stepRecorded(ctx, chunk, consumers, results)
		for k := range chunk {
			chunk[k].p.pe, chunk[k].p.tenant = nil, nil
		}
	}
	s.dropShards()
	inRoundOrder(s.branch.staged[staged:], consumers)
	return results
}

// stillHeldBack is the result of a peering held back again without being
// planned: as the previous round left it (was), held back, not settled.
func stillHeldBack(consumer string, was gitpeerv1alpha1.PeeringStatus) result {
	return result{peer: consumer, role: gitpeerv1alpha1.ProviderRole, heldBack: true,
		o: outcome{phase: was.Phase, message: was.Message, reason: was.Reason}}
}

// stepAll takes the planned steps, s.r.peeringWorkers at a time, and puts
// each peering's result at its index in results.
func (s *session) stepAll(ctx context.Context, steps []planned, consumers []string, results []result) {
	forEachAtOnce(len(steps), s.r.peeringWorkers, func(k int) {
		pl := steps[k]
		results[pl.i] = result{peer: consumers[pl.i], role: gitpeerv1alpha1.ProviderRole, o: s.provideRecovering(ctx, consumers[pl.i], func() outcome {
			return s.providerStep().provide(ctx, pl.p)
		}), heldBack: pl.p.heldBack}
	})
	s.settle(steps, consumers, results)
}

// stepRecorded is stepAll for steps that sign: each step decides and stages
// its records (stageRecordActions), the records Secrets are written once
// each (flushRecords), then the steps whose records are durable apply the
// rest of their plans. The steps of a signing chunk share records Secrets
// (provideAll sorts them so): this spares a write per record.
func (s *session) stepRecorded(ctx context.Context, steps []planned, consumers []string, results []result) {
	decisions := make([]decision, len(steps))
	forEachAtOnce(len(steps), s.r.peeringWorkers, func(k int) {
		if o := s.provideRecovering(ctx, consumers[steps[k].i], func() outcome {
			decisions[k] = s.providerStep().decide(ctx, steps[k].p)
			s.providerStep().stageRecordActions(ctx, consumers[steps[k].i], &decisions[k])
			return outcome{}
		}); o.err != nil {
			decisions[k].done = &o
		}
	})
	failed := s.flushRecords(ctx, s.r.peeringWorkers)
	forEachAtOnce(len(steps), s.r.peeringWorkers, func(k int) {
		pl, d := steps[k], decisions[k]
		if err := failed[consumers[pl.i]]; err != nil && d.done == nil {
			d.done = &outcome{err: err}
		}
		results[pl.i] = result{peer: consumers[pl.i], role: gitpeerv1alpha1.ProviderRole, o: s.provideRecovering(ctx, consumers[pl.i], func() outcome {
			return s.providerStep().apply(ctx, pl.p, d)
		}), heldBack: pl.p.heldBack}
	})
	s.settle(steps, consumers, results)
}

// settle marks the results of steps settled or not, by their outcomes.
func (s *session) settle(steps []planned, consumers []string, results []result) {
	for _, pl := range steps {
		o := results[pl.i].o
		_, renews := s.roundReport().renewalOf(consumers[pl.i])
		results[pl.i].settled = incremental.Settled(incremental.Outcome{
			Phase: o.phase, Reason: o.reason, Failed: o.err != nil, HeldBack: pl.p.heldBack,
			Offered:        pl.p.done == nil && pl.p.step == provider.OfferNonce,
			RenewalUnknown: !s.liqoMode() && !renews,
		})
	}
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

// provideRecovering runs step, a part of consumer's step, with a panic
// turned into the peering's error: the other peerings of the round go on,
// and the agent does.
func (s *session) provideRecovering(ctx context.Context, consumer string, step func() outcome) (o outcome) {
	defer func() {
		if r := recover(); r != nil {
			log.FromContext(ctx).Error(fmt.Errorf("%v", r), "peering step panicked", "consumer", consumer, "stack", string(debug.Stack()))
			o = outcome{err: fmt.Errorf("panic: %v [recovered]", r)}
		}
	}()
	return step()
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
