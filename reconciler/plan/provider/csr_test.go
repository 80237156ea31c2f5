package provider

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// TestOwnCSR: a CSR counts as the agent's for a signing only when every
// property the agent sets is exactly what it would set for that signing.
func TestOwnCSR(t *testing.T) {
	first := Signing{Consumer: "consumer-1", Owner: "repo-uid", Request: []byte("csr"), Signature: []byte("sig"), TTL: 24 * time.Hour}
	renewal := first
	renewal.Renews = "1f"
	for _, tc := range []struct {
		name   string
		sg     Signing
		mutate func(*certificatesv1.CertificateSigningRequest)
		want   bool
	}{
		{"as created", first, func(*certificatesv1.CertificateSigningRequest) {}, true},
		{"renewal as created", renewal, func(*certificatesv1.CertificateSigningRequest) {}, true},
		{"first issuance's CSR for a renewal", renewal, func(c *certificatesv1.CertificateSigningRequest) { delete(c.Annotations, vocabulary.RenewsAnnotation) }, false},
		{"renewal of another certificate", renewal, func(c *certificatesv1.CertificateSigningRequest) { c.Annotations[vocabulary.RenewsAnnotation] = "2a" }, false},
		{"renewal CSR for a first issuance", first, func(c *certificatesv1.CertificateSigningRequest) { c.Annotations[vocabulary.RenewsAnnotation] = "1f" }, false},
		{"an earlier Tenant's", first, func(c *certificatesv1.CertificateSigningRequest) {
			c.Annotations[vocabulary.TenantSignatureAnnotation] = "00"
		}, false},
		{"another repository's", first, func(c *certificatesv1.CertificateSigningRequest) { c.Labels[vocabulary.OwnerLabel] = "other-uid" }, false},
		{"no owner label", first, func(c *certificatesv1.CertificateSigningRequest) { delete(c.Labels, vocabulary.OwnerLabel) }, false},
		{"other request bytes", first, func(c *certificatesv1.CertificateSigningRequest) { c.Spec.Request = []byte("csr2") }, false},
		{"another signer", first, func(c *certificatesv1.CertificateSigningRequest) {
			c.Spec.SignerName = certificatesv1.KubeAPIServerClientKubeletSignerName
		}, false},
		{"extra usage", first, func(c *certificatesv1.CertificateSigningRequest) {
			c.Spec.Usages = append(c.Spec.Usages, certificatesv1.UsageServerAuth)
		}, false},
		{"usages reordered", first, func(c *certificatesv1.CertificateSigningRequest) {
			c.Spec.Usages[0], c.Spec.Usages[2] = c.Spec.Usages[2], c.Spec.Usages[0]
		}, false},
		{"another lifetime", first, func(c *certificatesv1.CertificateSigningRequest) { *c.Spec.ExpirationSeconds = 600 }, false},
		{"no lifetime", first, func(c *certificatesv1.CertificateSigningRequest) { c.Spec.ExpirationSeconds = nil }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			csr := NewCSR(tc.sg)
			tc.mutate(csr)
			if got := OwnCSR(csr, tc.sg); got != tc.want {
				t.Fatalf("OwnCSR = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestNewCSR: the CSR the agent creates asks the kube-apiserver-client
// signer for a client certificate of the Tenant's CSR, for the configured
// lifetime, labelled for the consumer and the PeeringRepository.
func TestNewCSR(t *testing.T) {
	csr := NewCSR(Signing{Consumer: "consumer-1", Owner: "repo-uid", Request: []byte("csr"), Signature: []byte("sig"), TTL: time.Hour})
	if csr.Name != "" || csr.GenerateName != "gitpeer-consumer-1-" {
		t.Errorf("name %q, generateName %q: the API server must name it", csr.Name, csr.GenerateName)
	}
	if csr.Labels[vocabulary.ConsumerLabel] != "consumer-1" || csr.Labels[vocabulary.OwnerLabel] != "repo-uid" || csr.Labels[vocabulary.ManagedByLabel] != vocabulary.ManagedBy {
		t.Errorf("labels %v", csr.Labels)
	}
	if _, renews := csr.Annotations[vocabulary.RenewsAnnotation]; renews {
		t.Error("a first issuance carries a renews annotation")
	}
	spec := csr.Spec
	if spec.SignerName != certificatesv1.KubeAPIServerClientSignerName || *spec.ExpirationSeconds != 3600 || string(spec.Request) != "csr" {
		t.Errorf("spec %+v", spec)
	}
	if len(spec.Usages) != 3 || spec.Usages[2] != certificatesv1.UsageClientAuth {
		t.Errorf("usages %v", spec.Usages)
	}
}

// csrOf is a CSR with name, created age ago, with the certificate cert (nil:
// none) and the true conditions conds.
func csrOf(name string, age time.Duration, cert []byte, conds ...certificatesv1.RequestConditionType) *certificatesv1.CertificateSigningRequest {
	c := &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(time.Unix(0, 0).Add(-age))}}
	for _, t := range conds {
		c.Status.Conditions = append(c.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{Type: t, Status: corev1.ConditionTrue, Reason: "R", Message: "m"})
	}
	c.Status.Certificate = cert
	return c
}

// TestPickCSR: among the agent's own CSRs for one signing, an issued one wins,
// then an approved, then a pending one; a refused one only when alone.
func TestPickCSR(t *testing.T) {
	denied := csrOf("denied", 3*time.Hour, nil, certificatesv1.CertificateDenied)
	pendingOld, pendingNew := csrOf("pending-old", 2*time.Hour, nil), csrOf("pending-new", time.Hour, nil)
	approved := csrOf("approved", time.Minute, nil, certificatesv1.CertificateApproved)
	issued := csrOf("issued", 0, []byte("cert"), certificatesv1.CertificateApproved)
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
			got := PickCSR(tc.csrs)
			if (got == nil && tc.want != "") || (got != nil && got.Name != tc.want) {
				t.Fatalf("PickCSR = %v, want %q", got, tc.want)
			}
		})
	}
}

