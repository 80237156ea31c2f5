package main

import (
	"context"
	gocrypto "crypto"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/sync/errgroup"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gitpeer/gitpeer/apis"
	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	"github.com/gitpeer/gitpeer/crypto"
	reconcilerliqo "github.com/gitpeer/gitpeer/reconciler/liqo"
	"github.com/gitpeer/gitpeer/test/controlplane"
	"github.com/gitpeer/gitpeer/test/liqo"
	"github.com/gitpeer/gitpeer/test/liqoreal"
	"github.com/gitpeer/gitpeer/test/process"
)

// providerID is the cluster ID of the Liqo the benchmark runs.
const providerID = "liqo-provider"

// options configure one run of the benchmark.
type options struct {
	// Consumers is N, the number of simulated consumers, each with one Tenant.
	Consumers int
	// Workers is how many nonces are created, and Tenants applied, at once.
	Workers int
	// ControlPlane sets up the control plane: its ControllerManagerDefaultLimits runs
	// kube-controller-manager, the CSR signer, with its default client limits (20 QPS, burst 30)
	// instead of 500 QPS.
	ControlPlane controlplane.Options
	// Timeout bounds the run; the figures reached so far are still reported.
	Timeout time.Duration
	// Progress receives a progress line every ProgressEvery.
	Progress      io.Writer
	ProgressEvery time.Duration
}

// result holds the figures of one run; its JSON is what docs/benchmarks.md is made from.
type result struct {
	Commit      string `json:"commit"`
	LiqoVersion string `json:"liqoVersion"`
	Consumers   int    `json:"consumers"`
	Workers     int    `json:"workers"`
	Completed   bool   `json:"completed"`
	Outcome     string `json:"outcome"`
	CPUs        int    `json:"cpus"`
	// SignerQPS is the CSR signer's client limit (kube-controller-manager's --kube-api-qps);
	// SignerFloorSeconds what signing N certificates takes at that rate, and FloorRatio
	// IssuedSeconds over it.
	SignerQPS          int     `json:"signerQPS"`
	SignerFloorSeconds float64 `json:"signerFloorSeconds"`
	FloorRatio         float64 `json:"floorRatio,omitempty"`
	// NoncesSeconds is the set-up: every tenant namespace and nonce Secret created and filled.
	NoncesSeconds float64 `json:"noncesSeconds"`
	Nonces        int     `json:"nonces"`
	// The measured phase, from the first Tenant's create: every Tenant created (ApplySeconds),
	// the first and the last certificate seen in a Tenant's status.authParams.
	ApplySeconds       float64 `json:"applySeconds"`
	FirstIssuedSeconds float64 `json:"firstIssuedSeconds"`
	IssuedSeconds      float64 `json:"issuedSeconds"`
	Issued             int     `json:"issued"`
	// ValidCertificates counts the issued certificates for the consumer's key signed by the
	// cluster CA; FirstInvalid says why one was not.
	ValidCertificates int    `json:"validCertificates"`
	FirstInvalid      string `json:"firstInvalid,omitempty"`
	// HarnessCPUSeconds is the harness's CPU time (user and system) over the measured phase;
	// HarnessPeakRSSMiB its peak resident set size since it started.
	HarnessCPUSeconds float64 `json:"harnessCPUSeconds"`
	HarnessPeakRSSMiB float64 `json:"harnessPeakRSSMiB"`
	// LoadAverage is the machine's mean 1-minute load average over the measured phase: on a
	// shared machine the times depend on it.
	LoadAverage float64 `json:"loadAverage"`
}

// consumer is one simulated consumer: its Liqo key, the provider's nonce for it and its Tenant.
type consumer struct {
	id     string
	key    gocrypto.Signer
	nonce  string
	tenant *authv1beta1.Tenant
}

// bench is one run in progress.
type bench struct {
	o   options
	cp  *controlplane.ControlPlane
	h   *liqoreal.Harness
	k8s client.Client
	res *result
	cs  []*consumer
	// issued records the Tenants whose status carries a certificate.
	issued   *issuance
	began    time.Time
	lastLine time.Time
	// load sums the 1-minute load average samples of the measured phase; loads counts them.
	load  float64
	loads int
}

