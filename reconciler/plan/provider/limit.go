package provider

// DefaultRoundLimit is how many peerings one round of a provider acts on
// (Acts) unless the agent is told otherwise: what a round holds while it runs
// (the plans, the CSRs and certificates of its signings, the documents it
// writes) grows with the peerings it acts on, so the limit bounds the round's
// memory whatever the number of peerings. A round of more waits for none:
// the peerings it holds back are the next round's, which starts at once.
// 500 rather than 1,000 since 2026-11-27: at 10,000 consumers the agent's
// live heap peaked at ~80 instead of ~90 MB, and every identity was valid
// sooner (378 s against 419 s), in twice the commits.
const DefaultRoundLimit = 500

// Acts reports whether a peering planned with step makes the round create
// objects, sign a certificate or write files for it, which the round limit
// bounds (RoundLimit): an issuance (Issue, from the Tenant's verification to
// its identity.yaml), a renewal (Maintain with the certificate's renewal
// due), and a request answered with a nonce not on the branch yet
// (OfferNonce, admitted or answered earlier). A revocation or a fail-closed
// drain is never held back: it takes access away. The others write nothing
// new (a peering maintained as it is, an invalid tenant.yaml skipped).
func Acts(step Step, nonceOnBranch, renewalDue bool) bool {
	switch step {
	case Issue:
		return true
	case Maintain:
		return renewalDue
	case OfferNonce:
		return !nonceOnBranch
	}
	return false
}

// RoundLimit counts the peerings a round acts on, in the order it plans
// them, and holds back those beyond Max: the first Max acting peerings act,
// the others wait for the next round. The zero value holds back nothing.
type RoundLimit struct {
	// Max is how many peerings may act; zero or less: no limit.
	Max int
	// Acting and Held count the peerings that act and those held back so far.
	Acting, Held int
}

// Take reports whether a peering that acts (Acts) may act in this round, and
// counts it; a peering that does not act is never held back.
func (l *RoundLimit) Take(acts bool) bool {
	switch {
	case !acts:
		return true
	case l.Full():
		l.Held++
		return false
	}
	l.Acting++
	return true
}

// Full reports whether as many peerings act as Max allows: any other that
// would act is held back.
func (l *RoundLimit) Full() bool {
	return l.Max > 0 && l.Acting >= l.Max
}

// HoldBack counts a peering held back without planning it: one that the
// previous round held back and that did not change since
// (incremental.Waiting) acts if planned, so once the limit is Full planning
// it would only hold it back again (reading its objects and decoding its
// directory for nothing).
func (l *RoundLimit) HoldBack() {
	l.Held++
}
