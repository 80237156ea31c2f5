package reconciler

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/reconciler/provider"
	"github.com/gitpeer/gitpeer/vocabulary"
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
	o, _, _ := s.applyProvider(ctx, p.pe, p.ns, p.tenant, plan)
	return o
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

// observeTenant makes the reads of verifying the Tenant merged in pe: the
// provider's nonce for the consumer (its Secret, never created here), its
// records and its override annotations.
func (s *session) observeTenant(ctx context.Context, pe *protocol.Documents, ns string, current *authv1beta1.Tenant) (provider.Snapshot, error) {
	annotations := s.obj.GetAnnotations()
	snap := provider.Snapshot{Docs: pe, Liqo: s.liqoMode(), Quiet: s.quiet(), Tenant: current,
		Rekey:         annotations[gitpeerv1alpha1.RekeyAnnotationPrefix+pe.Consumer],
		Revival:       annotations[gitpeerv1alpha1.RevivalAnnotationPrefix+pe.Consumer],
		AllowProxyURL: s.obj.Spec.Provider.AllowProxyURL,
	}
	secret, err := s.secretIfExists(ctx, ns, authv1beta1.NonceSecretName)
	if err != nil {
		return snap, err
	}
	if secret != nil {
		nonce := string(secret.Data[authv1beta1.NonceSecretField])
		snap.Nonce = &nonce
	}
	snap.Records, err = s.records(ctx, pe.Consumer)
	return snap, err
}

// applyProvider applies plan, a step for the peering pe whose tenant
// namespace is ns and applied Tenant current (nil if none), in its order.
// The first action that fails stops it (stopped), with the peering's
// outcome; otherwise the outcome is the plan's, and tenant the Tenant an
// ApplyTenant wrote. Git changes are staged for the round's one commit,
// with the events to record once they are on the branch.
func (s *session) applyProvider(ctx context.Context, pe *protocol.Documents, ns string, current *authv1beta1.Tenant, plan provider.Plan) (o outcome, tenant *authv1beta1.Tenant, stopped bool) {
	consumer := pe.Consumer
	for _, a := range plan.Actions {
		var err error
		switch a := a.(type) {
		case provider.EnsureNamespace:
			if err := s.ensureTenantNamespace(ctx, consumer, ns); err != nil {
				return s.skipForeign(pe, err), nil, true
			}
		case provider.PutNonceSecret:
			err = s.putNonce(ctx, consumer, ns, a.Nonce)
		case provider.CreateLiqoNonce:
			err = s.createLiqoNonce(ctx, consumer, ns)
		case provider.RevokeConsumer:
			err = s.revokeConsumer(ctx, consumer)
		case provider.Stage:
			s.stage(gitpeerv1alpha1.ProviderRole, consumer, a.Message, a.Routine, a.Changes...)
		case provider.CloseFailing:
			if o := s.failClosed(ctx, consumer, current, a.Closure); o.err != nil {
				return o, nil, true
			}
		case provider.RecordKeyPin:
			err = s.recordKeyPin(ctx, consumer, a.Pin)
		case provider.CheckStrayTenant:
			if stray := s.strayLiqoTenant(ctx, consumer, ns); stray != nil {
				return *stray, nil, true
			}
		case provider.DropStaleLiqoCache:
			err = s.dropStaleLiqoCache(ctx, pe, ns)
		case provider.ApplyTenant:
			tenant, err = s.putTenant(ctx, consumer, ns, a)
		case provider.RemoveAnnotation:
			err = s.removeAnnotation(ctx, a.Key)
		case provider.Event:
			eventType := corev1.EventTypeNormal
			if a.Warning {
				eventType = corev1.EventTypeWarning
			}
			s.r.eventAbout(s.obj, eventType, a.Reason, a.About, "%s", a.Message)
		case provider.NoteCertificate:
			s.noteCertificate(gitpeerv1alpha1.ProviderRole, consumer, certRecord{expiry: a.Expiry, renews: a.Renews, overdue: a.Overdue})
		default:
			err = fmt.Errorf("provider action %T has no applier", a)
		}
		if err != nil {
			return outcome{err: err}, nil, true
		}
	}
	po := plan.Outcome
	return outcome{phase: po.Phase, message: po.Message, reason: po.Reason, err: po.Err}, tenant, false
}

// putTenant creates or updates the consumer's Tenant in ns as a says,
// labelled as this PeeringRepository's.
func (s *session) putTenant(ctx context.Context, consumer, ns string, a provider.ApplyTenant) (*authv1beta1.Tenant, error) {
	tenant := &authv1beta1.Tenant{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: consumer}}
	_, err := controllerutil.CreateOrUpdate(ctx, s.r.Client, tenant, func() error {
		metav1.SetMetaDataLabel(&tenant.ObjectMeta, authv1beta1.RemoteClusterIDLabel, consumer)
		metav1.SetMetaDataLabel(&tenant.ObjectMeta, vocabulary.ManagedByLabel, vocabulary.ManagedBy)
		metav1.SetMetaDataLabel(&tenant.ObjectMeta, vocabulary.OwnerLabel, string(s.obj.UID))
		recordOverrides(tenant, a.Used, a.Applied)
		tenant.Spec = a.Spec
		return nil
	})
	return tenant, err
}
