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
// trust rules refused (provider.Verify). The consumer's Tenant in the cluster
// (tenant, nil if none) is drained and its RoleBindings removed; nothing is
// issued, renewed or revoked.
func (s *session) failClosed(ctx context.Context, consumer string, tenant *authv1beta1.Tenant, closure provider.Closure) outcome {
	if closure.Drain {
		patch := client.MergeFrom(tenant.DeepCopy())
		tenant.Spec.TenantCondition = authv1beta1.TenantConditionDrained
		if err := s.r.Patch(ctx, tenant, patch); err != nil {
			return outcome{err: err}
		}
		s.r.eventAbout(s.obj, corev1.EventTypeWarning, gitpeerv1alpha1.RejectedReason, consumer, "tenant %s drained: %s", consumer, closure.Message)
	}
	if closure.Unbind {
		if err := s.syncBinding(ctx, consumer, tenant.Namespace, authv1beta1.TenantConditionDrained); err != nil {
			return outcome{err: err}
		}
	}
	return outcome{phase: gitpeerv1alpha1.PhaseFailed, message: closure.Message}
}
