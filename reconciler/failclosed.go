package reconciler

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/reconciler/provider"
)

// failClosed answers a kustomized directory whose tenant.yaml is present but
// yields no valid Tenant (protocol.Documents.BuildFailed), as
// provider.FailClose decides: a Tenant in the cluster (tenant, if exists) is
// drained and its RoleBindings removed.
func (s *session) failClosed(ctx context.Context, pe *protocol.Documents, tenant *authv1beta1.Tenant, exists bool) outcome {
	if !exists {
		tenant = nil
	}
	closure := provider.FailClose(pe.BuildFailed, tenant)
	if closure.Drain {
		patch := client.MergeFrom(tenant.DeepCopy())
		tenant.Spec.TenantCondition = authv1beta1.TenantConditionDrained
		if err := s.r.Patch(ctx, tenant, patch); err != nil {
			return outcome{err: err}
		}
		s.r.eventAbout(s.obj, corev1.EventTypeWarning, ReasonRejected, pe.Consumer, "tenant %s drained until its directory builds again: %v", pe.Consumer, pe.BuildFailed)
	}
	if closure.Unbind {
		if err := s.syncBinding(ctx, pe.Consumer, tenant.Namespace, authv1beta1.TenantConditionDrained); err != nil {
			return outcome{err: err}
		}
	}
	return outcome{phase: gitpeerv1alpha1.PhaseFailed, message: closure.Message}
}
