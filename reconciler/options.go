package reconciler

import (
	"sigs.k8s.io/controller-runtime/pkg/controller"
)

// ControllerOptions tunes the controller.
type ControllerOptions struct {
	// MaxConcurrentReconciles is how many PeeringRepositories are reconciled at once.
	MaxConcurrentReconciles int
	// SkipNameValidation allows several agents in one process (tests, the demo).
	SkipNameValidation bool
}

func (o ControllerOptions) controller() controller.Options {
	return controller.Options{MaxConcurrentReconciles: max(o.MaxConcurrentReconciles, 1), SkipNameValidation: &o.SkipNameValidation}
}
