package provider

import (
	gocrypto "crypto"
	"crypto/x509"
	"math/big"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/vocabulary"
)

const testAgent = "system:serviceaccount:gitpeer:agent"

// ownCSR is the agent's CSR name for sg, holding cert (nil: none), with the true conditions conds.
func ownCSR(sg Signing, name string, cert []byte, conds ...certificatesv1.RequestConditionType) *certificatesv1.CertificateSigningRequest {
	c := NewCSR(sg)
	c.Name, c.Spec.Username = name, testAgent
	c.Status = csrOf(name, 0, cert, conds...).Status
	return c
}

// certFor is a certificate for key, serial, valid from now+from to now+to.
func certFor(t *testing.T, key gocrypto.Signer, serial int64, from, to time.Duration) []byte {
	return liqoCert(t, key, func(c *x509.Certificate) {
		c.SerialNumber, c.NotBefore, c.NotAfter = big.NewInt(serial), time.Now().Add(from), time.Now().Add(to)
	})
}

// issuing is the Snapshot of step Issue for pe with the CSRs labelled for the consumer.
func issuing(pe Snapshot, csrs ...*certificatesv1.CertificateSigningRequest) Snapshot {
	pe.CSRs, pe.Agent, pe.Owner, pe.TTL, pe.ClusterRole = csrs, testAgent, "uid", time.Hour, "liqo-tenant"
	pe.CA, pe.APIServer = []byte("ca"), "https://provider-a:6443"
	return pe
}

// TestPlanIssue: each step of issuing the certificate of a merged Tenant,
// from a Snapshot: the CSR created, approved, waited for, refused, its
// certificate rejected, a foreign one reported; once issued, the
// certificate recorded before it is stored, then identity.yaml committed
// with a fresh nonce, the used one rotated.
func TestPlanIssue(t *testing.T) {
	nonce, fresh := crypto.GenerateNonce(), crypto.GenerateNonce()
	pe, _, key := peeringOf(t, nonce)
	other, _ := crypto.GenerateKey(crypto.Ed25519)
	sg := Signing{Consumer: "consumer-1", Owner: "uid", Request: pe.Tenant.Spec.CSR, Key: key.Public(), Signature: pe.Tenant.Spec.Signature, TTL: time.Hour}
	approved, denied := certificatesv1.CertificateApproved, certificatesv1.CertificateDenied
	good := certFor(t, key, 0x1f, -time.Minute, time.Hour)
	foreign := ownCSR(sg, "planted", good, approved)
	foreign.Spec.Username = "mallory"
	const verified = "RecordKeyPin; ApplyTenant; Bind"
	committed := "RecordSerial; StoreIssued; NoteRenewal; NoteCertificate; PutNonceSecret " + fresh + " replacing; Stage " + vocabulary.ActionIssueIdentity + " [put provider-a/consumer-1/identity.yaml, put provider-a/consumer-1/nonce.yaml]"
	for name, tc := range map[string]struct {
		csrs    []*certificatesv1.CertificateSigningRequest
		want    string
		phase   gitpeerv1alpha1.PeeringPhase
		message string
	}{
		"no CSR: one requested":            {nil, verified + "; QueueCSR", gitpeerv1alpha1.PhaseNonceIssued, "waiting for the certificate to be signed (CSR requested)"},
		"pending: approved":                {[]*certificatesv1.CertificateSigningRequest{ownCSR(sg, "mine", nil)}, verified + "; QueueCSR", gitpeerv1alpha1.PhaseNonceIssued, "(CSR mine)"},
		"approved: waiting for the signer": {[]*certificatesv1.CertificateSigningRequest{ownCSR(sg, "mine", nil, approved)}, verified, gitpeerv1alpha1.PhaseNonceIssued, "(CSR mine)"},
		"denied: refused until deleted":    {[]*certificatesv1.CertificateSigningRequest{ownCSR(sg, "mine", nil, denied)}, verified + "; Event " + vocabulary.ReasonCSRFailed, gitpeerv1alpha1.PhaseFailed, "delete it to retry"},
		"certificate for another key: rejected": {[]*certificatesv1.CertificateSigningRequest{ownCSR(sg, "mine", certFor(t, other, 2, -time.Minute, time.Hour), approved)},
			verified + "; Event " + vocabulary.ReasonCertificateRejected, gitpeerv1alpha1.PhaseFailed, "not stored nor committed"},
		"foreign CSR: reported, one of the agent's requested": {[]*certificatesv1.CertificateSigningRequest{foreign},
			verified + "; Event " + vocabulary.ReasonForeignCSR + "; QueueCSR", gitpeerv1alpha1.PhaseNonceIssued, "ignored CSR(s) not requested by the agent: planted"},
		"issued: recorded, stored, committed": {[]*certificatesv1.CertificateSigningRequest{ownCSR(sg, "mine", good, approved)}, verified + "; " + committed, gitpeerv1alpha1.PhaseIssued, "certificate 1f valid until"},
	} {
		t.Run(name, func(t *testing.T) {
			p := PlanIssue(issuing(Snapshot{Docs: pe, Nonce: &nonce, FreshNonce: fresh}, tc.csrs...), time.Now())
			if got := summary(p); got != tc.want {
				t.Errorf("actions:\n got %s\nwant %s", got, tc.want)
			}
			if p.Outcome.Phase != tc.phase || !strings.Contains(p.Outcome.Message, tc.message) || p.Outcome.Err != nil {
				t.Errorf("outcome %+v, want %s with %q", p.Outcome, tc.phase, tc.message)
			}
			for _, a := range p.Actions {
				if st, ok := a.(StoreIssued); ok && (string(st.AuthParams.SignedCRT) != string(good) || string(st.AuthParams.CA) != "ca" || st.AuthParams.APIServer != "https://provider-a:6443") {
					t.Errorf("stored %+v", st.AuthParams)
				}
			}
		})
	}
	t.Run("refused Tenant: nothing signed", func(t *testing.T) {
		wrong := crypto.GenerateNonce()
		p := PlanIssue(issuing(Snapshot{Docs: pe, Nonce: &wrong}, ownCSR(sg, "mine", good, approved)), time.Now())
		if got, want := summary(p), "Event "+gitpeerv1alpha1.RejectedReason; got != want {
			t.Errorf("actions:\n got %s\nwant %s", got, want)
		}
	})
}

