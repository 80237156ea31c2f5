package consumer

import (
	"fmt"
	"time"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	"github.com/gitpeer/gitpeer/gitsync"
	"github.com/gitpeer/gitpeer/reconciler/plan"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
)

// Plan is what one round does for the consumer side of one peering: the
// actions, in the order they are applied (the first that fails stops the
// rest), and the outcome the peering reaches when they all succeed.
type Plan struct {
	Actions []Action
	Outcome Outcome
}

func (p *Plan) add(a ...Action) { p.Actions = append(p.Actions, a...) }

// Outcome is the phase and message a peering reaches; Err fails it.
type Outcome = plan.Outcome[EventReason]

// Action is one step of a Plan; the agent's applier knows each type.
type Action interface{ action() }

// EnsureNamespace creates the provider's tenant namespace, recording the
// agent's mode, or adopts a legacy one; it fails on a foreign one.
type EnsureNamespace struct{}

// RecordMode records Mode on the tenant namespace: a person accepted the switch.
type RecordMode struct{ Mode string }

// ConsumeAnnotation removes Key from the PeeringRepository: the agent did what it asked.
type ConsumeAnnotation struct{ Key string }

// ClearRevoked removes the revocation mark of the tenant namespace.
type ClearRevoked struct{}

// MarkRevoked records on the tenant namespace that the provider revoked the identity At.
type MarkRevoked struct{ At time.Time }

// ForgetProvider deletes the Identity, its kubeconfig Secret, the signed
// nonce (Secrets only if the agent manages them) and the pin.
type ForgetProvider struct{}

// PushReview pushes Change to the review Branch, the agent's own, at once;
// Pushed are the events of a push that made a commit.
type PushReview struct {
	Branch  string
	Message protocol.Message
	Change  gitsync.FileChange
	Pushed  []Event
}

// Stage queues Change for the round's one commit to the branch (direct
// mode); Pushed are the events of a commit that put it there.
type Stage struct {
	Message protocol.Message
	Change  gitsync.FileChange
	Pushed  []Event
}

// MarkProposed writes the signed-nonce Secret {Nonce, Signature}: tenant.yaml for Nonce was pushed.
type MarkProposed struct {
	Nonce     string
	Signature []byte
}

// PutNonce writes the liqo-signed-nonce Secret {Nonce} for Liqo's nonce
// signer, as `liqoctl generate tenant` does, dropping an earlier nonce's
// signature and proposed mark.
type PutNonce struct{ Nonce string }

// MarkLiqoProposed sets vocabulary.ProposedAnnotation to Where on the liqo-signed-nonce
// Secret, if it still holds Nonce: tenant.yaml for it was pushed.
type MarkLiqoProposed struct{ Nonce, Where string }

// Prove proves with a SelfSubjectReview that Kubeconfig authenticates to the
// provider as User; when it does not, the rest of the plan is dropped and the
// peering fails with Failed's message.
type Prove struct {
	Provider, User string
	Kubeconfig     []byte
	// Liqo: the kubeconfig is Liqo's, nothing is kept in its place.
	Liqo bool
	// Drift is what the outcome of a failed proof says of parameters this
	// round restored.
	Drift Drift
}

// Drift is what a round that restored an Identity's drifted parameters adds
// to the peering's outcome, whatever it is: its Reason and a Note.
type Drift struct {
	Reason EventReason
	Note   string
}

// Mark returns o with the drift's reason and note; o unchanged when nothing drifted.
func (d Drift) Mark(o Outcome) Outcome {
	if d.Note == "" || o.Err != nil {
		return o
	}
	o.Reason, o.Message = d.Reason, o.Message+"; "+d.Note
	return o
}

// Failed is the message of a proof that failed: err, or the user the provider named.
func (p Prove) Failed(user string, err error) string {
	switch {
	case err != nil && p.Liqo:
		return fmt.Sprintf("Liqo's kubeconfig for %s does not work yet: %v", p.Provider, err)
	case err != nil:
		return fmt.Sprintf("kubeconfig for %s does not work yet, kept the current one: %v", p.Provider, err)
	case p.Liqo:
		return fmt.Sprintf("provider %s authenticates Liqo's kubeconfig as %q, not %q", p.Provider, user, p.User)
	}
	return fmt.Sprintf("provider %s authenticates this kubeconfig as %q, not %q; kept the current one", p.Provider, user, p.User)
}

// RememberProven remembers, across rounds, Digest as the Liqo kubeconfig proven for the provider.
type RememberProven struct{ Digest string }

// PinProvider records Pin, taken on first use, on the tenant namespace and drops a legacy CA pin.
type PinProvider struct{ Pin string }

// WriteIdentity applies Identity (standalone) and its kubeconfig Secret
// holding Kubeconfig; a changed Secret is announced with Written.
type WriteIdentity struct {
	Provider   string
	Identity   *authv1beta1.Identity
	Kubeconfig []byte
	Serial     string
}

// Written is the event of a kubeconfig Secret created or updated (op),
// which the proof of this round authenticated as user ("" when not proven again).
func (w WriteIdentity) Written(op, user string) string {
	return fmt.Sprintf("kubeconfig for provider %s %s (serial %s); it authenticates as %s", w.Provider, op, w.Serial, user)
}

// PutIdentity creates or updates Identity (Liqo mode: Liqo's identity
// controller writes its kubeconfig), recording ParamsDigest, when set, in
// vocabulary.IdentityParamsAnnotation.
type PutIdentity struct {
	Identity     *authv1beta1.Identity
	ParamsDigest string
}

// NoteCertificate notes, for the metrics, the expiry of the peering's
// certificate (Unix seconds); zero: the peering holds none any more.
type NoteCertificate struct{ Expiry int64 }

// RecheckAt brings the round back by At: it waits for one of Liqo's
// controllers, whose objects the agent does not watch.
type RecheckAt struct{ At time.Time }

// Event is an event about About on the PeeringRepository.
type Event struct {
	Reason  EventReason
	About   string
	Message string
}

// Log is a line of the agent's log.
type Log struct {
	Message       string
	KeysAndValues []any
}

func (EnsureNamespace) action()   {}
func (RecordMode) action()        {}
func (ConsumeAnnotation) action() {}
func (ClearRevoked) action()      {}
func (MarkRevoked) action()       {}
func (ForgetProvider) action()    {}
func (PushReview) action()        {}
func (Stage) action()             {}
func (MarkProposed) action()      {}
func (PutNonce) action()          {}
func (MarkLiqoProposed) action()  {}
func (Prove) action()             {}
func (RememberProven) action()    {}
func (PinProvider) action()       {}
func (WriteIdentity) action()     {}
func (PutIdentity) action()       {}
func (NoteCertificate) action()   {}
func (RecheckAt) action()         {}
func (Event) action()             {}
func (Log) action()               {}

// EventReason names the reason of an event, or of a peering needing
// attention; the agent maps each to its event reason and type.
type EventReason int

// Event reasons.
const (
	NoReason EventReason = iota
	Requested
	DirectMode
	TenantProposed
	PeeringReady
	Revoked
	Rejected
	TrustedOnFirstUse
	ModeChanged
	ModeSwitched
	AuthParamsDrifted
)
