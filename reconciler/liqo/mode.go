package liqo

import (
	"cmp"

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
