package reconciler

import (
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gitpeer/gitpeer/reconciler/plan/provider"
)

// Default bounds of the backoff after a transient failure (a *Generic error).
const (
	DefaultMinRetryDelay = 750 * time.Millisecond
	DefaultMaxRetryDelay = 5 * time.Minute
)

// ControllerOptions tunes the controller.
type ControllerOptions struct {
	// MaxConcurrentReconciles is how many PeeringRepositories are reconciled at once.
	MaxConcurrentReconciles int
	// SkipNameValidation allows several agents in one process (tests, the demo).
	SkipNameValidation bool
	// MinRetryDelay and MaxRetryDelay bound the exponential backoff after a
	// transient failure; zero means DefaultMinRetryDelay and DefaultMaxRetryDelay.
	MinRetryDelay, MaxRetryDelay time.Duration
	// PeeringWorkers is how many peerings of a provider's round take their
	// steps (Kubernetes writes, mostly) at once; zero means
	// DefaultPeeringWorkers. The requests admitted and the round's commit are
	// the same whatever the number.
	PeeringWorkers int
	// FullResyncPeriod is the longest time between two rounds of a provider
	// that visit every peering; the others visit only the peerings that
	// changed. It repairs what the agent does not watch (the nonce and
	// records Secrets). Zero means DefaultFullResyncPeriod.
	FullResyncPeriod time.Duration
	// RoundLimit is how many peerings one round of a provider acts on (issues,
	// renews, answers with a nonce: provider.Acts); the others wait for the
	// next round, which starts at once. It bounds what a round holds in
	// memory. Zero means provider.DefaultRoundLimit.
	RoundLimit int
}

func (o ControllerOptions) roundLimit() int {
	if o.RoundLimit <= 0 {
		return provider.DefaultRoundLimit
	}
	return o.RoundLimit
}

func (o ControllerOptions) fullResyncPeriod() time.Duration {
	if o.FullResyncPeriod <= 0 {
		return DefaultFullResyncPeriod
	}
	return o.FullResyncPeriod
}

func (o ControllerOptions) peeringWorkers() int {
	if o.PeeringWorkers <= 0 {
		return DefaultPeeringWorkers
	}
	return o.PeeringWorkers
}

func (o ControllerOptions) controller() controller.Options {
	minDelay, maxDelay := o.MinRetryDelay, o.MaxRetryDelay
	if minDelay <= 0 {
		minDelay = DefaultMinRetryDelay
	}
	if maxDelay <= 0 {
		maxDelay = DefaultMaxRetryDelay
	}
	return controller.Options{
		MaxConcurrentReconciles: max(o.MaxConcurrentReconciles, 1),
		SkipNameValidation:      &o.SkipNameValidation,
		RateLimiter:             workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](minDelay, max(minDelay, maxDelay)),
	}
}
