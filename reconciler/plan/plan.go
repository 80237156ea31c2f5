// Package plan holds what the planners of both roles share: the Outcome a
// peering reaches. The planners themselves are its subpackages: provider
// and consumer (one per role), ownership (the rules both share) and
// incremental (which peerings a round visits). They are pure: they read
// plain data and write nothing; the reconciler observes before them and
// applies after.
package plan

import gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"

// Outcome is the phase and message a peering reaches; Err fails it. Reason,
// of a role's type R, when set, says why the peering needs attention
// (status.peerings[].reason).
type Outcome[R comparable] struct {
	Phase   gitpeerv1alpha1.PeeringPhase
	Message string
	Reason  R
	Err     error
}