func TestRefusal(t *testing.T) {
	for name, tc := range map[string]struct {
		csr  *certificatesv1.CertificateSigningRequest
		want string
	}{
		"pending":  {csrOf("c", 0, nil), ""},
		"approved": {csrOf("c", 0, nil, certificatesv1.CertificateApproved), ""},
		"denied":   {csrOf("c", 0, nil, certificatesv1.CertificateDenied), "denied: R m"},
		"failed":   {csrOf("c", 0, nil, certificatesv1.CertificateApproved, certificatesv1.CertificateFailed), "failed: R m"},
	} {
		t.Run(name, func(t *testing.T) {
			if got := Refusal(tc.csr); got != tc.want {
				t.Errorf("Refusal = %q, want %q", got, tc.want)
			}
		})
	}
	notTrue := csrOf("c", 0, nil)
	notTrue.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateDenied, Status: corev1.ConditionFalse}}
	if Refusal(notTrue) != "" || Approved(notTrue) {
		t.Error("a condition that is not True counts")
	}
}

// TestPlanSigning: the agent acts only on a CSR its own user requested with
// exactly the signing's properties, and takes a certificate only if it is for
// the Tenant's key and subject; whatever else is labelled for the consumer is
// reported or ignored.
func TestPlanSigning(t *testing.T) {
	const agent = "system:serviceaccount:gitpeer:agent"
	key, _ := crypto.GenerateKey(crypto.Ed25519)
	other, _ := crypto.GenerateKey(crypto.Ed25519)
	sg := Signing{Consumer: "consumer-1", Owner: "repo-uid", Request: []byte("csr"), Key: key.Public(), Signature: []byte("sig"), TTL: time.Hour}
	// own is the agent's CSR for sg, with cert and conds.
	own := func(name string, cert []byte, conds ...certificatesv1.RequestConditionType) *certificatesv1.CertificateSigningRequest {
		c := NewCSR(sg)
		c.Name, c.Spec.Username = name, agent
		c.Status = csrOf(name, 0, cert, conds...).Status
		return c
	}
	// by is c requested by user instead.
	by := func(user string, c *certificatesv1.CertificateSigningRequest) *certificatesv1.CertificateSigningRequest {
		c.Spec.Username = user
		return c
	}
	// changed is c with its spec changed by mutate.
	changed := func(c *certificatesv1.CertificateSigningRequest, mutate func(*certificatesv1.CertificateSigningRequest)) *certificatesv1.CertificateSigningRequest {
		mutate(c)
		return c
	}
	good := liqoCert(t, key, nil)
	approved := certificatesv1.CertificateApproved
	for _, tc := range []struct {
		name    string
		csrs    []*certificatesv1.CertificateSigningRequest
		step    SigningStep
		csr     string // the CSR chosen
		foreign []string
		why     string
	}{
		{name: "nothing labelled: create", step: CreateCSR},
		{name: "pending: approve", csrs: []*certificatesv1.CertificateSigningRequest{own("mine", nil)}, step: ApproveCSR, csr: "mine"},
		{name: "approved: wait", csrs: []*certificatesv1.CertificateSigningRequest{own("mine", nil, approved)}, step: WaitForCertificate, csr: "mine"},
		{name: "issued for the Tenant's key and subject", csrs: []*certificatesv1.CertificateSigningRequest{own("mine", good, approved)}, step: Issued, csr: "mine"},
		{name: "denied: refused", csrs: []*certificatesv1.CertificateSigningRequest{own("mine", nil, certificatesv1.CertificateDenied)}, step: CSRRefused, csr: "mine", why: "denied: R m"},
		{name: "failed after approval: refused", csrs: []*certificatesv1.CertificateSigningRequest{own("mine", nil, approved, certificatesv1.CertificateFailed)}, step: CSRRefused, csr: "mine", why: "failed: R m"},
		{
			name: "foreign CSR with the agent's labels and properties, another requester: reported, a CSR of the agent's own created",
			csrs: []*certificatesv1.CertificateSigningRequest{by("mallory", own("planted", good, approved))}, step: CreateCSR, foreign: []string{"planted"},
		},
		{
			name: "foreign CSR beside the agent's: reported, the agent's approved",
			csrs: []*certificatesv1.CertificateSigningRequest{by("mallory", own("planted", nil)), own("mine", nil)}, step: ApproveCSR, csr: "mine", foreign: []string{"planted"},
		},
		{
			name: "foreign CSR issued, the agent's pending: never the foreign certificate",
			csrs: []*certificatesv1.CertificateSigningRequest{by("mallory", own("planted", good, approved)), own("mine", nil, approved)}, step: WaitForCertificate, csr: "mine", foreign: []string{"planted"},
		},
		{
			name: "the agent's, another signer: not for this signing",
			csrs: []*certificatesv1.CertificateSigningRequest{changed(own("kubelet", good, approved), func(c *certificatesv1.CertificateSigningRequest) {
				c.Spec.SignerName = certificatesv1.KubeAPIServerClientKubeletSignerName
			})}, step: CreateCSR,
		},
		{
			name: "the agent's, server usage: not for this signing",
			csrs: []*certificatesv1.CertificateSigningRequest{changed(own("server", good, approved), func(c *certificatesv1.CertificateSigningRequest) {
				c.Spec.Usages = append(c.Spec.Usages, certificatesv1.UsageServerAuth)
			})}, step: CreateCSR,
		},
		{
			name: "the agent's, another lifetime: not for this signing",
			csrs: []*certificatesv1.CertificateSigningRequest{changed(own("long", good, approved), func(c *certificatesv1.CertificateSigningRequest) {
				*c.Spec.ExpirationSeconds = 365 * 24 * 3600
			})}, step: CreateCSR,
		},
		{
			name: "the agent's, of an earlier Tenant: not for this signing",
			csrs: []*certificatesv1.CertificateSigningRequest{changed(own("earlier", good, approved), func(c *certificatesv1.CertificateSigningRequest) {
				c.Annotations[vocabulary.TenantSignatureAnnotation] = "00"
			})}, step: CreateCSR,
		},
		{
			name: "certificate for another key: rejected",
			csrs: []*certificatesv1.CertificateSigningRequest{own("mine", liqoCert(t, other, nil), approved)}, step: CertificateRejected, csr: "mine", why: "is not for the Tenant's public key",
		},
		{
			name: "certificate for another CN: rejected",
			csrs: []*certificatesv1.CertificateSigningRequest{own("mine", liqoCert(t, key, func(c *x509.Certificate) { c.Subject.CommonName = "consumer-2" }), approved)},
			step: CertificateRejected, csr: "mine", why: `is for "consumer-2", not "consumer-1"`,
		},
		{
			name: "certificate with a privileged group: rejected",
			csrs: []*certificatesv1.CertificateSigningRequest{own("mine", liqoCert(t, key, func(c *x509.Certificate) {
				c.Subject = pkix.Name{CommonName: "consumer-1", Organization: []string{"liqo.io", "system:masters"}}
			}), approved)},
			step: CertificateRejected, csr: "mine", why: "organization [liqo.io system:masters] is not [liqo.io]",
		},
		{
			name: "not a certificate: rejected",
			csrs: []*certificatesv1.CertificateSigningRequest{own("mine", []byte("garbage"), approved)}, step: CertificateRejected, csr: "mine", why: "issued certificate",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := PlanSigning(tc.csrs, agent, sg)
			if p.Step != tc.step {
				t.Fatalf("step %s, want %s (why %q)", p.Step, tc.step, p.Why)
			}
			chosen := ""
			if p.CSR != nil {
				chosen = p.CSR.Name
			}
			if chosen != tc.csr {
				t.Errorf("CSR %q, want %q", chosen, tc.csr)
			}
			var foreign []string
			for _, c := range p.Foreign {
				foreign = append(foreign, c.Name)
			}
			if strings.Join(foreign, ",") != strings.Join(tc.foreign, ",") {
				t.Errorf("foreign %v, want %v", foreign, tc.foreign)
			}
			if !strings.Contains(p.Why, tc.why) || (tc.why == "") != (p.Why == "") {
				t.Errorf("why %q, want %q", p.Why, tc.why)
			}
			if (p.Step == Issued) != (p.Certificate != nil) {
				t.Errorf("certificate %v at step %s", p.Certificate, p.Step)
			}
		})
	}
}
