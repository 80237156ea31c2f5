package reconciler

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
)

// failClosed answers a kustomized directory whose tenant.yaml is present but
// yields no valid Tenant (protocol.Documents.BuildFailed). The admin's patches
// cannot be known, so a Tenant in the cluster is drained: its condition set
// to Drained and its RoleBinding removed. Nothing is issued or renewed; the
// Tenant, its key pin and identity.yaml stay, as for any drained Tenant, and
// a fixed build restores access.
func (s *session) failClosed(ctx context.Context, pe *protocol.Documents, tenant *authv1beta1.Tenant, exists bool) outcome {
	msg := fmt.Sprintf("%v; failing closed: nothing issued or renewed until the build is fixed", pe.BuildFailed)
	if !exists {
		return outcome{phase: gitpeerv1alpha1.PhaseFailed, message: msg}
	}
	if tenant.Spec.TenantCondition != authv1beta1.TenantConditionDrained {
		patch := client.MergeFrom(tenant.DeepCopy())
		tenant.Spec.TenantCondition = authv1beta1.TenantConditionDrained
		if err := s.r.Patch(ctx, tenant, patch); err != nil {
			return outcome{err: err}
		}
		s.r.eventAbout(s.obj, corev1.EventTypeWarning, ReasonRejected, pe.Consumer, "tenant %s drained until its directory builds again: %v", pe.Consumer, pe.BuildFailed)
	}
	if err := s.syncBinding(ctx, pe.Consumer, tenant.Namespace, authv1beta1.TenantConditionDrained); err != nil {
		return outcome{err: err}
	}
	return outcome{phase: gitpeerv1alpha1.PhaseFailed, message: msg + "; tenant drained: RBAC removed"}
}
