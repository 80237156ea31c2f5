package provider

import (
	"crypto/x509"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/reconciler/plan/ownership"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// Namespace is what a round observed of a peer's tenant namespace: whose it
// is and, when it is not the PeeringRepository's yet, what deciding its
// adoption takes (PlanNamespace).
type Namespace struct {
	// Name is the tenant namespace's name; Found: it exists.
	Name  string
	Found bool
	// Owner is whose it is by its labels (ownership.Of); Mode the mode it records.
	Owner ownership.Owner
	Mode  string
	// LiqoCreated: Liqo created it for the peer (ownership.LiqoCreated).
	LiqoCreated bool
	// Claim decides the adoption of a legacy namespace (its Sole observed
	// only when Permitted); LiqoClaim that of one Liqo created.
	Claim     ownership.Claim
	LiqoClaim ownership.LiqoClaim
	// LiqoNonce is the UID of Liqo's own nonce Secret in a namespace Liqo
	// created, which its adoption replaces; "" when there is none.
	LiqoNonce types.UID
}

// AdoptNamespace labels the peer's legacy tenant namespace and the gitpeer
// objects in it as the PeeringRepository's; How says by what right
// (ownership.Adopt).
type AdoptNamespace struct{ How string }

// AdoptLiqoNamespace takes over the tenant namespace Liqo created for the
// peer: Liqo's nonce (NonceUID, when set) is deleted, and the namespace
// gains the owner label and the agent's Mode.
type AdoptLiqoNamespace struct {
	NonceUID types.UID
	Mode     string
}

func (AdoptNamespace) action()     {}
func (AdoptLiqoNamespace) action() {}

// NotOursError refuses an object the PeeringRepository did not create.
type NotOursError struct{ What string }

func (e NotOursError) Error() string {
	return fmt.Sprintf("%s exists and was not created by this PeeringRepository (no %s label with its UID); skipped", e.What, vocabulary.OwnerLabel)
}

// LiqoNamespaceError refuses the tenant namespace NS Liqo created, saying Why.
type LiqoNamespaceError struct{ NS, Why string }

func (e LiqoNamespaceError) Error() string {
	return fmt.Sprintf("namespace %s was created by Liqo (liqoctl peer, network connect or create nonce) and is not adopted: %s; "+
		"remove what it names (liqoctl unpeer, or delete the objects) and the agent adopts it in its next round (docs/liqo.md \"Namespaces Liqo created\")", e.NS, e.Why)
}

// PlanNamespace decides what the tenant namespace n is to the peering with
// peer: the PeeringRepository's, or none yet (no actions); a legacy one or
// one Liqo created that it adopts (the actions adopt it); or another's
// (refused: a NotOursError or a LiqoNamespaceError).
func PlanNamespace(peer, mode string, n Namespace) (actions []Action, refused error) {
	if !n.Found {
		return nil, nil
	}
	switch n.Owner {
	case ownership.Ours:
		return nil, nil
	case ownership.Others:
		if !n.LiqoCreated {
			return nil, NotOursError{"namespace " + n.Name}
		}
		if why := n.LiqoClaim.Refusal(); why != "" {
			return nil, LiqoNamespaceError{NS: n.Name, Why: why}
		}
		return []Action{AdoptLiqoNamespace{NonceUID: n.LiqoNonce, Mode: mode}}, nil
	}
	how := ownership.Adopt(n.Claim)
	if how == "" {
		return nil, fmt.Errorf("%w; objects of earlier versions are adopted only by the only PeeringRepository of the cluster that peers with %s, when %s has a directory in its repository, once on upgrade or when the PeeringRepository carries %s=true",
			NotOursError{"namespace " + n.Name}, peer, peer, gitpeerv1alpha1.AdoptUnownedAnnotation)
	}
	return []Action{AdoptNamespace{How: how}}, nil
}

// SkipForeign is the plan of a peering refused because its objects are
// another's (PlanNamespace, a Tenant not the PeeringRepository's): a warning
// and a failed outcome. Another error fails the peering.
func SkipForeign(consumer string, err error) Plan {
	event := Event{Warning: true, Reason: gitpeerv1alpha1.RejectedReason, About: consumer, Message: fmt.Sprintf("consumer %s: %v", consumer, err)}
	o := Outcome{Phase: gitpeerv1alpha1.PhaseFailed, Message: err.Error()}
	if liqoNS := (LiqoNamespaceError{}); errors.As(err, &liqoNS) {
		event.Reason, o.Reason = vocabulary.ReasonLiqoNamespaceRefused, vocabulary.ReasonLiqoNamespaceRefused
	} else if foreign := (NotOursError{}); !errors.As(err, &foreign) {
		return Plan{Outcome: Outcome{Err: err}}
	}
	return Plan{Actions: []Action{event}, Outcome: o}
}

// Peering is what a provider's round observed to plan one peering
// (Round.Plan): its documents, its tenant namespace, its Tenant and the
// settings planning reads.
type Peering struct {
	Docs      *protocol.Documents
	Namespace Namespace
	// Tenant is the consumer's Tenant in its tenant namespace, nil when
	// none; TenantOwner is whose it is (ownership.Of).
	Tenant      *authv1beta1.Tenant
	TenantOwner ownership.Owner
	// Liqo: the agent runs in Liqo mode; Mode names it as mode records do,
	// ModeSummary says it for people.
	Liqo              bool
	Mode, ModeSummary string
	// SwitchAccepted is the consumer's switch-mode annotation on the PeeringRepository.
	SwitchAccepted string
	// Allowed is spec.provider.allowedConsumers.
	Allowed []string
}

// Round plans the peerings of a provider's round one after the other, in
// the round's order, so that the same requests are admitted and the same
// peerings act whatever order their steps then run in: it counts the
// requests pending against MaxPending (spec.provider.maxPendingRequests) and
// the peerings that act against Limit.
type Round struct {
	// Pending counts the requests answered and not issued: those found at
	// the start of the round and those it admitted since; MaxPending caps them.
	Pending, MaxPending int
	// Deferred counts the requests the round left unanswered (Deferred).
	Deferred int
	Limit    RoundLimit
}

// Planned is one peering's planned step: Opening are the actions that open
// it (adopting its tenant namespace, recording a mode switch) or report it
// when planning settled it (Done: refused, blocked, deferred, held back).
type Planned struct {
	Step    Step
	Opening []Action
	Done    *Outcome
	// Tenant is the consumer's Tenant the step starts from, nil when none.
	Tenant *authv1beta1.Tenant
	// Namespace: the tenant namespace exists and is the PeeringRepository's, or the peering is done.
	Namespace bool
	// Signs: the step signs a certificate (an issuance, or a renewal due, not
	// in Liqo mode).
	Signs bool
	// HeldBack: the round's limit held the peering back (Done says so).
	HeldBack bool
}

func (p Planned) settled(o Outcome, actions ...Action) Planned {
	p.Opening, p.Done = append(p.Opening, actions...), &o
	return p
}

// Plan decides the step of peering p (Decide) at now: it adopts its tenant
// namespace or refuses another's (PlanNamespace), refuses a Tenant that is
// not the PeeringRepository's, leaves a peering whose mode changed alone
// (PlanMode), admits a request (Admit: refused, deferred, or answered and
// counted pending once it acts) and holds the peering back when the round
// acts on as many as its limit allows (Acts).
func (r *Round) Plan(p Peering, now time.Time) Planned {
	consumer := p.Docs.Consumer
	adopt, refused := PlanNamespace(consumer, p.Mode, p.Namespace)
	if refused != nil {
		sk := SkipForeign(consumer, refused)
		return Planned{}.settled(sk.Outcome, sk.Actions...)
	}
	pl := Planned{Opening: adopt, Namespace: p.Namespace.Found}
	if p.Tenant != nil {
		_, legacy := adopting[AdoptNamespace](adopt)
		if p.TenantOwner != ownership.Ours && (p.TenantOwner != ownership.Legacy || !legacy) {
			sk := SkipForeign(consumer, NotOursError{"Tenant " + p.Namespace.Name + "/" + consumer})
			return pl.settled(sk.Outcome, sk.Actions...)
		}
		pl.Tenant = p.Tenant
	}
	pl.Step = Decide(p.Docs, Observed{Tenant: pl.Tenant})
	if pl.Step != Revoke {
		nsMode := p.Namespace.Mode
		if liqo, ok := adopting[AdoptLiqoNamespace](adopt); ok {
			nsMode = liqo.Mode
		}
		mode, blocked := PlanMode(Snapshot{Docs: p.Docs, Namespace: p.Namespace.Found, Mode: p.Mode, ModeSummary: p.ModeSummary, SwitchAccepted: p.SwitchAccepted, NamespaceMode: nsMode})
		if pl.Opening = append(pl.Opening, mode.Actions...); blocked {
			return pl.settled(mode.Outcome)
		}
	}
	admitted := false
	if pl.Step == OfferNonce {
		if p.Docs.Request == nil {
			return pl.settled(Outcome{Phase: gitpeerv1alpha1.PhaseRevoked, Message: "no request"})
		}
		switch Admit(Request{Consumer: consumer, Allowed: p.Allowed, Answered: p.Namespace.Found, Pending: r.Pending, Max: r.MaxPending}) {
		case NotAllowed:
			msg := fmt.Sprintf("request of %s refused: not in allowedConsumers; nothing created", consumer)
			return pl.settled(Outcome{Phase: gitpeerv1alpha1.PhaseFailed, Message: msg},
				Event{Warning: true, Reason: vocabulary.ReasonRequestsDeferred, About: consumer, Message: msg})
		case Deferred:
			r.Deferred++
			return pl.settled(Outcome{Phase: gitpeerv1alpha1.PhaseRequested, Reason: vocabulary.ReasonRequestsDeferred,
				Message: fmt.Sprintf("deferred: %d pending requests (maxPendingRequests %d); nothing created until some are approved or withdrawn", r.Pending, r.MaxPending)})
		case Admitted:
			admitted = true
		}
	}
	var cert *x509.Certificate
	due := false
	if pl.Step == Maintain && !p.Liqo {
		cert, due = DueCertificate(pl.Tenant, now)
	}
	if !r.Limit.Take(Acts(pl.Step, p.Docs.Nonce != nil, due)) {
		pl.HeldBack = true
		return pl.settled(heldBack(pl, cert, r.Limit.Max))
	}
	if admitted {
		r.Pending++
	}
	pl.Signs = !p.Liqo && (pl.Step == Issue || due)
	return pl
}

// adopting returns the action of type T among actions, if any.
func adopting[T Action](actions []Action) (T, bool) {
	for _, a := range actions {
		if a, ok := a.(T); ok {
			return a, true
		}
	}
	var none T
	return none, false
}

// DueCertificate returns the certificate in the status of tenant, an issued
// one, and whether it is due for renewal at now (RenewalOf). A certificate
// that does not parse is not due: PlanMaintain reports it.
func DueCertificate(tenant *authv1beta1.Tenant, now time.Time) (*x509.Certificate, bool) {
	cert, err := crypto.ParseCertificatePEM(tenant.Status.AuthParams.SignedCRT)
	if err != nil {
		return nil, false
	}
	return cert, RenewalOf(cert, now).Due
}

// heldBack is the outcome of a peering the round's limit held back: where it
// stands (a request, a Tenant waiting to be issued, an issued one waiting to
// be renewed) and that the next round takes it.
func heldBack(p Planned, cert *x509.Certificate, limit int) Outcome {
	note := fmt.Sprintf("held back: this round acted on %d peerings, its limit; the next round takes this one", limit)
	switch p.Step {
	case OfferNonce:
		return Outcome{Phase: gitpeerv1alpha1.PhaseRequested, Message: note}
	case Maintain:
		phase, message := Standing(p.Tenant.Spec.TenantCondition, cert)
		return Outcome{Phase: phase, Message: JoinNote(message, "renewal "+note)}
	}
	return Outcome{Phase: gitpeerv1alpha1.PhaseNonceIssued, Message: "Tenant merged, not issued yet; " + note}
}
