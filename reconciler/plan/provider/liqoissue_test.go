package provider

import (
	gocrypto "crypto"
	"crypto/x509"
	"errors"
	"strings"
	"testing"
	"time"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/vocabulary"
)

const liqoAPIServer = "https://provider-a:6443"

// liqoIssued is an applied Tenant of spec whose status holds what Liqo's
// tenant controller put there: crt, issued for liqoAPIServer.
func liqoIssued(spec authv1beta1.TenantSpec, crt []byte) *authv1beta1.Tenant {
	return &authv1beta1.Tenant{Spec: spec, Status: authv1beta1.TenantStatus{TenantNamespace: "liqo-tenant-consumer-1",
		AuthParams: &authv1beta1.AuthParams{CA: []byte("ca"), SignedCRT: crt, APIServer: liqoAPIServer}}}
}

// validFor is a certificate Liqo issued for key, valid from now+from to now+to.
func validFor(t *testing.T, key gocrypto.Signer, from, to time.Duration) []byte {
	return liqoCert(t, key, func(c *x509.Certificate) { c.NotBefore, c.NotAfter = time.Now().Add(from), time.Now().Add(to) })
}

// TestPlanLiqoMaintain: each case of keeping an issued peering in Liqo
// mode, from a Snapshot: the certificate in the Tenant's status refused
// (an IAM identity, one failing the checks), waited for (the key before a
// rekey), or recorded before it is committed, once per change of the
// status; the branch's condition applied; a mismatched API server reported;
// Liqo's renewal watched (the next visit, overdue, none when drained).
func TestPlanLiqoMaintain(t *testing.T) {
	nonce := crypto.GenerateNonce()
	pe, _, key := peeringOf(t, nonce)
	other, _ := crypto.GenerateKey(crypto.Ed25519)
	valid := validFor(t, key, -time.Hour, time.Hour)
	due := validFor(t, key, -90*time.Minute, 44*time.Minute) // due 40s ago, overdue in 11 minutes
	overdue := validFor(t, key, -3*time.Hour, time.Minute)   // overdue for 44 minutes
	stranger := liqoCert(t, key, func(c *x509.Certificate) { c.Subject.CommonName = "mallory" })
	published := func(crt []byte) *authv1beta1.Identity {
		return &authv1beta1.Identity{Spec: authv1beta1.IdentitySpec{AuthParams: *liqoIssued(pe.Tenant.Spec, crt).Status.AuthParams}}
	}
	aws := liqoIssued(pe.Tenant.Spec, valid)
	aws.Status.AuthParams.AwsConfig = &authv1beta1.AwsConfig{AwsUserArn: "arn:aws:iam::1:user/liqo-c1", AwsAccessKeyID: "AKIA", AwsSecretAccessKey: "s3cr3t-value", AwsRegion: "eu-west-1", AwsClusterName: "p"}
	badKey := liqoIssued(pe.Tenant.Spec, valid)
	badKey.Spec.PublicKey = []byte("garbage")
	drained := *pe
	drained.Tenant = pe.Tenant.DeepCopy()
	drained.Tenant.Spec.TenantCondition = authv1beta1.TenantConditionDrained
	cordoned := *pe
	cordoned.Tenant = pe.Tenant.DeepCopy()
	cordoned.Tenant.Spec.TenantCondition = authv1beta1.TenantConditionCordoned
	const (
		recorded = "RecordSerial; RecordWatchedSlices; "
		issue    = "Stage " + vocabulary.ActionIssueIdentity + " [put provider-a/consumer-1/identity.yaml]; "
		renew    = "Stage " + vocabulary.ActionRenewIdentity + " [put provider-a/consumer-1/identity.yaml]; "
		watched  = "NoteRenewal; NoteCertificate"
	)
	for name, tc := range map[string]struct {
		docs      *authv1beta1.Identity // identity.yaml on the branch
		tenant    *authv1beta1.Tenant
		condition *authv1beta1.Tenant // the branch's Tenant, when not pe's
		apiServer string
		want      string
		phase     gitpeerv1alpha1.PeeringPhase
		reason    string
		message   string
		err       string
	}{
		"first certificate: recorded, then committed":        {nil, liqoIssued(pe.Tenant.Spec, valid), nil, liqoAPIServer, recorded + issue + watched, gitpeerv1alpha1.PhaseIssued, "", "certificate 7 valid until", ""},
		"renewed by Liqo: committed as a renewal":            {published(due), liqoIssued(pe.Tenant.Spec, valid), nil, liqoAPIServer, recorded + renew + watched, gitpeerv1alpha1.PhaseIssued, "", "", ""},
		"on the branch already: recorded, nothing committed": {published(valid), liqoIssued(pe.Tenant.Spec, valid), nil, liqoAPIServer, recorded + watched, gitpeerv1alpha1.PhaseIssued, "", "", ""},
		"an IAM identity: refused, nothing committed":        {nil, aws, nil, liqoAPIServer, "Event " + vocabulary.ReasonLiqoAWSUnsupported, gitpeerv1alpha1.PhaseFailed, vocabulary.ReasonLiqoAWSUnsupported, "Liqo on EKS with IAM", ""},
		"the key before a rekey: waiting for Liqo":           {nil, liqoIssued(pe.Tenant.Spec, validFor(t, other, -time.Hour, time.Hour)), nil, liqoAPIServer, "", gitpeerv1alpha1.PhaseNonceIssued, "", "waiting for Liqo's tenant controller to issue its certificate", ""},
		"another subject: rejected, nothing recorded":        {nil, liqoIssued(pe.Tenant.Spec, stranger), nil, liqoAPIServer, "Event " + vocabulary.ReasonCertificateRejected, gitpeerv1alpha1.PhaseFailed, "", "certificate in the status of Tenant consumer-1 not committed", ""},
		"expired: rejected":                                  {nil, liqoIssued(pe.Tenant.Spec, validFor(t, key, -2*time.Hour, -time.Hour)), nil, liqoAPIServer, "Event " + vocabulary.ReasonCertificateRejected, gitpeerv1alpha1.PhaseFailed, "", "not committed", ""},
		"an unreadable key: failed":                          {nil, badKey, nil, liqoAPIServer, "", "", "", "", "applied Tenant of consumer-1"},
		"another API server published: reported":             {published(valid), liqoIssued(pe.Tenant.Spec, valid), nil, "provider-b:6443", recorded + "Event " + vocabulary.ReasonLiqoAPIServerMismatch + "; " + watched, gitpeerv1alpha1.PhaseIssued, vocabulary.ReasonLiqoAPIServerMismatch, `publishes "provider-b:6443"`, ""},
		"the same API server without a scheme: quiet":        {published(valid), liqoIssued(pe.Tenant.Spec, valid), nil, "provider-a:6443/", recorded + watched, gitpeerv1alpha1.PhaseIssued, "", "", ""},
		"due: Liqo has a moment":                             {published(due), liqoIssued(pe.Tenant.Spec, due), nil, liqoAPIServer, recorded + watched, gitpeerv1alpha1.PhaseIssued, "", "", ""},
		"overdue: Liqo stalled, reported":                    {published(overdue), liqoIssued(pe.Tenant.Spec, overdue), nil, liqoAPIServer, recorded + "NoteCertificate; NoteOverdue", gitpeerv1alpha1.PhaseIssued, gitpeerv1alpha1.RenewalOverdueReason, "Liqo's tenant controller has not renewed it", ""},
		"cordoned on the branch: set, still renewed by Liqo": {published(overdue), liqoIssued(pe.Tenant.Spec, overdue), cordoned.Tenant, liqoAPIServer, "SetTenantCondition; " + recorded + "NoteCertificate; NoteOverdue", gitpeerv1alpha1.PhaseCordoned, gitpeerv1alpha1.RenewalOverdueReason, "tenant cordoned", ""},
		"drained on the branch: set, Liqo renews nothing":    {published(overdue), liqoIssued(pe.Tenant.Spec, overdue), drained.Tenant, liqoAPIServer, "SetTenantCondition; " + recorded + "NoteCertificate", gitpeerv1alpha1.PhaseDrained, "", "tenant drained", ""},
	} {
		t.Run(name, func(t *testing.T) {
			docs := *pe
			docs.Identity = tc.docs
			if tc.condition != nil {
				docs.Tenant = tc.condition
			}
			now := time.Now()
			p := PlanLiqoMaintain(Snapshot{Docs: &docs, Liqo: true, Tenant: tc.tenant, APIServer: tc.apiServer}, now)
			if got := summary(p); got != tc.want {
				t.Errorf("actions:\n got %s\nwant %s", got, tc.want)
			}
			if tc.err != "" {
				if p.Outcome.Err == nil || !strings.Contains(p.Outcome.Err.Error(), tc.err) {
					t.Errorf("outcome %+v, want error %q", p.Outcome, tc.err)
				}
				return
			}
			if p.Outcome.Err != nil || p.Outcome.Phase != tc.phase || p.Outcome.Reason != tc.reason || !strings.Contains(p.Outcome.Message, tc.message) {
				t.Errorf("outcome %+v, want %s, reason %q, with %q", p.Outcome, tc.phase, tc.reason, tc.message)
			}
			for _, a := range p.Actions {
				switch a := a.(type) {
				case Event:
					if strings.Contains(a.Message, "s3cr3t-value") {
						t.Errorf("event %s carries the AWS secret", a.Reason)
					}
				case SetTenantCondition:
					if a.Condition != docs.Tenant.Spec.TenantCondition {
						t.Errorf("condition set to %q, want the branch's %q", a.Condition, docs.Tenant.Spec.TenantCondition)
					}
				case NoteRenewal:
					cert, _ := crypto.ParseCertificatePEM(tc.tenant.Status.AuthParams.SignedCRT)
					if want := RenewalOf(cert, now).At.Add(OverdueAfter(cert)); !a.At.Equal(want) {
						t.Errorf("visited again at %v, want %v (when it would be overdue)", a.At, want)
					}
				case NoteCertificate:
					if a.Renews == (docs.Tenant.Spec.TenantCondition == authv1beta1.TenantConditionDrained) {
						t.Errorf("certificate noted renewed %v for condition %q", a.Renews, docs.Tenant.Spec.TenantCondition)
					}
				case Stage:
					if a.Routine[0].Reason != map[string]string{vocabulary.ActionIssueIdentity: gitpeerv1alpha1.IdentityIssuedReason, vocabulary.ActionRenewIdentity: gitpeerv1alpha1.IdentityRenewedReason}[a.Message.Action] {
						t.Errorf("stage %s reports %s", a.Message.Action, a.Routine[0].Reason)
					}
				}
			}
			if strings.Contains(p.Outcome.Message, "s3cr3t-value") {
				t.Error("the outcome carries the AWS secret")
			}
		})
	}
}