// run starts a control plane and Liqo's authentication module on it, prepares N consumers'
// nonces and Tenants, then applies the Tenants and waits for every certificate. It returns the
// figures reached even when the run did not complete, with the reason in Outcome, and the
// harness's log.
func run(ctx context.Context, o options) (*result, string, error) {
	// The watch's informer logs through controller-runtime, which otherwise warns with a stack
	// trace that no logger was set; the benchmark prints its own progress.
	ctrllog.SetLogger(logr.Discard())
	res := &result{Consumers: o.Consumers, Workers: o.Workers, CPUs: runtime.NumCPU(),
		SignerQPS: o.ControlPlane.SignerQPS(), SignerFloorSeconds: float64(o.Consumers) / float64(o.ControlPlane.SignerQPS())}
	work, err := os.MkdirTemp("", "gitpeer-liqobench-")
	if err != nil {
		return nil, "", err
	}
	defer os.RemoveAll(work)
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	b := &bench{o: o, res: res, began: time.Now(), issued: &issuance{seen: map[string]issued{}}}
	if b.cp, err = controlplane.NewWith(ctx, "", o.ControlPlane); err != nil {
		return nil, "", err
	}
	defer b.cp.Stop()
	if b.h, err = liqoreal.Start(ctx, b.cp, work, liqoreal.Options{ClusterID: providerID, APIServer: b.cp.URL}); err != nil {
		return nil, "", err
	}
	defer b.h.Stop()
	err = b.prepareAndMeasure(ctx)
	b.finish(err)
	return res, b.h.Log(), nil
}

// prepareAndMeasure runs the set-up and the measured phase; the watch of the Tenants ends with it,
// before the control plane stops.
func (b *bench) prepareAndMeasure(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := b.connect(ctx); err != nil {
		return err
	}
	if err := b.prepare(ctx); err != nil {
		return err
	}
	return b.measure(ctx)
}

// connect makes the benchmark's client, without a client-side rate limit so that applying the
// Tenants is paced by the API server alone, starts watching the Tenants and reads Liqo's version.
func (b *bench) connect(ctx context.Context) error {
	cfg := rest.CopyConfig(b.cp.Config)
	cfg.QPS = -1
	scheme := apis.NewScheme()
	var err error
	if b.k8s, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		return err
	}
	mode, err := reconcilerliqo.Detect(ctx, b.k8s, nil, providerID)
	if err != nil {
		return err
	}
	b.res.LiqoVersion = mode.Version
	return b.issued.watch(ctx, cfg, scheme)
}

// prepare generates the consumers' keys, has Liqo's nonce creator fill each one's nonce and signs
// it into the consumer's Tenant.
func (b *bench) prepare(ctx context.Context) error {
	b.cs = make([]*consumer, b.o.Consumers)
	for i := range b.cs {
		key, err := crypto.GenerateKey(crypto.Ed25519)
		if err != nil {
			return err
		}
		b.cs[i] = &consumer{id: fmt.Sprintf("consumer-%05d", i), key: key}
	}
	t := time.Now()
	var nonces atomic.Int64
	err := b.phase(ctx, "nonces", func(ctx context.Context) error {
		return b.each(ctx, func(ctx context.Context, c *consumer) (err error) {
			c.nonce, err = liqo.CreateNonce(ctx, b.k8s, c.id)
			if err == nil {
				nonces.Add(1)
			}
			return err
		})
	}, func() int { return int(nonces.Load()) }, func(done int) string {
		return fmt.Sprintf("nonces %d/%d", done, b.o.Consumers)
	})
	b.res.Nonces = int(nonces.Load())
	if err != nil {
		return err
	}
	b.res.NoncesSeconds = since(t)
	for _, c := range b.cs {
		if err := c.sign(); err != nil {
			return err
		}
	}
	return nil
}

// sign builds the consumer's Tenant as `liqoctl generate tenant` does, its key signing the nonce
// as Liqo's nonce signer on the consumer would, for the consumer's tenant namespace.
func (c *consumer) sign() error {
	signature, err := crypto.SignNonce(c.key, c.nonce)
	if err != nil {
		return err
	}
	if c.tenant, err = liqo.Tenant(c.key, c.id, signature); err != nil {
		return err
	}
	c.tenant.Namespace = authv1beta1.TenantNamespaceName(authv1beta1.ClusterID(c.id))
	return nil
}

// measure applies every Tenant at once and waits until each carries its certificate, reading the
// harness's CPU time before and after.
func (b *bench) measure(ctx context.Context) error {
	cpu, err := process.CPUSeconds(b.h.PID())
	if err != nil {
		return err
	}
	// The mean load average is the measured phase's.
	b.load, b.loads = 0, 0
	t := time.Now()
	b.issued.since(t)
	var applied atomic.Int64
	err = b.phase(ctx, "issuing", func(ctx context.Context) error {
		err := b.each(ctx, func(ctx context.Context, c *consumer) error {
			if err := b.k8s.Create(ctx, c.tenant); err != nil {
				return fmt.Errorf("applying Tenant %s: %w", c.id, err)
			}
			applied.Add(1)
			return nil
		})
		b.res.ApplySeconds = since(t)
		return err
	}, b.issued.count, func(done int) string {
		return fmt.Sprintf("applied %d/%d  certificates %d/%d", applied.Load(), b.o.Consumers, done, b.o.Consumers)
	})
	b.res.FirstIssuedSeconds, b.res.IssuedSeconds = b.issued.span()
	if end, cerr := process.CPUSeconds(b.h.PID()); cerr == nil {
		b.res.HarnessCPUSeconds = end - cpu
	}
	if err != nil {
		return err
	}
	b.res.FloorRatio = b.res.IssuedSeconds / b.res.SignerFloorSeconds
	return nil
}

