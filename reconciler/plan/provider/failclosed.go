package provider

import (
	"fmt"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
)

// PlanFailClosed is step FailClosed: a kustomized directory whose
// tenant.yaml does not build (FailClose) fails closed.
func PlanFailClosed(s Snapshot) Plan {
	closure := FailClose(s.Docs.BuildFailed, s.Tenant)
	var p Plan
	p.close(s, closure)
	p.Outcome = Outcome{Phase: gitpeerv1alpha1.PhaseFailed, Message: closure.Message}
	return p
}

// close takes closure on the consumer's applied Tenant (s.Tenant): it is
// drained, in Liqo mode once the certificates of its ResourceSlices are
// recorded (Liqo's Drained deletes the slices, and the agent, which may not
// list Secrets, could no longer find them), and its RoleBindings removed.
// Nothing is issued, renewed or revoked.
func (p *Plan) close(s Snapshot, closure Closure) {
	consumer := s.Docs.Consumer
	if closure.Drain {
		if s.Liqo {
			p.add(RecordSliceCertificates{})
		}
		p.add(SetTenantCondition{Condition: authv1beta1.TenantConditionDrained},
			Event{Warning: true, Reason: gitpeerv1alpha1.RejectedReason, About: consumer, Message: fmt.Sprintf("tenant %s drained: %s", consumer, closure.Message)})
	}
	if closure.Unbind {
		p.add(Bind{Bindings: PlanBindings(s.Bindings, consumer, s.ClusterRole, authv1beta1.TenantConditionDrained)})
	}
}
