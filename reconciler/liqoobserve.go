package reconciler

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitpeer/gitpeer/reconciler/plan/provider"
)

// observeLiqo makes the reads of p's step Issue or Maintain in Liqo mode
// beyond planProvide's, into snap: the API server the provider publishes,
// and for an issuance what verifying the Tenant reads (observeTenant), the
// bindings a refused one would lose when one is applied, and, when none is,
// whether Liqo's certificate cache shows one was applied and issued before
// (provider.PlanLiqoIssue).
func (s liqoProvider) observeLiqo(ctx context.Context, p providing, snap provider.Snapshot) (provider.Snapshot, error) {
	step := s.providerStep()
	if p.step == provider.Issue {
		s.r.slices.start() // Liqo's ResourceSlice CRD exists: watch what Liqo issues for slices
		var err error
		if snap, err = step.observeTenant(ctx, p.pe, p.ns, p.tenant); err != nil {
			return snap, err
		}
		if p.tenant != nil {
			err = step.observeBindings(ctx, p, &snap)
		} else {
			snap.LiqoCertificateCache, err = s.liqoCacheExists(ctx, p.ns)
		}
		if err != nil {
			return snap, err
		}
	}
	snap.APIServer = step.apiServer()
	return snap, nil
}

// liqoCacheExists reports whether Liqo's certificate cache of the control
// plane (provider.LiqoCertificateCache) is in the tenant namespace ns.
func (s liqoProvider) liqoCacheExists(ctx context.Context, ns string) (bool, error) {
	err := s.r.Get(ctx, client.ObjectKey{Namespace: ns, Name: provider.LiqoCertificateCache}, &corev1.Secret{})
	if err != nil {
		return false, client.IgnoreNotFound(err)
	}
	return true, nil
}