// TestPlanLiqoIssue: each case of issuing in Liqo mode, from a Snapshot:
// the merged Tenant verified and applied for Liqo to issue (the stray
// Tenants checked before the first one), a Tenant deleted outside Git
// reported before it is applied again, a refused one drained once the
// certificates of its ResourceSlices are recorded, and what Liqo put in the
// status published, with the overrides the Tenant used.
func TestPlanLiqoIssue(t *testing.T) {
	nonce, wrong := crypto.GenerateNonce(), crypto.GenerateNonce()
	pe, pin, key := peeringOf(t, nonce)
	other, _ := crypto.GenerateKey(crypto.Ed25519)
	otherPin := strings.Repeat("ab", 32)
	// replaced is a Tenant applied before the one merged: another signature, another CSR.
	replaced := func(crt []byte) *authv1beta1.Tenant {
		spec := pe.Tenant.Spec
		spec.Signature, spec.CSR = []byte("old"), []byte("old")
		tenant := liqoIssued(spec, crt)
		if crt == nil {
			tenant.Status = authv1beta1.TenantStatus{}
		}
		return tenant
	}
	valid := validFor(t, key, -time.Hour, time.Hour)
	const (
		applied  = "RecordKeyPin; CheckStrayTenant; DropStaleLiqoCache; ApplyTenant"
		replaces = "RecordKeyPin; DropStaleLiqoCache; ApplyTenant"
		rejected = "Event " + gitpeerv1alpha1.RejectedReason
		deleted  = "Event " + vocabulary.ReasonTenantDeletedOutsideGit + "; "
		publish  = "; RecordSerial; RecordWatchedSlices; Stage " + vocabulary.ActionIssueIdentity + " [put provider-a/consumer-1/identity.yaml]; NoteRenewal; NoteCertificate"
	)
	for name, tc := range map[string]struct {
		s       Snapshot
		want    string
		phase   gitpeerv1alpha1.PeeringPhase
		message string
	}{
		"first Tenant: applied, waiting for Liqo":                 {Snapshot{Nonce: &nonce}, applied, gitpeerv1alpha1.PhaseNonceIssued, "Tenant verified and applied; waiting for Liqo's tenant controller"},
		"deleted outside Git: reported, applied again":            {Snapshot{Nonce: &nonce, LiqoCertificateCache: true}, deleted + applied, gitpeerv1alpha1.PhaseNonceIssued, "waiting for Liqo's tenant controller"},
		"a cache beside an applied Tenant: nothing deleted":       {Snapshot{Nonce: &nonce, LiqoCertificateCache: true, Tenant: replaced(nil)}, replaces, gitpeerv1alpha1.PhaseNonceIssued, "waiting for Liqo's tenant controller"},
		"refused, nothing applied: nothing to drain":              {Snapshot{Nonce: &wrong}, rejected, gitpeerv1alpha1.PhaseFailed, "failing closed"},
		"refused, replacing an issued one: slices recorded first": {Snapshot{Nonce: &wrong, Tenant: replaced(valid), Bindings: []string{"liqo-binding"}}, rejected + "; RecordSliceCertificates; SetTenantCondition; " + rejected + "; Bind", gitpeerv1alpha1.PhaseFailed, "tenant drained: RBAC removed"},
		"rekeyed: the old key's certificate, waiting for Liqo":    {Snapshot{Nonce: &nonce, Tenant: replaced(validFor(t, other, -time.Hour, time.Hour))}, replaces, gitpeerv1alpha1.PhaseNonceIssued, "Tenant applied with a new key"},
		"issued by Liqo: published":                               {Snapshot{Nonce: &nonce, Tenant: replaced(valid)}, replaces + publish, gitpeerv1alpha1.PhaseIssued, "certificate 7 valid until"},
		"rekey override: used, named on the commit": {Snapshot{Nonce: &nonce, Tenant: replaced(valid), Records: vocabulary.ConsumerRecords{PinnedKey: otherPin}, Rekey: pin},
			"Event " + vocabulary.ReasonRekeyed + "; " + replaces + "; RemoveAnnotation; Event " + vocabulary.ReasonOverrideConsumed + publish, gitpeerv1alpha1.PhaseIssued, "override(s) used once and removed: rekey.gitpeer.io/consumer-1="},
	} {
		t.Run(name, func(t *testing.T) {
			tc.s.Docs, tc.s.Liqo, tc.s.APIServer, tc.s.ClusterRole = pe, true, liqoAPIServer, "liqo-tenant"
			p := PlanLiqoIssue(tc.s, time.Now())
			if got := summary(p); got != tc.want {
				t.Errorf("actions:\n got %s\nwant %s", got, tc.want)
			}
			if p.Outcome.Err != nil || p.Outcome.Phase != tc.phase || !strings.Contains(p.Outcome.Message, tc.message) {
				t.Errorf("outcome %+v, want %s with %q", p.Outcome, tc.phase, tc.message)
			}
			for _, a := range p.Actions {
				switch a := a.(type) {
				case Bind:
					if a.Bindings.Bind != nil || !a.Bindings.Deletes("liqo-binding") {
						t.Errorf("a refused Tenant keeps bindings: %+v", a.Bindings)
					}
				case Stage:
					overrides := ""
					for _, tr := range a.Message.Extra {
						if tr.Key == vocabulary.TrailerOverride {
							overrides = tr.Value
						}
					}
					if want := map[bool]string{true: gitpeerv1alpha1.RekeyAnnotationPrefix + "consumer-1=" + pin}[tc.s.Rekey != ""]; overrides != want {
						t.Errorf("commit names overrides %q, want %q", overrides, want)
					}
				}
			}
		})
	}
}

