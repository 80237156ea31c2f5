package reconciler

import (
	"crypto/x509"
	"math/big"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
)

// TestWatchLiqoRenewal: in Liqo mode the certificate Liqo put in the
// Tenant's status is watched as the provider's own: overdue is reported
// through renewalStalled, otherwise the peering is visited again when it
// would be overdue; a Drained Tenant, which Liqo does not renew, is not.
func TestWatchLiqoRenewal(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	obj := &gitpeerv1alpha1.PeeringRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "gitpeer-system", Name: "peering"}}
	// A 9-minute certificate: due 6 minutes after NotBefore, overdue 45 s later.
	cert := func(age time.Duration) *x509.Certificate {
		return &x509.Certificate{SerialNumber: big.NewInt(7), NotBefore: now.Add(-age), NotAfter: now.Add(-age + 9*time.Minute)}
	}
	tenant := func(condition authv1beta1.TenantCondition) *authv1beta1.Tenant {
		return &authv1beta1.Tenant{Spec: authv1beta1.TenantSpec{TenantCondition: condition}}
	}
	issued := outcome{phase: gitpeerv1alpha1.PhaseIssued, message: "issued"}
	for name, tc := range map[string]struct {
		tenant      *authv1beta1.Tenant
		age         time.Duration
		wantOverdue bool
		wantVisitAt time.Time // zero: none noted
	}{
		"fresh":                           {tenant(authv1beta1.TenantConditionActive), time.Minute, false, now.Add(-time.Minute + 6*time.Minute + 45*time.Second)},
		"due, Liqo has a moment":          {tenant(authv1beta1.TenantConditionActive), 6*time.Minute + 10*time.Second, false, now.Add(35 * time.Second)},
		"overdue: Liqo stalled":           {tenant(authv1beta1.TenantConditionActive), 7 * time.Minute, true, time.Time{}},
		"cordoned, still renewed by Liqo": {tenant(authv1beta1.TenantConditionCordoned), 7 * time.Minute, true, time.Time{}},
		"drained: Liqo renews nothing":    {tenant(authv1beta1.TenantConditionDrained), 7 * time.Minute, false, time.Time{}},
	} {
		t.Run(name, func(t *testing.T) {
			s := sessionOf(&PeeringRepositoryReconciler{Now: func() time.Time { return now }}, obj)
			o := s.liqoProvider().watchLiqoRenewal("c1", tc.tenant, cert(tc.age), issued)
			if got := o.reason == gitpeerv1alpha1.RenewalOverdueReason; got != tc.wantOverdue {
				t.Fatalf("reason %q, want overdue %v", o.reason, tc.wantOverdue)
			}
			if _, noted := s.report.overdue["c1"]; noted != tc.wantOverdue {
				t.Errorf("overdue noted for the condition: %v, want %v", noted, tc.wantOverdue)
			}
			if tc.wantOverdue && !strings.Contains(o.message, "Liqo's tenant controller has not renewed it") {
				t.Errorf("message %q does not say Liqo stalled", o.message)
			}
			if !tc.wantOverdue && o != issued {
				t.Errorf("outcome %+v, want %+v unchanged", o, issued)
			}
			if got := s.report.renewals["c1"]; !got.Equal(tc.wantVisitAt) {
				t.Errorf("visited again at %v, want %v", got, tc.wantVisitAt)
			}
			if rec := s.report.certs[peeringKey(gitpeerv1alpha1.ProviderRole, "c1")]; rec.renews == (tc.tenant.Spec.TenantCondition == authv1beta1.TenantConditionDrained) {
				t.Errorf("renewal-overdue series reported %v for condition %q", rec.renews, tc.tenant.Spec.TenantCondition)
			}
		})
	}
}
