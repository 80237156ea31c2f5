package provider

import (
	"fmt"
	"time"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/gitsync"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// PlanSkip is step SkipInvalid: tenant.yaml is on the branch but invalid;
// nothing is issued or revoked until it is fixed or deleted.
func PlanSkip(s Snapshot) Plan {
	return Plan{Outcome: Outcome{Phase: gitpeerv1alpha1.PhaseFailed, Message: fmt.Sprintf("%v; skipped: nothing issued or revoked until it is fixed or deleted", s.Docs.Invalid[vocabulary.TenantFile])}}
}

// PlanOffer is step OfferNonce, for a request the round admitted: the
// consumer's tenant namespace, its nonce Secret (a fresh nonce; in Liqo mode
// an empty Secret that Liqo's nonce creator fills) and that nonce committed
// as nonce.yaml. A quiet round with nonce.yaml on the branch does nothing.
func PlanOffer(s Snapshot) Plan {
	pe := s.Docs
	var p Plan
	if !s.Namespace {
		p.add(EnsureNamespace{})
	}
	waiting := Outcome{Phase: gitpeerv1alpha1.PhaseNonceIssued, Message: "waiting for a merged tenant.yaml"}
	if pe.Nonce != nil && s.Quiet {
		p.Outcome = waiting
		return p
	}
	var nonce string
	switch {
	case s.Nonce != nil:
		nonce = *s.Nonce
	case s.Liqo:
		p.add(CreateLiqoNonce{})
	case s.FreshNonce == "":
		p.Outcome = Outcome{Err: fmt.Errorf("the nonce Secret of %s is absent and the round drew no fresh nonce", pe.Consumer)}
		return p
	default:
		nonce = s.FreshNonce
		p.add(PutNonceSecret{Nonce: nonce})
	}
	if nonce == "" {
		p.Outcome = Outcome{Phase: gitpeerv1alpha1.PhaseRequested, Message: "waiting for Liqo's nonce creator to fill Secret " + authv1beta1.NonceSecretName}
		return p
	}
	if pe.Nonce == nil || pe.Nonce.Spec.Nonce != nonce {
		doc, err := protocol.NonceDocument(pe.Provider, pe.Consumer, nonce)
		if err != nil {
			p.Outcome = Outcome{Err: err}
			return p
		}
		p.add(Stage{
			Message: protocol.Message{
				Subject: fmt.Sprintf("Issue nonce for %s on %s", pe.Consumer, pe.Provider),
				Action:  vocabulary.ActionIssueNonce, Provider: pe.Provider, Consumer: pe.Consumer,
			},
			Changes: []gitsync.FileChange{gitsync.Put(protocol.Path{Provider: pe.Provider, Consumer: pe.Consumer, Kind: vocabulary.NonceFile}.String(), doc)},
			Routine: []Routine{{Reason: gitpeerv1alpha1.NonceIssuedReason, What: "nonce issued", Item: pe.Consumer}},
		})
	}
	p.Outcome = waiting
	return p
}

// PlanRevoke is step Revoke at now: tenant.yaml left the branch. What the
// PeeringRepository issued to the consumer is taken back (PlanRevocation:
// its certificates marked revoked, the key pin stays), and identity.yaml,
// nonce.yaml and request.yaml are removed from the branch once it is done:
// peering again takes a new request and a new approval.
func PlanRevoke(s Snapshot, now time.Time) Plan {
	pe := s.Docs
	if s.Revocation == nil {
		return Plan{Outcome: Outcome{Err: fmt.Errorf("step Revoke of %s observed no revocation", pe.Consumer)}}
	}
	p := PlanRevocation(*s.Revocation, now)
	if p.Outcome.Err != nil {
		return p
	}
	var changes []gitsync.FileChange
	for _, k := range []vocabulary.FileKind{vocabulary.IdentityFile, vocabulary.NonceFile, vocabulary.RequestFile} {
		changes = append(changes, gitsync.Delete(protocol.Path{Provider: pe.Provider, Consumer: pe.Consumer, Kind: k}.String()))
	}
	p.add(Stage{
		Message: protocol.Message{
			Subject: fmt.Sprintf("Revoke identity of %s on %s", pe.Consumer, pe.Provider),
			Body:    "tenant.yaml left the branch: the Tenant, its RoleBindings and its nonce were deleted. The request is used up: peering again takes a new request and a new approval.",
			Action:  vocabulary.ActionRevoke, Provider: pe.Provider, Consumer: pe.Consumer,
		},
		Changes: changes,
		Routine: []Routine{{Reason: gitpeerv1alpha1.RevokedReason, What: "peering revoked", Item: pe.Consumer, IfPushed: true}},
	},
		NoteCertificate{})
	message := "tenant.yaml removed: access revoked"
	if p.Outcome.Message != "" {
		message += "; " + p.Outcome.Message
	}
	p.Outcome = Outcome{Phase: gitpeerv1alpha1.PhaseRevoked, Message: message}
	return p
}
