package reconciler

import (
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
)

// TestOwnCSR: a CSR counts as the agent's for a signing only when every
// property the agent sets is exactly what it would set for that signing.
func TestOwnCSR(t *testing.T) {
	s := &session{obj: &gitpeerv1alpha1.PeeringRepository{
		ObjectMeta: metav1.ObjectMeta{UID: "repo-uid"},
		Spec:       gitpeerv1alpha1.PeeringRepositorySpec{Provider: &gitpeerv1alpha1.ProviderSpec{Enabled: true}},
	}}
	first := signing{consumer: "consumer-1", request: []byte("csr"), signature: []byte("sig")}
	renewal := first
	renewal.renews = "1f"
	for _, tc := range []struct {
		name   string
		sg     signing
		mutate func(*certificatesv1.CertificateSigningRequest)
		want   bool
	}{
		{"as created", first, func(*certificatesv1.CertificateSigningRequest) {}, true},
		{"renewal as created", renewal, func(*certificatesv1.CertificateSigningRequest) {}, true},
		{"first issuance's CSR for a renewal", renewal, func(c *certificatesv1.CertificateSigningRequest) { delete(c.Annotations, RenewsAnnotation) }, false},
		{"renewal of another certificate", renewal, func(c *certificatesv1.CertificateSigningRequest) { c.Annotations[RenewsAnnotation] = "2a" }, false},
		{"renewal CSR for a first issuance", first, func(c *certificatesv1.CertificateSigningRequest) { c.Annotations[RenewsAnnotation] = "1f" }, false},
		{"an earlier Tenant's", first, func(c *certificatesv1.CertificateSigningRequest) { c.Annotations[TenantSignatureAnnotation] = "00" }, false},
		{"another repository's", first, func(c *certificatesv1.CertificateSigningRequest) { c.Labels[OwnerLabel] = "other-uid" }, false},
		{"other request bytes", first, func(c *certificatesv1.CertificateSigningRequest) { c.Spec.Request = []byte("csr2") }, false},
		{"another signer", first, func(c *certificatesv1.CertificateSigningRequest) {
			c.Spec.SignerName = certificatesv1.KubeAPIServerClientKubeletSignerName
		}, false},
		{"extra usage", first, func(c *certificatesv1.CertificateSigningRequest) {
			c.Spec.Usages = append(c.Spec.Usages, certificatesv1.UsageServerAuth)
		}, false},
		{"another lifetime", first, func(c *certificatesv1.CertificateSigningRequest) { *c.Spec.ExpirationSeconds = 600 }, false},
		{"no lifetime", first, func(c *certificatesv1.CertificateSigningRequest) { c.Spec.ExpirationSeconds = nil }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			csr := s.newCSR(tc.sg)
			tc.mutate(csr)
			if got := s.ownCSR(csr, tc.sg); got != tc.want {
				t.Fatalf("ownCSR = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestPickCSR: among the agent's own CSRs for one signing, an issued one wins,
// then an approved, then a pending one; a refused one only when alone.
func TestPickCSR(t *testing.T) {
	csr := func(name string, age time.Duration, cert bool, conds ...certificatesv1.RequestConditionType) *certificatesv1.CertificateSigningRequest {
		c := &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(time.Unix(0, 0).Add(-age))}}
		for _, t := range conds {
			c.Status.Conditions = append(c.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{Type: t, Status: corev1.ConditionTrue})
		}
		if cert {
			c.Status.Certificate = []byte("cert")
		}
		return c
	}
	denied := csr("denied", 3*time.Hour, false, certificatesv1.CertificateDenied)
	pendingOld, pendingNew := csr("pending-old", 2*time.Hour, false), csr("pending-new", time.Hour, false)
	approved := csr("approved", time.Minute, false, certificatesv1.CertificateApproved)
	issued := csr("issued", 0, true, certificatesv1.CertificateApproved)
	for _, tc := range []struct {
		name string
		csrs []*certificatesv1.CertificateSigningRequest
		want string
	}{
		{"none", nil, ""},
		{"issued first", []*certificatesv1.CertificateSigningRequest{denied, pendingOld, approved, issued}, "issued"},
		{"then approved", []*certificatesv1.CertificateSigningRequest{denied, pendingOld, approved}, "approved"},
		{"then the oldest pending", []*certificatesv1.CertificateSigningRequest{pendingNew, denied, pendingOld}, "pending-old"},
		{"a refused one alone", []*certificatesv1.CertificateSigningRequest{denied}, "denied"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := pickCSR(tc.csrs)
			if (got == nil && tc.want != "") || (got != nil && got.Name != tc.want) {
				t.Fatalf("pickCSR = %v, want %q", got, tc.want)
			}
		})
	}
}
