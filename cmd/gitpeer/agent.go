package main

import (
	"context"
	"fmt"
	"math"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/fluxcd/pkg/runtime/leaderelection"
	"github.com/fluxcd/pkg/runtime/logger"
	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/gitpeer/gitpeer/agent"
	"github.com/gitpeer/gitpeer/reconciler"
	"github.com/gitpeer/gitpeer/reconciler/plan/provider"
)

// agentOptions are the flags of `gitpeer agent`.
type agentOptions struct {
	log            logger.Options
	leaderElection leaderelection.Options
	qps            string
	burst          int
	kubeconfig     string
	metricsAddr    string
	healthAddr     string
	pprofAddr      string
	webhookAddr    string
	webhookTLSCert string
	webhookTLSKey  string
	trustedProxies []string
	concurrent     int
	peeringWorkers int
	roundLimit     int
	fullResync     time.Duration
	minRetryDelay  time.Duration
	maxRetryDelay  time.Duration
	watchNamespace string
	dataDir        string
	memoryLimit    string
}

func newAgentCmd() *cobra.Command {
	o := &agentOptions{}
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Run the gitpeer controller manager (the in-cluster agent)",
		Long: `Run the controller manager that reconciles PeeringRepositories: it follows each
repository's branch, acts as provider and consumer of the handshake, serves
metrics, health probes and the push webhook receiver (POST /hook/<namespace>/<name>).
It stops cleanly on SIGTERM or SIGINT.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return o.run(ctx)
		},
	}
	fs := cmd.Flags()
	o.log.BindFlags(fs)
	o.leaderElection.BindFlags(fs)
	// The flags of fluxcd/pkg/runtime/client.Options, declared here: that package
	// would bring kubectl, cli-runtime and cli-utils into the module for two flags.
	fs.StringVar(&o.qps, "kube-api-qps", autoQPS, fmt.Sprintf(`The maximum queries-per-second of requests sent to the Kubernetes API; a negative number sets no client-side limit. "auto": none when the API server enforces API Priority and Fairness (it then protects itself), else %d.`, fallbackQPS))
	fs.IntVar(&o.burst, "kube-api-burst", defaultBurst, "The maximum burst queries-per-second of requests sent to the Kubernetes API, when --kube-api-qps sets a limit.")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "Path to a kubeconfig; default: $KUBECONFIG, then in-cluster, then ~/.kube/config.")
	fs.StringVar(&o.metricsAddr, "metrics-addr", ":8080", `The address the metrics endpoint binds to; "0" disables it.`)
	fs.StringVar(&o.healthAddr, "health-addr", ":9440", `The address the health endpoints (/healthz, /readyz) bind to; "0" disables them.`)
	fs.StringVar(&o.pprofAddr, "pprof-addr", "0", `The address Go's profiling endpoints (/debug/pprof/) bind to, e.g. "127.0.0.1:6060"; "0" disables them.`)
	fs.StringVar(&o.webhookAddr, "webhook-addr", ":9292", `The address the push webhook receiver binds to; "0" disables it.`)
	fs.StringVar(&o.webhookTLSCert, "webhook-tls-cert-file", "", "A PEM certificate (chain) to serve the webhook receiver over HTTPS with, e.g. tls.crt of a mounted kubernetes.io/tls Secret; reloaded when it changes. Default: plain HTTP.")
	fs.StringVar(&o.webhookTLSKey, "webhook-tls-key-file", "", "The PEM private key of --webhook-tls-cert-file.")
	fs.StringSliceVar(&o.trustedProxies, "webhook-trusted-proxies", nil, "CIDRs of proxies (e.g. the Ingress controller's pods) whose X-Forwarded-For header names a webhook request's source for the per-source rate limit. Default: none, the source is the TCP peer.")
	fs.IntVar(&o.concurrent, "concurrent", 4, "The number of PeeringRepositories reconciled at once.")
	fs.IntVar(&o.peeringWorkers, "peering-workers", reconciler.DefaultPeeringWorkers, "The number of peerings of a provider's round that take their steps (Kubernetes writes) at once; the round plans them and commits their changes in the same order whatever the number.")
	fs.IntVar(&o.roundLimit, "round-limit", provider.DefaultRoundLimit, "The most peerings one round of a provider acts on (issues or renews a certificate, answers a request with a nonce); the others wait for the next round, which starts at once. A round's memory grows with it: fewer lowers the agent's peak memory, at the cost of more rounds and commits for a large issuance. Revocations are never held back.")
	fs.DurationVar(&o.fullResync, "full-resync-period", reconciler.DefaultFullResyncPeriod, "The longest time between two rounds of a provider that visit every peering; the rounds in between visit only the peerings whose directory or cluster objects changed, or that wait for something. Full rounds repair what the agent does not watch (the nonce and records Secrets).")
	fs.DurationVar(&o.minRetryDelay, "min-retry-delay", reconciler.DefaultMinRetryDelay, "The first delay before retrying a round that failed on a transient error (Git server unreachable, API server unavailable); it doubles on each failure.")
	fs.DurationVar(&o.maxRetryDelay, "max-retry-delay", reconciler.DefaultMaxRetryDelay, "The longest delay before retrying a round that failed on a transient error.")
	fs.StringVar(&o.watchNamespace, "watch-namespace", "", "Watch PeeringRepositories (and serve webhooks) in this namespace only; default: all namespaces.")
	fs.StringVar(&o.memoryLimit, "memory-limit", "auto", `The Go runtime's soft memory limit, e.g. "400Mi": the garbage collector works harder as the agent's memory nears it, so peaks stay under it; "0" sets none. "auto": the container's memory limit (cgroup) less room for the binary's pages (its size, at least 10% of the limit, at most half), unless $GOMEMLIMIT is set.`)
	fs.StringVar(&o.dataDir, "data-dir", filepath.Join(os.TempDir(), "gitpeer"), "The directory holding the persistent clones; mount a volume here in a Deployment.")
	return cmd
}

