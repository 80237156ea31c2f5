// Package provider is the provider's planner: from what a round observed of
// one peering (its documents on the branch and the cluster objects the
// PeeringRepository owns for it) it decides what to do, and it holds the
// provider's trust rules on its records (the document rules are trust's). It reads nothing and writes nothing: the
// reconciler observes, asks it, and applies what it decides.
package provider

import (
	"bytes"
	gocrypto "crypto"
	"crypto/x509"
	"fmt"
	"path"
	"time"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/reconciler/check"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// Step is what the provider does for one peering directory in a round.
type Step int

// Steps, in the order Decide considers them.
const (
	// FailClosed: a kustomized directory whose tenant.yaml yields no valid
	// Tenant; an issued Tenant is drained, nothing is issued or renewed.
	FailClosed Step = iota
	// SkipInvalid: tenant.yaml is present but invalid; nothing is issued or revoked.
	SkipInvalid
	// Revoke: tenant.yaml left the branch while a Tenant or identity.yaml remains.
	Revoke
	// OfferNonce: no tenant.yaml yet; answer a request with a nonce.
	OfferNonce
	// Maintain: the Tenant on the branch is the one issued; keep it true to the branch.
	Maintain
	// Issue: verify the Tenant on the branch and issue its certificate.
	Issue
)

var stepNames = [...]string{"FailClosed", "SkipInvalid", "Revoke", "OfferNonce", "Maintain", "Issue"}

func (s Step) String() string { return stepNames[s] }

// Observed is what a round observed in the cluster of one peering.
type Observed struct {
	// Tenant is the Tenant this PeeringRepository created for the consumer, or nil.
	Tenant *authv1beta1.Tenant
}

// Decide returns the step for the peering directory pe given what was observed.
func Decide(pe *protocol.Documents, o Observed) Step {
	issued := o.Tenant != nil && o.Tenant.Status.AuthParams != nil
	switch {
	case pe.BuildFailed != nil:
		return FailClosed
	case pe.Tenant == nil && pe.Invalid[vocabulary.TenantFile] != nil:
		return SkipInvalid
	case pe.Tenant == nil && (o.Tenant != nil || pe.Identity != nil):
		return Revoke
	case pe.Tenant == nil:
		return OfferNonce
	case issued && Applied(pe, o.Tenant):
		return Maintain
	}
	return Issue
}

// Applied reports whether tenant, the Tenant this PeeringRepository applied
// for the consumer (nil if none), is the one merged in pe: same signature and
// CSR. The provider verified it when it applied it.
func Applied(pe *protocol.Documents, tenant *authv1beta1.Tenant) bool {
	return tenant != nil && pe.Tenant != nil &&
		bytes.Equal(tenant.Spec.Signature, pe.Tenant.Spec.Signature) && bytes.Equal(tenant.Spec.CSR, pe.Tenant.Spec.CSR)
}

// Admission is the answer to a request.
type Admission int

// Admissions.
const (
	// Admitted: answer it with a nonce.
	Admitted Admission = iota
	// Answered: it was answered in an earlier round (its tenant namespace exists).
	Answered
	// NotAllowed: the consumer matches no pattern of allowedConsumers; nothing is created.
	NotAllowed
	// Deferred: maxPendingRequests is reached; nothing is created this round.
	Deferred
)

// Request is what Admit needs to answer a request.
type Request struct {
	Consumer string
	// Allowed are the allowedConsumers patterns (path.Match); none allows all.
	Allowed []string
	// Answered: the consumer's tenant namespace exists.
	Answered bool
	// Pending counts the requests answered and not issued yet; Max caps them.
	Pending, Max int
}

// Admit answers a request: a consumer not allowed is refused, a request
// already answered stays answered, and a new one waits while Max requests
// are pending.
func Admit(r Request) Admission {
	switch {
	case !Allowed(r.Allowed, r.Consumer):
		return NotAllowed
	case r.Answered:
		return Answered
	case r.Pending >= r.Max:
		return Deferred
	}
	return Admitted
}

// Allowed reports whether consumer matches one of the patterns; no pattern
// allows every consumer.
func Allowed(patterns []string, consumer string) bool {
	if len(patterns) == 0 {
		return true
	}
	for _, p := range patterns {
		if ok, err := path.Match(p, consumer); err == nil && ok {
			return true
		}
	}
	return false
}

// TenantCheck is what the provider knows when it verifies a merged Tenant.
type TenantCheck struct {
	// Nonce is the provider's own current nonce for the consumer (its
	// Secret); "" when none was issued.
	Nonce string
	// PinnedKey is the key pinned for the consumer (crypto.KeyPin), "" if none.
	PinnedKey string
	// Rekey is the value of the consumer's rekey annotation: the pin of the
	// key an admin accepts in place of the pinned one.
	Rekey string
	// RevivalBlocked, if not empty, says why the consumer must not be bound
	// again (an unexpired revoked certificate: RevivalRefusal).
	RevivalBlocked string
	// Revival is the value of the consumer's revival annotation, "" if none:
	// gitpeerv1alpha1.AcceptRevivalValue lifts RevivalBlocked.
	Revival string
	// Applied: the merged Tenant is the one the provider applied already
	// (Applied), so it passed the revival check, or used its override, then;
	// the override, used once, may be gone since.
	Applied bool
	// AllowProxyURL: the provider lets a Tenant name a proxyURL
	// (spec.provider.allowProxyURL).
	AllowProxyURL bool
}

// Override is an admin's annotation on the provider's PeeringRepository that
// lifts one trust rule for one consumer (revival or rekey). It is used once:
// the provider removes it once the Tenant it let through is applied.
type Override struct {
	Key, Value string
}

func (o Override) String() string { return o.Key + "=" + o.Value }

// TenantVerdict is the result of CheckTenant.
type TenantVerdict struct {
	// Key and Pin are the verified Tenant's key and its pin.
	Key gocrypto.PublicKey
	Pin string
	// Rejected, if not empty, is why nothing may be issued.
	Rejected string
	// Replaces is the pin the key replaces by the rekey annotation, if any.
	Replaces string
	// Used are the overrides the accepted Tenant relies on: the rekey
	// annotation naming its key, the revival annotation when a revoked
	// certificate blocks the consumer. None when it is rejected.
	Used []Override
	// Unused says, for each override annotation of the consumer that has no
	// effect (a revival when nothing blocks the consumer or with another value
	// than AcceptRevivalValue, a rekey naming another key), why: it is left in
	// place and reported.
	Unused []string
}

// CheckTenant applies the trust rules to the Tenant merged in pe: the
// document rules every checker shares (check.Tenant: signed over the
// provider's own current nonce, for the consumer's subject, authzPolicy
// KeysExchange, the key of request.yaml, the namespace of the terms, a
// proxyURL only if the provider allows one), then the rules on the
// provider's records: not blocked by a revoked certificate (unless the
// revival annotation accepts it, or the Tenant was applied already), and the
// key pinned at first issuance (changed only by the rekey annotation). It
// says which overrides the Tenant uses and which have no effect.
func CheckTenant(pe *protocol.Documents, c TenantCheck) TenantVerdict {
	checked := check.Tenant(pe, check.Facts{Nonce: &c.Nonce, AllowProxyURL: &c.AllowProxyURL})
	if checked.Err != nil {
		return TenantVerdict{Rejected: checked.Err.Error()}
	}
	key := checked.Key
	pin, err := crypto.KeyPin(key)
	if err != nil {
		return TenantVerdict{Rejected: err.Error()}
	}
	v := TenantVerdict{Key: key, Pin: pin}
	revival, rekey := gitpeerv1alpha1.RevivalAnnotationPrefix+pe.Consumer, gitpeerv1alpha1.RekeyAnnotationPrefix+pe.Consumer
	accepted := c.Revival == gitpeerv1alpha1.AcceptRevivalValue
	switch {
	case c.RevivalBlocked != "" && accepted:
		v.Used = append(v.Used, Override{revival, c.Revival})
	case c.Revival != "" && !accepted:
		v.Unused = append(v.Unused, fmt.Sprintf("annotation %s left in place, unused: its value is %q, only %q has an effect", revival, c.Revival, gitpeerv1alpha1.AcceptRevivalValue))
	case c.Revival != "":
		v.Unused = append(v.Unused, fmt.Sprintf("annotation %s left in place, unused: no unexpired revoked certificate of %s blocks its binding", revival, pe.Consumer))
	}
	switch {
	case c.Rekey == pin:
		v.Used = append(v.Used, Override{rekey, pin})
	case c.Rekey != "":
		v.Unused = append(v.Unused, fmt.Sprintf("annotation %s left in place, unused: it names key %s, not the key of tenant.yaml (%s)", rekey, short(c.Rekey), pin[:16]))
	}
	switch {
	case c.RevivalBlocked != "" && !accepted && !c.Applied:
		return TenantVerdict{Rejected: c.RevivalBlocked, Unused: v.Unused}
	case c.PinnedKey != "" && c.PinnedKey != pin && c.Rekey != pin:
		return TenantVerdict{Unused: v.Unused, Rejected: fmt.Sprintf("public key %s is not the key pinned for %s (%s); to change it, an admin sets annotation %s=%s on the PeeringRepository",
			pin[:16], pe.Consumer, short(c.PinnedKey), rekey, pin)}
	case c.PinnedKey != "" && c.PinnedKey != pin:
		v.Replaces = c.PinnedKey
	}
	return v
}

// CheckOrClose decides what the provider does with the Tenant merged in pe when
// Decide says Issue, given current, the Tenant the provider applied for the
// consumer (nil if none): the trust rules' verdict (CheckTenant) and, when
// they refuse it, the closure (Refuse). A refused Tenant fails closed as a
// directory that does not build does: whatever it replaces is drained, nothing
// is issued or renewed, nothing is revoked, and a valid tenant.yaml merged
// later (or the override the refusal names) restores the peering.
func CheckOrClose(pe *protocol.Documents, c TenantCheck, current *authv1beta1.Tenant) (TenantVerdict, *Closure) {
	v := CheckTenant(pe, c)
	if v.Rejected == "" {
		return v, nil
	}
	closure := Refuse(protocol.Path{Provider: pe.Provider, Consumer: pe.Consumer, Kind: vocabulary.TenantFile}.String(), v.Rejected, current)
	return v, &closure
}

func short(digest string) string { return digest[:min(16, len(digest))] }

// Renewal is when a certificate is renewed.
type Renewal struct {
	// At is the renewal point: 2/3 of the certificate's life.
	At time.Time
	// Due: the renewal point has passed; the round renews the certificate.
	Due bool
	// Overdue: the renewal point passed more than OverdueAfter ago and the
	// certificate is still the current one: renewal is stalled (an outage,
	// a CSR left unsigned). It is reported (reason RenewalOverdue) well
	// before the certificate expires.
	Overdue bool
}

// OverdueAfter is how long after its renewal point a certificate not
// renewed is overdue: a twelfth of its life, at most an hour. A healthy
// agent renews it in the round that finds it due.
func OverdueAfter(cert *x509.Certificate) time.Duration {
	return min(cert.NotAfter.Sub(cert.NotBefore)/12, time.Hour)
}

// RenewalOf returns the renewal of cert at now.
func RenewalOf(cert *x509.Certificate, now time.Time) Renewal {
	at := crypto.RenewalTime(cert)
	return Renewal{
		At:      at,
		Due:     !now.Before(at),
		Overdue: !now.Before(at.Add(OverdueAfter(cert))),
	}
}

// Pending reports whether a request counts against maxPendingRequests: it
// was answered (its tenant namespace is this PeeringRepository's) and no
// certificate was issued for it (no Tenant, or none in its status).
func Pending(answered bool, tenant *authv1beta1.Tenant) bool {
	return answered && (tenant == nil || tenant.Status.AuthParams == nil)
}
