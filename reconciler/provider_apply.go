package reconciler

import (
	"context"
	"fmt"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/reconciler/provider"
)

// A provider's step for one peering, once planProvide decided it, is three
// stages with plain data between them: observeProvider reads (a
// provider.Snapshot), the step's planner in package provider decides (a
// provider.Plan), applyProvider writes. The steps that issue, renew and fail
// closed are not yet planned so (provider.go, failclosed.go).

// provideStep takes p's step, SkipInvalid, Revoke or OfferNonce: observe, plan, apply.
func (s *session) provideStep(ctx context.Context, p providing) outcome {
	snap, err := s.observeProvider(ctx, p)
	if err != nil {
		return outcome{err: err}
	}
	var plan provider.Plan
	switch p.step {
	case provider.SkipInvalid:
		plan = provider.PlanSkip(snap)
	case provider.Revoke:
		plan = provider.PlanRevoke(snap)
	case provider.OfferNonce:
		plan = provider.PlanOffer(snap)
	default:
		return outcome{err: fmt.Errorf("step %s has no planner", p.step)}
	}
	return s.applyProvider(ctx, p, plan)
}

// observeProvider makes the reads of p's step beyond planProvide's (the
// tenant namespace and the Tenant): the nonce Secret of a request to answer,
// unless a quiet round finds nonce.yaml on the branch or there is no tenant
// namespace to hold it.
func (s *session) observeProvider(ctx context.Context, p providing) (provider.Snapshot, error) {
	snap := provider.Snapshot{Docs: p.pe, Liqo: s.liqoMode(), Quiet: s.quiet(), Namespace: p.namespace, Tenant: p.tenant}
	if p.step != provider.OfferNonce || (p.pe.Nonce != nil && snap.Quiet) {
		return snap, nil
	}
	if p.namespace {
		secret, err := s.secretIfExists(ctx, p.ns, authv1beta1.NonceSecretName)
		if err != nil {
			return snap, err
		}
		if secret != nil {
			nonce := string(secret.Data[authv1beta1.NonceSecretField])
			snap.Nonce = &nonce
		}
	}
	if snap.Nonce == nil && !snap.Liqo {
		snap.FreshNonce = crypto.GenerateNonce()
	}
	return snap, nil
}

// applyProvider applies plan, the step of p, in its order; the first action
// that fails fails the peering. Git changes are staged for the round's one
// commit, with the events to record once they are on the branch.
func (s *session) applyProvider(ctx context.Context, p providing, plan provider.Plan) outcome {
	consumer, ns := p.pe.Consumer, p.ns
	for _, a := range plan.Actions {
		var err error
		switch a := a.(type) {
		case provider.EnsureNamespace:
			if err := s.ensureTenantNamespace(ctx, consumer, ns); err != nil {
				return s.skipForeign(p.pe, err)
			}
		case provider.PutNonceSecret:
			err = s.putNonce(ctx, consumer, ns, a.Nonce)
		case provider.CreateLiqoNonce:
			err = s.createLiqoNonce(ctx, consumer, ns)
		case provider.RevokeConsumer:
			err = s.revokeConsumer(ctx, consumer)
		case provider.Stage:
			s.stage(gitpeerv1alpha1.ProviderRole, consumer, a.Message, a.Routine, a.Changes...)
		case provider.NoteCertificate:
			s.noteCertificate(gitpeerv1alpha1.ProviderRole, consumer, certRecord{expiry: a.Expiry, renews: a.Renews, overdue: a.Overdue})
		default:
			err = fmt.Errorf("provider action %T has no applier", a)
		}
		if err != nil {
			return outcome{err: err}
		}
	}
	o := plan.Outcome
	return outcome{phase: o.Phase, message: o.Message, reason: o.Reason, err: o.Err}
}
