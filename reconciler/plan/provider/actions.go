package provider

import (
	"crypto/x509"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	"github.com/gitpeer/gitpeer/gitsync"
	"github.com/gitpeer/gitpeer/reconciler/plan"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
)

// Plan is what one round does for the provider side of one peering: the
// actions, in the order they are applied (the first that fails stops the
// rest), and the outcome the peering reaches when they all succeed.
type Plan struct {
	Actions []Action
	Outcome Outcome
}

func (p *Plan) add(a ...Action) { p.Actions = append(p.Actions, a...) }

// Outcome is the phase and message a peering reaches; Err fails it.
type Outcome = plan.Outcome[string]

// Action is one step of a Plan; the agent's applier knows each type.
type Action interface{ action() }

// EnsureNamespace creates the consumer's tenant namespace, owned by the
// PeeringRepository and recording the agent's mode, unless it exists; a
// foreign one fails the peering.
type EnsureNamespace struct{}

// PutNonceSecret writes Nonce in the consumer's liqo-nonce Secret, created if
// absent; Exists: the step read it (a rotation), else it found none.
type PutNonceSecret struct {
	Nonce  string
	Exists bool
}

// CreateLiqoNonce creates the consumer's liqo-nonce Secret empty, for Liqo's
// nonce creator to fill (Liqo mode).
type CreateLiqoNonce struct{}

// Stage queues Changes for the round's one commit, under Message; Routine
// are the round's routine events the step adds once its changes are on the
// branch.
type Stage struct {
	Message protocol.Message
	Changes []gitsync.FileChange
	Routine []Routine
}

// Routine is one step of the round's routine events (one event per Reason
// and round, listing the Items): What the steps of Reason did. IfPushed: only
// when this round's commit put the changes on the branch, not when the
// branch held them already.
type Routine struct {
	Reason, What, Item string
	IfPushed           bool
}

// NoteCertificate notes, for the metrics, the peering's certificate: its
// expiry (Unix seconds; zero: the peering holds none any more), whether the
// provider renews it and whether the renewal is overdue.
type NoteCertificate struct {
	Expiry          int64
	Renews, Overdue bool
}

// RecordKeyPin records Pin, the verified Tenant's key, as the consumer's pin
// in the records, their only source: before the Tenant it admits is applied.
type RecordKeyPin struct{ Pin string }

// CheckStrayTenant fails the peering, with an event, when a Tenant of
// someone else's would make Liqo's Tenant webhook refuse the consumer's
// (Liqo mode, before the Tenant is first created).
type CheckStrayTenant struct{}

// DropStaleLiqoCache records and deletes Liqo's certificate caches of the
// consumer when the Tenant applied has another CSR (Liqo mode).
type DropStaleLiqoCache struct{}

// ApplyTenant creates or updates the consumer's Tenant with Spec, labelled
// as the PeeringRepository's, recording the overrides Used (Applied: the
// Tenant applied is this one, and keeps those of its first application).
type ApplyTenant struct {
	Spec    authv1beta1.TenantSpec
	Used    []Override
	Applied bool
}

// RemoveAnnotation removes Key from the PeeringRepository: an override was used once.
type RemoveAnnotation struct{ Key string }

// Event is an event about About on the PeeringRepository.
type Event struct {
	Warning                bool
	Reason, About, Message string
}

// SetTenantCondition sets the applied Tenant's condition to Condition, the branch's.
type SetTenantCondition struct{ Condition authv1beta1.TenantCondition }

// Bind applies Bindings in the consumer's tenant namespace.
type Bind struct{ Bindings Bindings }

// QueueCSR queues CSR, one of the agent's own, for the round to create
// (it has no name yet) and approve with those of every peering at once.
type QueueCSR struct {
	CSR *certificatesv1.CertificateSigningRequest
}

// RecordSerial records Certificate, issued to the consumer, in the records:
// before it is stored or committed.
type RecordSerial struct{ Certificate *x509.Certificate }

// RecordSliceCertificates records the certificates Liqo issued for the
// consumer's ResourceSlices, by slice, before its Tenant is drained (Liqo
// mode: Liqo's Drained deletes the slices).
type RecordSliceCertificates struct{}

// RecordWatchedSlices records the certificates of the consumer's
// ResourceSlices the slice watch saw Liqo issue (Liqo mode).
type RecordWatchedSlices struct{}

// StoreIssued stores AuthParams, an issued certificate, in the status of the consumer's Tenant, as Liqo does.
type StoreIssued struct{ AuthParams authv1beta1.AuthParams }

// NoteRenewal notes when the consumer's certificate is due for renewal: the
// round comes back then, and the next remembers it.
type NoteRenewal struct{ At time.Time }

// NoteOverdue reports the consumer's overdue renewal: the round's
// CertificatesRenewed condition (Message) and its RenewalOverdue warning (Item).
type NoteOverdue struct{ Message, Item string }

// RecordMode records Mode on the tenant namespace: a person accepted the switch.
type RecordMode struct{ Mode string }

// Log is a line of the agent's log.
type Log struct {
	Message       string
	KeysAndValues []any
}

func (EnsureNamespace) action()    {}
func (RecordMode) action()         {}
func (Log) action()                {}
func (SetTenantCondition) action() {}
func (Bind) action()               {}
func (QueueCSR) action()           {}
func (RecordSerial) action()       {}
func (StoreIssued) action()        {}
func (NoteRenewal) action()        {}
func (NoteOverdue) action()        {}
func (RecordKeyPin) action()       {}
func (CheckStrayTenant) action()   {}
func (DropStaleLiqoCache) action() {}
func (ApplyTenant) action()        {}
func (RemoveAnnotation) action()   {}
func (Event) action()              {}
func (PutNonceSecret) action()     {}
func (CreateLiqoNonce) action()    {}
func (Stage) action()              {}
func (NoteCertificate) action()    {}

func (RecordSliceCertificates) action() {}
func (RecordWatchedSlices) action()     {}
