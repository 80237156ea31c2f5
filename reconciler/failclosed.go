package reconciler

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/reconciler/provider"
)

// failClosed takes the closure the planner decided for a directory whose
// tenant.yaml yields no Tenant the provider may act on: a kustomized
// directory that does not build (provider.FailClose) or a merged Tenant the
// trust rules refused (provider.CheckOrClose). The consumer's Tenant in the cluster
// (tenant, nil if none) is drained and its RoleBindings removed; nothing is
// issued, renewed or revoked.
func (s liqoProvider) failClosed(ctx context.Context, consumer string, tenant *authv1beta1.Tenant, closure provider.Closure) outcome {
	if closure.Drain {
		if s.liqo.Active {
			if err := s.recordSliceCertificates(ctx, consumer, tenant.Namespace); err != nil {
				return outcome{err: err}
			}
		}
		patch := client.MergeFrom(tenant.DeepCopy())
		tenant.Spec.TenantCondition = authv1beta1.TenantConditionDrained
		if err := s.r.Patch(ctx, tenant, patch); err != nil {
			return outcome{err: err}
		}
		s.r.eventAbout(s.obj, corev1.EventTypeWarning, gitpeerv1alpha1.RejectedReason, consumer, "tenant %s drained: %s", consumer, closure.Message)
	}
	if closure.Unbind {
		if err := s.providerStep().syncBinding(ctx, consumer, tenant.Namespace, authv1beta1.TenantConditionDrained); err != nil {
			return outcome{err: err}
		}
	}
	return outcome{phase: gitpeerv1alpha1.PhaseFailed, message: closure.Message}
}

// recordSliceCertificates records the certificates Liqo issued for the
// consumer's ResourceSlices, by slice, before a drain: Liqo's Drained deletes
// the slices, after which the agent, which may not list Secrets, can no
// longer find them, and a later revocation or re-peering refusal must still
// know their serials. Their caches stay: Liqo's ResourceSlice controller
// writes a deleted one again while its slice is there; a rekey or a
// revocation deletes them by the recorded name once the slice is gone
// (deleteGoneSliceCaches).
func (s liqoProvider) recordSliceCertificates(ctx context.Context, consumer, ns string) error {
	drained, err := s.liqoReplicated(ctx, consumer, ns, provider.LiqoDrainedKinds)
	if err != nil {
		return err
	}
	return s.recordLiqoCertificates(ctx, consumer, ns, drained, liqoCaches(drained)[1:])
}
