package provider

import (
	"crypto/x509"
	"errors"
	"fmt"
	"time"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/gitsync"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// PlanLiqoIssue is step Issue in Liqo mode: the merged Tenant verified and
// applied (PlanTenant) for Liqo's tenant controller to issue, gitpeer
// creating no CSR and no RoleBinding; once Liqo put a certificate in the
// Tenant's status, it is published (publishLiqo). A consumer without a
// Tenant whose certificate Liqo still caches had one deleted outside Git:
// it is applied again, with a warning.
func PlanLiqoIssue(s Snapshot, now time.Time) Plan {
	pe := s.Docs
	var p Plan
	if s.Tenant == nil && s.LiqoCertificateCache {
		// The agent's own revocation deletes the cache with the Tenant;
		// `liqoctl unauthenticate` and `unpeer` (liqotech/liqo v1.2.0
		// pkg/liqoctl/unauthenticate, DeleteTenant) delete only the Tenant,
		// and Liqo then gives the cached certificate back.
		p.add(Event{Warning: true, Reason: vocabulary.ReasonTenantDeletedOutsideGit, About: pe.Consumer, Message: fmt.Sprintf(
			"Tenant %s/%s was deleted outside Git (as liqoctl unauthenticate or unpeer do) while %s is on the branch: it is applied again; to end the peering, delete tenant.yaml (gitpeer revoke)",
			authv1beta1.TenantNamespaceName(authv1beta1.ClusterID(pe.Consumer)), pe.Consumer, protocol.Path{Provider: pe.Provider, Consumer: pe.Consumer, Kind: vocabulary.TenantFile})})
	}
	admit, v := PlanTenant(s, now)
	p.add(admit.Actions...)
	if p.Outcome = admit.Outcome; p.Outcome != (Outcome{}) {
		return p
	}
	// The Tenant as ApplyTenant leaves it: the merged spec, the status Liqo wrote.
	applied := authv1beta1.Tenant{Spec: pe.Tenant.Spec}
	if s.Tenant != nil {
		applied.Status = s.Tenant.Status
	}
	if applied.Status.AuthParams == nil {
		p.Outcome = Outcome{Phase: gitpeerv1alpha1.PhaseNonceIssued, Message: JoinNote("Tenant verified and applied; waiting for Liqo's tenant controller to issue its certificate", v.Note)}
		return p
	}
	p.Outcome = p.publishLiqo(s, applied, p.appliedOverrides(s), now)
	p.Outcome.Message = JoinNote(p.Outcome.Message, v.Note)
	return p
}

// PlanLiqoMaintain is step Maintain in Liqo mode: an issued peering kept
// true to the branch (publishLiqo); Liqo binds and renews.
func PlanLiqoMaintain(s Snapshot, now time.Time) Plan {
	var p Plan
	p.Outcome = p.publishLiqo(s, *s.Tenant, s.Tenant.Annotations[vocabulary.OverridesAnnotation], now)
	return p
}

// publishLiqo keeps an issued peering of Liqo mode true to the branch,
// given its applied Tenant (tenant; its overrides: vocabulary.OverridesAnnotation):
// the Tenant's condition is the branch's, and the certificate Liqo put in its
// status (issued or renewed) is checked, recorded, then committed as
// identity.yaml unless the branch carries it already (IdentityAction).
// Refused: an IAM identity (it would put an AWS secret key in Git) and a
// certificate that fails CheckLiqoCertificate; one for the key the Tenant
// had before an approved rekey is Liqo not having issued yet.
func (p *Plan) publishLiqo(s Snapshot, tenant authv1beta1.Tenant, overrides string, now time.Time) Outcome {
	pe, params := s.Docs, tenant.Status.AuthParams
	if err := protocol.CheckNoAWSConfig(params); err != nil {
		msg := fmt.Sprintf("Liqo answered Tenant %s with an IAM identity, not committed: %v", pe.Consumer, err)
		p.add(Event{Warning: true, Reason: vocabulary.ReasonLiqoAWSUnsupported, About: pe.Consumer, Message: msg})
		return Outcome{Phase: gitpeerv1alpha1.PhaseFailed, Reason: vocabulary.ReasonLiqoAWSUnsupported, Message: msg}
	}
	if want := pe.Tenant.Spec.TenantCondition; tenant.Spec.TenantCondition != want {
		p.add(SetTenantCondition{Condition: want})
		tenant.Spec.TenantCondition = want
	}
	key, err := crypto.ParsePublicKey(tenant.Spec.PublicKey)
	if err != nil {
		return Outcome{Err: fmt.Errorf("applied Tenant of %s: %w", pe.Consumer, err)}
	}
	cert, err := CheckLiqoCertificate(params.SignedCRT, key, pe.Consumer, now)
	if cerr := (*crypto.Error)(nil); errors.As(err, &cerr) && cerr.Rule == crypto.RuleCertificateKey {
		// The status still holds the certificate of the key the Tenant had
		// before an approved rekey (DropStaleLiqoCache): Liqo has not issued yet.
		return Outcome{Phase: gitpeerv1alpha1.PhaseNonceIssued, Message: "Tenant applied with a new key; waiting for Liqo's tenant controller to issue its certificate"}
	}
	if err != nil {
		msg := fmt.Sprintf("certificate in the status of Tenant %s not committed: %v", pe.Consumer, err)
		p.add(Event{Warning: true, Reason: vocabulary.ReasonCertificateRejected, About: pe.Consumer, Message: msg})
		return Outcome{Phase: gitpeerv1alpha1.PhaseFailed, Message: msg}
	}
	// Recorded before it is published: a revoked certificate must block a revival.
	p.add(RecordSerial{Certificate: cert}, RecordWatchedSlices{})
	if action := IdentityAction(params, pe.Identity); action != "" {
		doc, err := protocol.IdentityFromTenant(pe.Provider, &tenant)
		if err != nil {
			return Outcome{Err: err}
		}
		reason := map[string]string{vocabulary.ActionIssueIdentity: gitpeerv1alpha1.IdentityIssuedReason, vocabulary.ActionRenewIdentity: gitpeerv1alpha1.IdentityRenewedReason}[action]
		p.add(StageIdentity(pe, action, reason, overrides, cert, gitsync.Put(protocol.Path{Provider: pe.Provider, Consumer: pe.Consumer, Kind: vocabulary.IdentityFile}.String(), doc)))
	}
	phase, message := Standing(tenant.Spec.TenantCondition, cert)
	o := Outcome{Phase: phase, Message: message}
	if advertised := params.APIServer; APIServerDiffers(advertised, s.APIServer) {
		msg := fmt.Sprintf("Liqo advertises API server %q (its chart's apiServer.address, or its control-plane node) but this provider publishes %q (spec.provider.apiServer, or the agent's own API server) in terms.yaml: "+
			"consumers that check the terms refuse identity.yaml; set Liqo's apiServer.address and spec.provider.apiServer to the same address", advertised, s.APIServer)
		p.add(Event{Warning: true, Reason: vocabulary.ReasonLiqoAPIServerMismatch, About: pe.Consumer, Message: msg})
		o.Reason, o.Message = vocabulary.ReasonLiqoAPIServerMismatch, JoinNote(o.Message, msg)
	}
	return p.watchLiqoRenewal(pe.Consumer, tenant.Spec.TenantCondition, cert, o, now)
}

// watchLiqoRenewal watches the renewal Liqo's tenant controller makes of
// cert, the certificate of a Tenant of condition, at the point gitpeer renews
// its own (2/3 of the life: liqotech/liqo v1.2.0
// pkg/liqo-controller-manager/authentication/utils, ShouldRenewCertificate):
// once overdue it is reported as in standalone mode (RenewalStalled); until
// then the peering is visited again when it would become overdue, since
// nothing changes in the cluster while Liqo stalls. Liqo renews nothing for a
// Drained Tenant, on purpose.
func (p *Plan) watchLiqoRenewal(consumer string, condition authv1beta1.TenantCondition, cert *x509.Certificate, o Outcome, now time.Time) Outcome {
	if condition == authv1beta1.TenantConditionDrained {
		p.add(NoteCertificate{Expiry: cert.NotAfter.Unix()})
		return o
	}
	renewal := RenewalOf(cert, now)
	if renewal.Overdue {
		o.Message = JoinNote(o.Message, "Liqo's tenant controller has not renewed it: is liqo-controller-manager running?")
		return p.stalled(consumer, cert, renewal, o)
	}
	p.add(NoteRenewal{At: renewal.At.Add(OverdueAfter(cert))}, NoteCertificate{Expiry: cert.NotAfter.Unix(), Renews: true})
	return o
}
