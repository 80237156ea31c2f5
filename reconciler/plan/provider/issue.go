package provider

import (
	"crypto/x509"
	"fmt"
	"strings"
	"time"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/gitsync"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// PlanIssue is step Issue, standalone: the merged Tenant verified and
// applied (PlanTenant), the consumer bound, its certificate asked of the
// cluster's signer through a CSR of the agent's own (planSign); once the
// signer issued it, the certificate is recorded, stored in the Tenant's
// status and committed as identity.yaml with a fresh nonce (maintain).
func PlanIssue(s Snapshot, now time.Time) Plan {
	pe := s.Docs
	p, v := PlanTenant(s, now)
	if p.Outcome != (Outcome{}) {
		return p
	}
	p.add(Bind{Bindings: PlanBindings(s.Bindings, pe.Consumer, s.ClusterRole, pe.Tenant.Spec.TenantCondition)})
	got, stop := p.sign(s, Signing{Consumer: pe.Consumer, Request: pe.Tenant.Spec.CSR, Key: v.Key, Signature: pe.Tenant.Spec.Signature},
		Outcome{Phase: gitpeerv1alpha1.PhaseNonceIssued, Message: "waiting for the certificate to be signed"})
	if stop != nil {
		stop.Message = JoinNote(stop.Message, v.Note)
		p.Outcome = *stop
		return p
	}
	t := issuedTenant{spec: pe.Tenant.Spec, overrides: p.appliedOverrides(s)}
	p.store(s, &t, got)
	o := p.maintain(s, t, got.cert, true, now)
	o.Message = JoinNote(JoinNote(o.Message, got.note), v.Note)
	p.Outcome = o
	return p
}

// PlanMaintain is step Maintain, standalone: an issued peering kept true to
// the branch. The Tenant's condition is the branch's, the consumer bound by
// it, the certificate recorded and renewed at 2/3 of its life, the nonce
// rotated once used, identity.yaml the certificate's.
func PlanMaintain(s Snapshot, now time.Time) Plan {
	pe := s.Docs
	var p Plan
	t := issuedTenant{spec: s.Tenant.Spec, params: s.Tenant.Status.AuthParams, overrides: s.Tenant.Annotations[vocabulary.OverridesAnnotation]}
	if want := pe.Tenant.Spec.TenantCondition; t.spec.TenantCondition != want {
		p.add(SetTenantCondition{Condition: want})
		t.spec.TenantCondition = want
	}
	p.add(Bind{Bindings: PlanBindings(s.Bindings, pe.Consumer, s.ClusterRole, t.spec.TenantCondition)})
	cert, err := crypto.ParseCertificatePEM(t.params.SignedCRT)
	if err != nil {
		p.Outcome = Outcome{Err: fmt.Errorf("stored certificate of %s: %w", pe.Consumer, err)}
		return p
	}
	p.add(RecordSerial{Certificate: cert})
	p.Outcome = p.maintain(s, t, cert, false, now)
	return p
}

// appliedOverrides is vocabulary.OverridesAnnotation on the consumer's
// Tenant once p's ApplyTenant applied it (AppliedOverrides).
func (p *Plan) appliedOverrides(s Snapshot) string {
	current := ""
	if s.Tenant != nil {
		current = s.Tenant.Annotations[vocabulary.OverridesAnnotation]
	}
	overrides := current
	for _, a := range p.Actions {
		if a, ok := a.(ApplyTenant); ok {
			overrides = AppliedOverrides(a.Used, a.Applied, current)
		}
	}
	return overrides
}

// issuedTenant is what maintain reads of the consumer's Tenant as the
// plan's actions leave it.
type issuedTenant struct {
	spec      authv1beta1.TenantSpec
	params    *authv1beta1.AuthParams
	overrides string // vocabulary.OverridesAnnotation
}

// signed is a certificate the signer issued and the planner verified.
type signed struct {
	pem  []byte
	cert *x509.Certificate
	note string // foreign CSRs ignored on the way, for the peering's message
}

// store records got, then stores it in the Tenant's status: a certificate
// is never in use before it is recorded (a revoked one blocks a revival).
func (p *Plan) store(s Snapshot, t *issuedTenant, got *signed) {
	// proxyURL = spec.proxyURL, as Liqo's tenant controller sets it (CheckTenant allowed it).
	t.params = &authv1beta1.AuthParams{CA: s.CA, SignedCRT: got.pem, APIServer: s.APIServer, ProxyURL: t.spec.ProxyURL}
	p.add(RecordSerial{Certificate: got.cert}, StoreIssued{AuthParams: *t.params})
}

// maintain plans the rest of an issued peering holding cert: its renewal
// when due, its renewal time and certificate noted, identity.yaml and, in a
// round that is not quiet or issued cert (fresh), nonce.yaml.
func (p *Plan) maintain(s Snapshot, t issuedTenant, cert *x509.Certificate, fresh bool, now time.Time) Outcome {
	pe := s.Docs
	action, reason := vocabulary.ActionIssueIdentity, gitpeerv1alpha1.IdentityIssuedReason
	if pe.Identity != nil {
		action, reason = vocabulary.ActionRenewIdentity, gitpeerv1alpha1.IdentityRenewedReason
	}
	note := ""
	if renewal := RenewalOf(cert, now); renewal.Due {
		got, stop := p.renew(s, t, cert)
		if stop != nil {
			return p.stalled(pe.Consumer, cert, renewal, *stop)
		}
		p.store(s, &t, got)
		cert, note, fresh = got.cert, got.note, true
		action, reason = vocabulary.ActionRenewIdentity, gitpeerv1alpha1.IdentityRenewedReason
	}
	p.add(NoteRenewal{At: crypto.RenewalTime(cert)}, NoteCertificate{Expiry: cert.NotAfter.Unix(), Renews: true})
	identity, err := protocol.IdentityDocument(pe.Provider, pe.Consumer, *t.params)
	if err != nil {
		return Outcome{Err: err}
	}
	changes := []gitsync.FileChange{gitsync.Put(protocol.Path{Provider: pe.Provider, Consumer: pe.Consumer, Kind: vocabulary.IdentityFile}.String(), identity)}
	if fresh || !s.Quiet {
		nonce, ok := "", s.Nonce != nil
		if ok {
			nonce = *s.Nonce
		}
		// A nonce is used once: rotated once the applied Tenant signed it.
		if !ok || NonceUsed(&authv1beta1.Tenant{Spec: t.spec}, nonce) {
			if s.FreshNonce == "" {
				return Outcome{Err: fmt.Errorf("the nonce of %s must be rotated and the round drew no fresh one", pe.Consumer)}
			}
			nonce = s.FreshNonce
			p.add(PutNonceSecret{Nonce: nonce, Exists: ok})
		}
		doc, err := protocol.NonceDocument(pe.Provider, pe.Consumer, nonce)
		if err != nil {
			return Outcome{Err: err}
		}
		changes = append(changes, gitsync.Put(protocol.Path{Provider: pe.Provider, Consumer: pe.Consumer, Kind: vocabulary.NonceFile}.String(), doc))
	}
	p.add(StageIdentity(pe, action, reason, t.overrides, cert, changes...))
	phase, message := Standing(t.spec.TenantCondition, cert)
	return Outcome{Phase: phase, Message: JoinNote(message, note)}
}

// renew asks for the renewal of cert, the certificate of the Tenant t.
func (p *Plan) renew(s Snapshot, t issuedTenant, cert *x509.Certificate) (*signed, *Outcome) {
	key, err := crypto.ParsePublicKey(t.spec.PublicKey)
	if err != nil {
		return nil, &Outcome{Err: fmt.Errorf("stored Tenant of %s: %w", s.Docs.Consumer, err)}
	}
	return p.sign(s, Signing{Consumer: s.Docs.Consumer, Request: t.spec.CSR, Key: key, Signature: t.spec.Signature, Renews: cert.SerialNumber.Text(16)},
		Outcome{Phase: gitpeerv1alpha1.PhaseIssued, Message: "renewing: waiting for the certificate to be signed"})
}

// sign plans sg's certificate (owner and lifetime: the PeeringRepository's)
// from the CSRs labelled for the consumer (PlanSigning): the agent only ever
// approves a CSR its own user requested with exactly sg's properties, and
// creates one only when there is none; CSRs others requested are reported
// and left alone. The creation or approval is queued for the round, which
// does not wait for the signer: the CSR's update reconciles again. stop is
// set when the plan must not go on: waiting (then the outcome is waiting),
// refused, or an error.
func (p *Plan) sign(s Snapshot, sg Signing, waiting Outcome) (got *signed, stop *Outcome) {
	sg.Owner, sg.TTL = s.Owner, s.TTL
	plan := PlanSigning(s.CSRs, s.Agent, sg)
	var foreign []string
	for _, csr := range plan.Foreign {
		foreign = append(foreign, csr.Name)
		p.add(Event{Warning: true, Reason: vocabulary.ReasonForeignCSR, About: csr.Name, Message: fmt.Sprintf(
			"CSR %s is labelled for consumer %s but was requested by %q, not by the agent (%q): not approved, left alone", csr.Name, sg.Consumer, csr.Spec.Username, s.Agent)})
	}
	note := ""
	if len(foreign) > 0 {
		note = fmt.Sprintf("ignored CSR(s) not requested by the agent: %s", strings.Join(foreign, ", "))
	}
	csr := plan.CSR
	switch plan.Step {
	case CreateCSR:
		p.add(QueueCSR{CSR: NewCSR(sg)})
		waiting.Message = JoinNote(waiting.Message+" (CSR requested)", note)
		return nil, &waiting
	case CSRRefused:
		msg := fmt.Sprintf("CSR %s for %s was %s; the agent requests no other while it exists: delete it to retry", csr.Name, sg.Consumer, plan.Why)
		p.add(Event{Warning: true, Reason: vocabulary.ReasonCSRFailed, About: csr.Name, Message: msg})
		return nil, &Outcome{Phase: gitpeerv1alpha1.PhaseFailed, Message: JoinNote(msg, note)}
	case ApproveCSR, WaitForCertificate:
		if plan.Step == ApproveCSR {
			p.add(QueueCSR{CSR: csr})
		}
		waiting.Message = JoinNote(fmt.Sprintf("%s (CSR %s)", waiting.Message, csr.Name), note)
		return nil, &waiting
	case CertificateRejected:
		msg := fmt.Sprintf("certificate of CSR %s not stored nor committed: %s", csr.Name, plan.Why)
		p.add(Event{Warning: true, Reason: vocabulary.ReasonCertificateRejected, About: csr.Name, Message: msg})
		return nil, &Outcome{Phase: gitpeerv1alpha1.PhaseFailed, Message: JoinNote(msg, note)}
	}
	return &signed{pem: csr.Status.Certificate, cert: plan.Certificate, note: note}, nil
}

// stalled adds RenewalStalled's actions and returns its outcome.
func (p *Plan) stalled(consumer string, cert *x509.Certificate, renewal Renewal, o Outcome) Outcome {
	o, actions := RenewalStalled(consumer, cert, renewal, o)
	p.add(actions...)
	return o
}

// RenewalStalled is a renewal of cert, issued to consumer, that did not
// complete this round (o says why): the certificate is noted, and once it is
// overdue (RenewalOf) the peering needs attention (reason RenewalOverdue)
// and the round reports it (NoteOverdue: an outage makes them all overdue
// at once).
func RenewalStalled(consumer string, cert *x509.Certificate, renewal Renewal, o Outcome) (Outcome, []Action) {
	actions := []Action{NoteCertificate{Expiry: cert.NotAfter.Unix(), Renews: true, Overdue: renewal.Overdue}}
	if !renewal.Overdue {
		return o, actions
	}
	serial, due, expires := cert.SerialNumber.Text(16), renewal.At.UTC().Format(time.RFC3339), cert.NotAfter.UTC().Format(time.RFC3339)
	msg := fmt.Sprintf("renewal of certificate %s of %s overdue: due at %s, expires at %s", serial, consumer, due, expires)
	actions = append(actions, NoteOverdue{Message: msg, Item: fmt.Sprintf("%s (serial %s, due %s, expires %s)", consumer, serial, due, expires)})
	o.Reason = gitpeerv1alpha1.RenewalOverdueReason
	if o.Err != nil {
		o.Err = fmt.Errorf("%s: %w", msg, o.Err)
	} else {
		o.Message = JoinNote(o.Message, msg)
	}
	return o, actions
}

// StageIdentity is the commit of identity.yaml for cert, issued to
// pe.Consumer (action issue or renew, event reason once pushed), with
// changes; it names the overrides the Tenant was applied under
// (OverrideTrailers). It keeps the strings it reports, not the peering's
// documents nor the parsed certificate: a round holds it until its commit.
func StageIdentity(pe *protocol.Documents, action, reason, overrides string, cert *x509.Certificate, changes ...gitsync.FileChange) Stage {
	consumer, serial, expires := pe.Consumer, cert.SerialNumber.Text(16), cert.NotAfter.UTC().Format(time.RFC3339)
	what := "identity committed"
	if reason == gitpeerv1alpha1.IdentityRenewedReason {
		what = "renewed identity committed"
	}
	return Stage{
		Message: protocol.Message{
			Subject: fmt.Sprintf("%s identity of %s on %s (serial %s)", map[string]string{vocabulary.ActionIssueIdentity: "Issue", vocabulary.ActionRenewIdentity: "Renew"}[action], consumer, pe.Provider, serial),
			Action:  action, Provider: pe.Provider, Consumer: consumer,
			Extra: append([]protocol.Trailer{{Key: vocabulary.TrailerSerial, Value: serial}, {Key: vocabulary.TrailerExpires, Value: expires}}, OverrideTrailers(pe, overrides, cert)...),
		},
		Changes: changes,
		Routine: []Routine{{Reason: reason, What: what, Item: fmt.Sprintf("%s (serial %s, expires %s)", consumer, serial, expires), IfPushed: true}},
	}
}

// AppliedOverrides is the value of vocabulary.OverridesAnnotation on the
// Tenant applied with the overrides used: a Tenant applied again (applied,
// Applied) keeps those it was first applied under (current); another has
// none of them.
func AppliedOverrides(used []Override, applied bool, current string) string {
	switch {
	case len(used) > 0:
		return JoinOverrides(used)
	case applied:
		return current
	}
	return ""
}

// OverrideTrailers names, on the commit of identity.yaml for cert, the
// overrides its Tenant was applied under, if it is the first identity of
// its key (FirstIdentity): a renewal names none.
func OverrideTrailers(pe *protocol.Documents, overrides string, cert *x509.Certificate) []protocol.Trailer {
	if overrides == "" || !FirstIdentity(pe.Identity, cert, pe.Consumer) {
		return nil
	}
	return []protocol.Trailer{{Key: vocabulary.TrailerOverride, Value: overrides}}
}