// TestPlanMaintain: each step of keeping an issued peering, from a
// Snapshot: a quiet round commits identity.yaml only; the nonce is rotated
// once used; the branch's condition is applied and a drained Tenant
// unbound; a certificate due is renewed through a CSR, reported once its
// renewal is overdue, and committed once renewed.
func TestPlanMaintain(t *testing.T) {
	nonce, rotated, fresh := crypto.GenerateNonce(), crypto.GenerateNonce(), crypto.GenerateNonce()
	pe, _, key := peeringOf(t, nonce)
	pe.Identity = &authv1beta1.Identity{}
	tenant := func(crt []byte) *authv1beta1.Tenant {
		return &authv1beta1.Tenant{Spec: pe.Tenant.Spec, Status: authv1beta1.TenantStatus{AuthParams: &authv1beta1.AuthParams{CA: []byte("ca"), SignedCRT: crt, APIServer: "https://provider-a:6443"}}}
	}
	valid := certFor(t, key, 0x1f, -time.Minute, time.Hour)
	due := certFor(t, key, 0x1f, -90*time.Minute, 44*time.Minute) // due 40s ago
	overdue := certFor(t, key, 0x1f, -3*time.Hour, time.Minute)
	renewing := Signing{Consumer: "consumer-1", Owner: "uid", Request: pe.Tenant.Spec.CSR, Key: key.Public(), Signature: pe.Tenant.Spec.Signature, Renews: "1f", TTL: time.Hour}
	renewed := ownCSR(renewing, "renewal", certFor(t, key, 0x2a, -time.Minute, time.Hour), certificatesv1.CertificateApproved)
	drained := *pe
	drained.Tenant = pe.Tenant.DeepCopy()
	drained.Tenant.Spec.TenantCondition = authv1beta1.TenantConditionDrained
	binding := authv1beta1.RoleBindingName("liqo-tenant")
	const identity = "Stage " + vocabulary.ActionRenewIdentity + " [put provider-a/consumer-1/identity.yaml"
	const kept = "Bind; RecordSerial; NoteRenewal; NoteCertificate; "
	for name, tc := range map[string]struct {
		s      Snapshot
		want   string
		phase  gitpeerv1alpha1.PeeringPhase
		reason string
	}{
		"quiet round: identity.yaml only":      {Snapshot{Docs: pe, Tenant: tenant(valid), Quiet: true}, kept + identity + "]", gitpeerv1alpha1.PhaseIssued, ""},
		"nonce used: rotated":                  {Snapshot{Docs: pe, Tenant: tenant(valid), Nonce: &nonce, FreshNonce: fresh}, kept + "PutNonceSecret " + fresh + " replacing; " + identity + ", put provider-a/consumer-1/nonce.yaml]", gitpeerv1alpha1.PhaseIssued, ""},
		"nonce rotated already: kept":          {Snapshot{Docs: pe, Tenant: tenant(valid), Nonce: &rotated}, kept + identity + ", put provider-a/consumer-1/nonce.yaml]", gitpeerv1alpha1.PhaseIssued, ""},
		"drained on the branch: set, unbound":  {Snapshot{Docs: &drained, Tenant: tenant(valid), Quiet: true, Bindings: []string{binding}}, "SetTenantCondition; " + kept + identity + "]", gitpeerv1alpha1.PhaseDrained, ""},
		"renewal due: a CSR requested":         {Snapshot{Docs: pe, Tenant: tenant(due), Quiet: true}, "Bind; RecordSerial; QueueCSR; NoteCertificate", gitpeerv1alpha1.PhaseIssued, ""},
		"renewal overdue: reported":            {Snapshot{Docs: pe, Tenant: tenant(overdue), Quiet: true}, "Bind; RecordSerial; QueueCSR; NoteCertificate; NoteOverdue", gitpeerv1alpha1.PhaseIssued, gitpeerv1alpha1.RenewalOverdueReason},
		"renewed: recorded, stored, committed": {Snapshot{Docs: pe, Tenant: tenant(due), Quiet: true, Nonce: &rotated, CSRs: []*certificatesv1.CertificateSigningRequest{renewed}}, "Bind; RecordSerial; RecordSerial; StoreIssued; NoteRenewal; NoteCertificate; " + identity + ", put provider-a/consumer-1/nonce.yaml]", gitpeerv1alpha1.PhaseIssued, ""},
	} {
		t.Run(name, func(t *testing.T) {
			p := PlanMaintain(issuing(tc.s, tc.s.CSRs...), time.Now())
			if got := summary(p); got != tc.want {
				t.Errorf("actions:\n got %s\nwant %s", got, tc.want)
			}
			if p.Outcome.Phase != tc.phase || p.Outcome.Reason != tc.reason || p.Outcome.Err != nil {
				t.Errorf("outcome %+v, want %s, reason %q", p.Outcome, tc.phase, tc.reason)
			}
		})
	}
	t.Run("drained: every binding removed, none made", func(t *testing.T) {
		p := PlanMaintain(issuing(Snapshot{Docs: &drained, Tenant: tenant(valid), Quiet: true, Bindings: []string{binding}}), time.Now())
		b := p.Actions[1].(Bind).Bindings
		if b.Bind != nil || len(b.Delete) != 1 || b.Delete[0] != binding {
			t.Errorf("bindings %+v", b)
		}
	})
	t.Run("nonce used, none drawn: failed, nothing committed", func(t *testing.T) {
		p := PlanMaintain(issuing(Snapshot{Docs: pe, Tenant: tenant(valid), Nonce: &nonce}), time.Now())
		if p.Outcome.Err == nil || strings.Contains(summary(p), "Stage") || strings.Contains(summary(p), "PutNonceSecret") {
			t.Errorf("plan %s, outcome %+v", summary(p), p.Outcome)
		}
	})
	t.Run("stored certificate unreadable: failed", func(t *testing.T) {
		p := PlanMaintain(issuing(Snapshot{Docs: pe, Tenant: tenant([]byte("garbage"))}), time.Now())
		if p.Outcome.Err == nil || !strings.Contains(p.Outcome.Err.Error(), "stored certificate of consumer-1") {
			t.Errorf("outcome %+v", p.Outcome)
		}
	})
}
