// Package agent wires gitpeer's agent, the controller manager that reconciles
// PeeringRepositories: `gitpeer agent` runs it, and test/sandbox starts the
// same wiring in-process for the end-to-end suites and the demo.
package agent

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/fluxcd/pkg/runtime/leaderelection"
	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/gitpeer/gitpeer/apis"
	"github.com/gitpeer/gitpeer/reconciler"
	"github.com/gitpeer/gitpeer/reconciler/webhook"
)

// Options configure an agent; `gitpeer agent`'s flags set them.
type Options struct {
	// DataDir holds the persistent clones; it must exist.
	DataDir string
	// Concurrent is the number of PeeringRepositories reconciled at once.
	Concurrent int
	// PeeringWorkers is the number of peerings of a provider's round that take
	// their steps at once; zero means reconciler.DefaultPeeringWorkers.
	PeeringWorkers int
	// FullResyncPeriod is the longest time between two rounds of a provider
	// that visit every peering (the others visit only the peerings that
	// changed); zero means reconciler.DefaultFullResyncPeriod.
	FullResyncPeriod time.Duration
	// RoundLimit is how many peerings one round of a provider acts on; zero
	// means provider.DefaultRoundLimit (tests set fewer).
	RoundLimit int
	// MinRetryDelay and MaxRetryDelay bound the backoff after a round failed on a
	// transient error; zero means reconciler.DefaultMinRetryDelay / DefaultMaxRetryDelay.
	MinRetryDelay, MaxRetryDelay time.Duration
	// WatchNamespace restricts the PeeringRepositories watched (and the
	// webhooks served) to one namespace; empty means all namespaces.
	WatchNamespace string
	// MetricsAddr and HealthAddr are the addresses the metrics and the
	// health endpoints (/healthz, /readyz) bind to; "0" disables them.
	MetricsAddr, HealthAddr string
	// PprofAddr is the address Go's profiling endpoints (/debug/pprof/)
	// bind to; "" or "0" disables them.
	PprofAddr string
	// LeaderElection elects one active agent among replicas.
	LeaderElection leaderelection.Options
	// Webhook configures the push webhook receiver.
	Webhook WebhookOptions
	// Logger receives the manager's and the controllers' logs.
	Logger logr.Logger
	// SkipNameValidation allows several agents in one process (tests, the demo).
	SkipNameValidation bool
}

// WebhookOptions configure the push webhook receiver (POST /hook/<namespace>/<name>).
type WebhookOptions struct {
	// Addr is the address the receiver binds to; "" or "0" disables it.
	Addr string
	// TLSCertFile and TLSKeyFile serve HTTPS instead of plain HTTP when set.
	TLSCertFile, TLSKeyFile string
	// TrustedProxies are the proxies whose X-Forwarded-For header names a
	// request's source for the per-source rate limit.
	TrustedProxies []netip.Prefix
}

// New returns the agent for the cluster cfg reaches: a controller manager with
// the PeeringRepository controller, the push webhook receiver and the
// controller feeding it, and health checks. Start runs it.
func New(cfg *rest.Config, o Options) (ctrl.Manager, error) {
	mgr, err := ctrl.NewManager(cfg, o.managerOptions())
	if err != nil {
		return nil, fmt.Errorf("creating manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	r := &reconciler.PeeringRepositoryReconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Config: cfg,
		Recorder: mgr.GetEventRecorder("gitpeer"), DataDir: o.DataDir,
	}
	if err := r.SetupWithManager(mgr, reconciler.ControllerOptions{
		MaxConcurrentReconciles: o.Concurrent, PeeringWorkers: o.PeeringWorkers, FullResyncPeriod: o.FullResyncPeriod, RoundLimit: o.RoundLimit, SkipNameValidation: o.SkipNameValidation,
		MinRetryDelay: o.MinRetryDelay, MaxRetryDelay: o.MaxRetryDelay,
	}); err != nil {
		return nil, fmt.Errorf("setting up the controller: %w", err)
	}
	if o.Webhook.Addr != "" && o.Webhook.Addr != "0" {
		if err := o.addWebhook(mgr); err != nil {
			return nil, err
		}
	}
	return mgr, nil
}

// addWebhook adds the push webhook receiver and the controller feeding its Hooks to mgr.
func (o Options) addWebhook(mgr ctrl.Manager) error {
	hooks := &webhook.Hooks{}
	feed := &webhook.HookReconciler{Client: mgr.GetClient(), SecretReader: mgr.GetAPIReader(), Hooks: hooks}
	if err := feed.SetupWithManager(mgr, controller.Options{SkipNameValidation: ptr.To(o.SkipNameValidation)}); err != nil {
		return fmt.Errorf("setting up the webhook controller: %w", err)
	}
	w := o.Webhook
	return mgr.Add(&webhook.Server{Addr: w.Addr, TLSCertFile: w.TLSCertFile, TLSKeyFile: w.TLSKeyFile,
		Receiver: &webhook.Receiver{
			Client: mgr.GetClient(), Hooks: hooks, Namespace: o.WatchNamespace, TrustedProxies: w.TrustedProxies,
			Log: o.Logger.WithName("webhook"),
		}})
}

func (o Options) managerOptions() ctrl.Options {
	le := o.LeaderElection
	opts := ctrl.Options{
		Scheme:                        apis.NewScheme(),
		Client:                        reconciler.ClientOptions(),
		Logger:                        o.Logger,
		Metrics:                       metricsserver.Options{BindAddress: o.MetricsAddr},
		HealthProbeBindAddress:        o.HealthAddr,
		PprofBindAddress:              o.PprofAddr,
		Cache:                         cacheOptions(o.WatchNamespace),
		LeaderElection:                le.Enable,
		LeaderElectionID:              leaderelection.GenerateID("gitpeer-agent", o.WatchNamespace),
		LeaderElectionNamespace:       o.WatchNamespace,
		LeaderElectionReleaseOnCancel: le.ReleaseOnCancel,
		LeaseDuration:                 &le.LeaseDuration,
		RenewDeadline:                 &le.RenewDeadline,
		RetryPeriod:                   &le.RetryPeriod,
	}
	return opts
}
