package provider

import (
	"cmp"

	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/reconciler/liqo"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// PlanMode lets the peering go on when its tenant namespace (none yet: a
// new peering) records the agent's mode, or records the switch a person
// accepted (then the switch is recorded and the annotation removed: the
// actions open the peering's step). Otherwise the peering is left alone and
// reported: blocked, with its outcome.
func PlanMode(s Snapshot) (p Plan, blocked bool) {
	if !s.Namespace {
		return p, false
	}
	peer := s.Docs.Consumer
	recorded := cmp.Or(s.NamespaceMode, gitpeerv1alpha1.PeeringModeStandalone)
	switch liqo.DecideMode(recorded, s.Mode, s.SwitchAccepted) {
	case liqo.ModeGoOn:
		return p, false
	case liqo.ModeSwitch:
		p.add(RecordMode{Mode: s.Mode}, RemoveAnnotation{Key: gitpeerv1alpha1.SwitchModeAnnotationPrefix + peer},
			Log{Message: "peering switched mode", KeysAndValues: []any{"peer", peer, "from", recorded, "to", s.Mode}},
			Event{Reason: vocabulary.ReasonModeSwitched, About: peer, Message: liqo.ModeSwitched(peer, recorded, s.Mode)})
		return p, false
	}
	msg := liqo.ModeChanged(peer, recorded, s.Mode, s.ModeSummary)
	p.add(Log{Message: "peering left alone: its mode changed", KeysAndValues: []any{"peer", peer, "recorded", recorded, "current", s.Mode}},
		Event{Warning: true, Reason: vocabulary.ReasonModeChanged, About: peer, Message: msg})
	p.Outcome = Outcome{Phase: gitpeerv1alpha1.PhaseFailed, Reason: vocabulary.ReasonModeChanged, Message: msg}
	return p, true
}