// each runs f for every consumer, o.Workers at a time, and returns the first error.
func (b *bench) each(ctx context.Context, f func(context.Context, *consumer) error) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(b.o.Workers)
	for _, c := range b.cs {
		g.Go(func() error { return f(ctx, c) })
	}
	return g.Wait()
}

// phase runs work until it returns and done() reaches N, ctx ends or the harness exits, printing
// progress (line(done)) every ProgressEvery and sampling the load average. Work has ended when it
// returns.
func (b *bench) phase(ctx context.Context, name string, work func(context.Context) error, done func() int, line func(int) string) error {
	ctx, cancel := context.WithCancel(ctx)
	errs := make(chan error, 1)
	go func() { errs <- work(ctx) }()
	defer func() {
		cancel()
		if errs != nil {
			<-errs
		}
	}()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	worked := false
	for {
		select {
		case err := <-errs:
			if errs = nil; err != nil {
				return err
			}
			worked = true
		case <-tick.C:
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", name, ctx.Err())
		}
		if exited, err := b.h.Exited(); exited {
			return err
		}
		n := done()
		if l, err := process.LoadAverage(); err == nil {
			b.load, b.loads = b.load+l, b.loads+1
		}
		if finished := worked && n >= b.o.Consumers; finished || time.Since(b.lastLine) >= b.o.ProgressEvery {
			b.lastLine = time.Now()
			fmt.Fprintf(b.o.Progress, "[%7.1fs] %-8s %s\n", since(b.began), name, line(n))
			if finished {
				return nil
			}
		}
	}
}

// finish verifies the certificates and fills in the figures read at the end, and the outcome.
func (b *bench) finish(err error) {
	r := b.res
	r.Issued = b.issued.count()
	now := time.Now()
	for _, c := range b.cs {
		cert := b.issued.cert(c.id)
		if cert == nil {
			continue
		}
		if _, verr := crypto.VerifyClientCertificate(cert, b.cp.CAPEM, c.key.Public(), now); verr != nil {
			if r.FirstInvalid == "" {
				r.FirstInvalid = c.id + ": " + verr.Error()
			}
			continue
		}
		r.ValidCertificates++
	}
	if _, peak, merr := process.Memory(b.h.PID()); merr == nil {
		r.HarnessPeakRSSMiB = float64(peak) / (1 << 20)
	}
	if b.loads > 0 {
		r.LoadAverage = b.load / float64(b.loads)
	}
	switch {
	case err != nil:
		r.Outcome = err.Error()
	case r.ValidCertificates < r.Consumers:
		r.Outcome = fmt.Sprintf("%d of %d certificates invalid", r.Consumers-r.ValidCertificates, r.Consumers)
	default:
		r.Completed, r.Outcome = true, "every Tenant has a valid certificate"
	}
}

// issuance records when each Tenant's status.authParams first carried a certificate, as Liqo's
// tenant controller writes it once the CSR is signed, from a watch of the Tenants.
type issuance struct {
	mu    sync.Mutex
	start time.Time
	seen  map[string]issued
}

// issued is a Tenant's certificate and when it was first seen.
type issued struct {
	at   time.Time
	cert []byte
}

// watch starts an informer on the Tenants that records each issuance, and waits for its sync.
func (s *issuance) watch(ctx context.Context, cfg *rest.Config, scheme *k8sruntime.Scheme) error {
	c, err := cache.New(cfg, cache.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	inf, err := c.GetInformer(ctx, &authv1beta1.Tenant{})
	if err != nil {
		return err
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    s.observe,
		UpdateFunc: func(_, obj any) { s.observe(obj) },
	}); err != nil {
		return err
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return errors.New("the watch of the Tenants did not sync")
	}
	return nil
}

// since sets the start of the measured phase, from which span counts.
func (s *issuance) since(t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.start = t
}

// observe records a Tenant whose status carries a certificate, the first time it is seen so.
func (s *issuance) observe(obj any) {
	t, ok := obj.(*authv1beta1.Tenant)
	if !ok || t.Status.AuthParams == nil || len(t.Status.AuthParams.SignedCRT) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, seen := s.seen[t.Name]; !seen {
		s.seen[t.Name] = issued{at: time.Now(), cert: t.Status.AuthParams.SignedCRT}
	}
}

// count is how many Tenants carry a certificate.
func (s *issuance) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.seen)
}

// cert is the certificate issued for the Tenant name; nil when none was.
func (s *issuance) cert(name string) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen[name].cert
}

// span returns, in seconds from the start of the measured phase, when the first and the last
// certificate were seen.
func (s *issuance) span() (first, last float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, i := range s.seen {
		d := i.at.Sub(s.start).Seconds()
		if first == 0 || d < first {
			first = d
		}
		last = max(last, d)
	}
	return first, last
}

func since(t time.Time) float64 { return time.Since(t).Seconds() }
