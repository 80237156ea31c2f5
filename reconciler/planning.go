package reconciler

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/reconciler/plan/ownership"
	"github.com/gitpeer/gitpeer/reconciler/plan/provider"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
)

// planProvide plans the provider side of the peering pe, writing nothing:
// observePlanning reads, round.Plan (package provider) decides the step, its
// adoption, admission and place within the round's limit, and the actions
// that open the step or report it; provide applies them. The round plans its
// peerings one after the other, in its order, so that the same requests are
// admitted and the same peerings act whatever order they then run in
// (provideAll).
func (s providerStep) planProvide(ctx context.Context, pe *protocol.Documents, round *provider.Round) providing {
	p := providing{pe: pe, ns: authv1beta1.TenantNamespaceName(authv1beta1.ClusterID(pe.Consumer))}
	observed, err := s.observePlanning(ctx, pe, p.ns)
	if err != nil {
		s.owning().noteAdoptionFailed(err)
		p.done = &outcome{err: err}
		return p
	}
	planned := round.Plan(observed, s.r.Now())
	p.step, p.opening, p.tenant, p.namespace = planned.Step, planned.Opening, planned.Tenant, planned.Namespace
	p.signs, p.heldBack = planned.Signs, planned.HeldBack
	if planned.Done != nil {
		o := providerOutcome(*planned.Done)
		p.done = &o
	}
	return p
}

// observePlanning makes the reads of planning the peering pe: its tenant
// namespace ns, what deciding its adoption takes (observeNamespace), its
// Tenant, and the settings planning reads.
func (s providerStep) observePlanning(ctx context.Context, pe *protocol.Documents, ns string) (provider.Peering, error) {
	p := provider.Peering{Docs: pe, Liqo: s.liqoMode(), Mode: s.modeName(), ModeSummary: s.liqo.String(),
		SwitchAccepted: s.obj.GetAnnotations()[gitpeerv1alpha1.SwitchModeAnnotationPrefix+pe.Consumer],
		Allowed:        s.obj.Spec.Provider.AllowedConsumers}
	var err error
	if p.Namespace, _, err = s.owning().observeNamespace(ctx, pe.Consumer, ns); err != nil || !p.Namespace.Found {
		return p, err
	}
	tenant := &authv1beta1.Tenant{}
	if err := s.r.Get(ctx, client.ObjectKey{Namespace: ns, Name: pe.Consumer}, tenant); err != nil {
		if apierrors.IsNotFound(err) {
			return p, nil
		}
		return p, err
	}
	p.Tenant, p.TenantOwner = tenant, ownership.Of(tenant.Labels, s.obj.UID)
	return p, nil
}

// adoptObserved applies a, an adoption of the consumer's tenant namespace ns
// that planning decided (provider.PlanNamespace), to the namespace as it is now.
func (s owning) adoptObserved(ctx context.Context, consumer, ns string, a provider.Action) error {
	obj := &corev1.Namespace{}
	if err := s.r.Get(ctx, client.ObjectKey{Name: ns}, obj); err != nil {
		if _, legacy := a.(provider.AdoptNamespace); legacy {
			s.noteAdoptionFailed(errAdoption{err})
		}
		return err
	}
	return s.adoptNamespace(ctx, consumer, obj, a)
}