// TestPlanFailClosed: a directory that does not build drains the applied
// Tenant (in Liqo mode once the certificates of its ResourceSlices are
// recorded: Liqo's Drained deletes the slices) and removes every binding of
// the consumer; with no Tenant nothing is written.
func TestPlanFailClosed(t *testing.T) {
	pe := &protocol.Documents{Provider: "provider-a", Consumer: "consumer-1", BuildFailed: errors.New("kustomize build: boom")}
	tenant := func(c authv1beta1.TenantCondition) *authv1beta1.Tenant {
		return &authv1beta1.Tenant{Spec: authv1beta1.TenantSpec{TenantCondition: c}}
	}
	drain := "SetTenantCondition; Event " + gitpeerv1alpha1.RejectedReason + "; Bind"
	for name, tc := range map[string]struct {
		tenant *authv1beta1.Tenant
		liqo   bool
		want   string
	}{
		"no Tenant: nothing written":          {nil, false, ""},
		"standalone: drained, unbound":        {tenant(authv1beta1.TenantConditionActive), false, drain},
		"Liqo: slices recorded, then drained": {tenant(authv1beta1.TenantConditionActive), true, "RecordSliceCertificates; " + drain},
		"drained already: unbound":            {tenant(authv1beta1.TenantConditionDrained), true, "Bind"},
	} {
		t.Run(name, func(t *testing.T) {
			p := PlanFailClosed(Snapshot{Docs: pe, Liqo: tc.liqo, Tenant: tc.tenant, Bindings: []string{"b1", "b2"}, ClusterRole: "liqo-tenant"})
			if got := summary(p); got != tc.want {
				t.Errorf("actions:\n got %s\nwant %s", got, tc.want)
			}
			if p.Outcome.Phase != gitpeerv1alpha1.PhaseFailed || !strings.HasPrefix(p.Outcome.Message, "kustomize build: boom; failing closed") {
				t.Errorf("outcome %+v", p.Outcome)
			}
			for _, a := range p.Actions {
				switch a := a.(type) {
				case SetTenantCondition:
					if a.Condition != authv1beta1.TenantConditionDrained {
						t.Errorf("condition set to %q", a.Condition)
					}
				case Event:
					if a.About != "consumer-1" || a.Message != "tenant consumer-1 drained: "+p.Outcome.Message {
						t.Errorf("event about %s: %q", a.About, a.Message)
					}
				case Bind:
					if a.Bindings.Bind != nil || len(a.Bindings.Delete) != 2 {
						t.Errorf("bindings %+v, want both deleted, none made", a.Bindings)
					}
				}
			}
		})
	}
}
