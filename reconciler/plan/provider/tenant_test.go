package provider

import (
	"strings"
	"testing"
	"time"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// TestPlanTenant: each way a merged Tenant is admitted or refused, from a
// Snapshot: the actions in their order (the pin recorded before the Tenant
// it admits is applied; a refusal drains what is applied and applies
// nothing), the outcome of a refusal and the note of what was overridden.
func TestPlanTenant(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	nonce, other := crypto.GenerateNonce(), crypto.GenerateNonce()
	pe, pin := peering(t, nonce)
	otherPin := strings.Repeat("ab", 32)
	revokedAt := now.Add(-time.Hour)
	blocked := vocabulary.ConsumerRecords{Certificates: []vocabulary.IssuedRecord{{Serial: "1f", NotAfter: now.Add(time.Hour), RevokedAt: &revokedAt}}}
	issued := &authv1beta1.Tenant{Spec: authv1beta1.TenantSpec{Signature: []byte("old"), CSR: []byte("old")},
		Status: authv1beta1.TenantStatus{AuthParams: &authv1beta1.AuthParams{SignedCRT: []byte("crt")}}}
	const (
		admit    = "RecordKeyPin; ApplyTenant"
		consumed = "RemoveAnnotation; Event " + vocabulary.ReasonOverrideConsumed
		refused  = "Event " + gitpeerv1alpha1.RejectedReason
		unused   = "Event " + vocabulary.ReasonOverrideUnused
	)
	for name, tc := range map[string]struct {
		s       Snapshot
		want    string
		refusal string // substring of the outcome's message; "" admits
		note    string // substring of the admitted note
	}{
		"first issuance":                    {Snapshot{Nonce: &nonce}, admit, "", ""},
		"the key pinned already":            {Snapshot{Nonce: &nonce, Records: vocabulary.ConsumerRecords{PinnedKey: pin}}, admit, "", ""},
		"no nonce Secret":                   {Snapshot{}, refused, "no nonce was issued", ""},
		"signed over another nonce":         {Snapshot{Nonce: &other}, refused, "tenant signature", ""},
		"another key pinned":                {Snapshot{Nonce: &nonce, Records: vocabulary.ConsumerRecords{PinnedKey: otherPin}}, refused, "is not the key pinned", ""},
		"rekeyed by the admin":              {Snapshot{Nonce: &nonce, Records: vocabulary.ConsumerRecords{PinnedKey: otherPin}, Rekey: pin}, "Event " + vocabulary.ReasonRekeyed + "; " + admit + "; " + consumed, "", "override(s) used once and removed: rekey.gitpeer.io/consumer-1="},
		"rekey naming another key":          {Snapshot{Nonce: &nonce, Records: vocabulary.ConsumerRecords{PinnedKey: pin}, Rekey: otherPin}, unused + "; " + admit, "", "left in place, unused"},
		"revoked certificate unexpired":     {Snapshot{Nonce: &nonce, Records: blocked}, refused, "revoked certificate 1f", ""},
		"revival accepted by the admin":     {Snapshot{Nonce: &nonce, Records: blocked, Revival: gitpeerv1alpha1.AcceptRevivalValue}, admit + "; " + consumed, "", "revival.gitpeer.io/consumer-1=" + gitpeerv1alpha1.AcceptRevivalValue},
		"revival refused, and reported":     {Snapshot{Nonce: &nonce, Records: blocked, Revival: "yes"}, unused + "; " + refused, "left in place, unused", ""},
		"refused, replacing an issued one":  {Snapshot{Nonce: &other, Tenant: issued}, refused + "; SetTenantCondition; " + refused + "; Bind", "tenant drained: RBAC removed", ""},
		"Liqo: first Tenant, stray checked": {Snapshot{Nonce: &nonce, Liqo: true}, "RecordKeyPin; CheckStrayTenant; DropStaleLiqoCache; ApplyTenant", "", ""},
		"Liqo: replacing the applied one":   {Snapshot{Nonce: &nonce, Liqo: true, Tenant: issued}, "RecordKeyPin; DropStaleLiqoCache; ApplyTenant", "", ""},
	} {
		t.Run(name, func(t *testing.T) {
			tc.s.Docs = pe
			p, v := PlanTenant(tc.s, now)
			if got := summary(p); got != tc.want {
				t.Errorf("actions:\n got %s\nwant %s", got, tc.want)
			}
			if tc.refusal == "" {
				if p.Outcome != (Outcome{}) || v.Key == nil || !strings.Contains(v.Note, tc.note) {
					t.Errorf("admitted: outcome %+v, key %v, note %q (want %q)", p.Outcome, v.Key, v.Note, tc.note)
				}
				for _, a := range p.Actions {
					if r, ok := a.(RecordKeyPin); ok && r.Pin != pin {
						t.Errorf("pinned %s, want %s", r.Pin, pin)
					}
				}
				return
			}
			if p.Outcome.Phase != gitpeerv1alpha1.PhaseFailed || !strings.Contains(p.Outcome.Message, tc.refusal) || v.Key != nil {
				t.Errorf("refused: outcome %+v, key %v; want Failed with %q", p.Outcome, v.Key, tc.refusal)
			}
		})
	}
}
