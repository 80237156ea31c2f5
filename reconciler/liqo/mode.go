package liqo

import (
	"cmp"
	"fmt"

	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
)

// ModeStep is what the agent does with a peering given the mode it was made in.
type ModeStep int

// Mode steps.
const (
	// ModeGoOn: the peering was made in the current mode.
	ModeGoOn ModeStep = iota
	// ModeSwitch: made in another mode; a person accepted the switch: record it, go on.
	ModeSwitch
	// ModeBlocked: made in another mode; leave it alone and report it.
	ModeBlocked
)

// DecideMode compares the mode a peering was recorded in (empty: standalone)
// with the current one; accepted is the value of the peering's
// SwitchModeAnnotationPrefix annotation, which counts only when it names the
// current mode.
func DecideMode(recorded, current, accepted string) ModeStep {
	switch {
	case cmp.Or(recorded, gitpeerv1alpha1.PeeringModeStandalone) == current:
		return ModeGoOn
	case accepted == current:
		return ModeSwitch
	}
	return ModeBlocked
}

// ModeChanged says that the peering with peer, made in mode recorded, is
// left alone while the agent runs in mode current (summary: the agent's mode
// as it reports it) until a person re-peers and accepts the switch.
func ModeChanged(peer, recorded, current, summary string) string {
	return fmt.Sprintf("the peering with %s was made in %s mode but this cluster now runs in %s mode (%s): nothing but a revocation is done for it until a person re-peers (docs/liqo.md \"Switching modes\") and sets annotation %s=%s on this PeeringRepository",
		peer, recorded, current, summary, gitpeerv1alpha1.SwitchModeAnnotationPrefix+peer, current)
}

// ModeSwitched says that the peering with peer, made in mode recorded, goes
// on in mode current, as a person accepted.
func ModeSwitched(peer, recorded, current string) string {
	return fmt.Sprintf("the peering with %s goes on in %s mode (was %s), accepted by annotation %s", peer, current, recorded, gitpeerv1alpha1.SwitchModeAnnotationPrefix+peer)
}