// run starts the agent and blocks until ctx is done.
func (o *agentOptions) run(ctx context.Context) error {
	if !profiling(o.pprofAddr) {
		// Nothing reads the heap profile without the profiling endpoints, and
		// its sampling keeps a record per allocating call stack: ~3 MiB at
		// 10,000 peerings.
		runtime.MemProfileRate = 0
	}
	log := logger.NewLogger(o.log)
	logger.SetLogger(log)
	limit, from, err := memoryLimit(o.memoryLimit, memlimit.FromCgroup, os.Getenv, executableSize())
	if err != nil {
		return err
	}
	if limit > 0 {
		debug.SetMemoryLimit(limit)
	}
	memLimit := "none"
	if l := debug.SetMemoryLimit(-1); l != math.MaxInt64 {
		memLimit = fmt.Sprintf("%d MiB (from %s)", l>>20, from)
	}
	cfg, err := o.restConfig()
	if err != nil {
		return err
	}
	rateLimit, err := applyRateLimit(ctx, cfg, o.qps, o.burst)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(o.dataDir, 0o700); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	opts, err := o.agentOptions(log)
	if err != nil {
		return err
	}
	mgr, err := agent.New(cfg, opts)
	if err != nil {
		return err
	}
	log.Info("starting gitpeer agent", "version", version, "watchNamespace", o.watchNamespace, "dataDir", o.dataDir,
		"memoryLimit", memLimit, "kubeAPIRateLimit", rateLimit)
	return mgr.Start(ctx)
}

// profiling reports whether --pprof-addr serves Go's profiling endpoints.
func profiling(pprofAddr string) bool { return pprofAddr != "" && pprofAddr != "0" }

// agentOptions turns the flags into the agent's options.
func (o *agentOptions) agentOptions(log logr.Logger) (agent.Options, error) {
	proxies := make([]netip.Prefix, 0, len(o.trustedProxies))
	for _, s := range o.trustedProxies {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return agent.Options{}, fmt.Errorf("--webhook-trusted-proxies: %w", err)
		}
		proxies = append(proxies, p)
	}
	return agent.Options{
		DataDir: o.dataDir, Concurrent: o.concurrent, PeeringWorkers: o.peeringWorkers, RoundLimit: o.roundLimit, FullResyncPeriod: o.fullResync, WatchNamespace: o.watchNamespace,
		MinRetryDelay: o.minRetryDelay, MaxRetryDelay: o.maxRetryDelay,
		MetricsAddr: o.metricsAddr, HealthAddr: o.healthAddr, PprofAddr: o.pprofAddr, LeaderElection: o.leaderElection, Logger: log,
		Webhook: agent.WebhookOptions{
			Addr: o.webhookAddr, TLSCertFile: o.webhookTLSCert, TLSKeyFile: o.webhookTLSKey, TrustedProxies: proxies,
		},
	}, nil
}

// restConfig loads the client configuration; applyRateLimit sets its rate limit.
func (o *agentOptions) restConfig() (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	if o.kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	} else {
		cfg, err = ctrl.GetConfig()
	}
	if err != nil {
		return nil, fmt.Errorf("loading the Kubernetes client configuration: %w", err)
	}
	cfg.UserAgent = "gitpeer/" + version
	return cfg, nil
}
