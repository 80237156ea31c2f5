package provider

import (
	gocrypto "crypto"
	"strings"
	"time"

	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// Verified is a merged Tenant PlanTenant admitted: its Key, and the Note the
// peering's message carries (the overrides it used up, those it left unused).
type Verified struct {
	Key  gocrypto.PublicKey
	Note string
}

// PlanTenant verifies the Tenant merged on the branch, in place of the
// applied s.Tenant (nil if none), with the trust rules (Verify) and plans
// what follows. Refused: the peering fails closed (the outcome is set).
// Admitted: its key is pinned in the records, then the Tenant applied and
// the overrides it used removed; the outcome is left for the step that
// issues to set. Unused overrides are reported either way.
func PlanTenant(s Snapshot, now time.Time) (Plan, Verified) {
	pe := s.Docs
	applied := Applied(pe, s.Tenant)
	nonce := ""
	if s.Nonce != nil {
		nonce = *s.Nonce
	}
	// The pin comes from the records alone: only the agent may write them
	// (admission policy gitpeer-records), while anyone who may annotate
	// namespaces could write an annotation.
	verdict, closure := CheckOrClose(pe, TenantCheck{
		Nonce: nonce, PinnedKey: s.Records.PinnedKey, Rekey: s.Rekey,
		RevivalBlocked: RevivalRefusal(s.Records.Certificates, pe.Consumer, now), Revival: s.Revival,
		Applied: applied, AllowProxyURL: s.AllowProxyURL,
	}, s.Tenant)
	var p Plan
	for _, why := range verdict.Unused {
		p.add(Event{Warning: true, Reason: vocabulary.ReasonOverrideUnused, About: pe.Consumer, Message: pe.Consumer + ": " + why})
	}
	unused := strings.Join(verdict.Unused, "; ")
	if closure != nil {
		p.add(Event{Warning: true, Reason: gitpeerv1alpha1.RejectedReason, About: protocol.Path{Provider: pe.Provider, Consumer: pe.Consumer, Kind: vocabulary.TenantFile}.String(), Message: closure.Message})
		p.close(s, *closure)
		p.Outcome = Outcome{Phase: gitpeerv1alpha1.PhaseFailed, Message: JoinNote(closure.Message, unused)}
		return p, Verified{}
	}
	if verdict.Replaces != "" {
		p.add(Event{Reason: vocabulary.ReasonRekeyed, About: pe.Consumer, Message: "key of " + pe.Consumer + " changed from " + verdict.Replaces[:16] + " to " + verdict.Pin[:16] + " by annotation " + gitpeerv1alpha1.RekeyAnnotationPrefix + pe.Consumer})
	}
	p.add(RecordKeyPin{Pin: verdict.Pin})
	if s.Liqo {
		if s.Tenant == nil {
			p.add(CheckStrayTenant{})
		}
		p.add(DropStaleLiqoCache{})
	}
	p.add(ApplyTenant{Spec: pe.Tenant.Spec, Used: verdict.Used, Applied: applied})
	used := ""
	if len(verdict.Used) > 0 {
		for _, o := range verdict.Used {
			p.add(RemoveAnnotation{Key: o.Key},
				Event{Reason: vocabulary.ReasonOverrideConsumed, About: pe.Consumer, Message: "annotation " + o.String() + " let the Tenant of " + pe.Consumer + " through and was removed: an override is used once"})
		}
		used = "override(s) used once and removed: " + JoinOverrides(verdict.Used)
	}
	return p, Verified{Key: verdict.Key, Note: JoinNote(used, unused)}
}

// JoinOverrides names overrides, as the Tenant's vocabulary.OverridesAnnotation and messages do.
func JoinOverrides(used []Override) string {
	names := make([]string, len(used))
	for i, o := range used {
		names[i] = o.String()
	}
	return strings.Join(names, ", ")
}

// JoinNote appends note, if any, to msg.
func JoinNote(msg, note string) string {
	if note == "" {
		return msg
	}
	return msg + "; " + note
}
