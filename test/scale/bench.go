package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/storage/filesystem/dotgit"

	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/test/controlplane"
	"github.com/gitpeer/gitpeer/test/process"
)

// options configure one run of the benchmark.
type options struct {
	// Consumers is N, the number of simulated consumers.
	Consumers int
	// Agent is the gitpeer binary; built from this module when empty.
	Agent string
	// AgentFlags are agent flags beyond the benchmark's own (kubeconfig, addresses), e.g.
	// --concurrent=8; none runs the agent with its defaults, as a new user would.
	AgentFlags []string
	// MaxPending is the PeeringRepository's spec.provider.maxPendingRequests; 0 leaves it unset
	// (the API's default). When below Consumers, the consumers sign their Tenants in waves, as
	// their nonces arrive (waves).
	MaxPending int
	// ControllerManagerDefaultLimits runs the control plane's kube-controller-manager, the CSR
	// signer, with its default client limits (20 QPS, burst 30) instead of 500 QPS.
	ControllerManagerDefaultLimits bool
	// Interval is the PeeringRepository's poll interval (spec.interval).
	Interval time.Duration
	// Commits is how many merged pull requests carry the requests, and again the Tenants.
	Commits int
	// ReviewEvery is how often the concurrent reviewer merges a pull request.
	ReviewEvery time.Duration
	// QuietSettle and QuietWindow: once every identity is valid and the reviewer stopped, the
	// rounds of QuietWindow after QuietSettle are measured (quiet); zero QuietWindow skips it.
	QuietSettle, QuietWindow time.Duration
	// IdleWindow: then the agent's CPU time over this long is measured (idle); zero skips it.
	// IdleInterval, when not zero, is the spec.interval set first.
	IdleWindow, IdleInterval time.Duration
	// Timeout bounds the run; the figures reached so far are still reported.
	Timeout time.Duration
	// Progress receives a progress line every ProgressEvery.
	Progress      io.Writer
	ProgressEvery time.Duration
	// AgentLog receives the agent's output.
	AgentLog io.Writer
}

// wave is how many requests the agent answers at once: maxPendingRequests, or its default.
func (o options) wave() int {
	if o.MaxPending > 0 {
		return o.MaxPending
	}
	return gitpeerv1alpha1.DefaultMaxPendingRequests
}

// signerQPS is the CSR signer's client limit: each certificate is one request.
func (o options) signerQPS() int {
	return controlplane.Options{ControllerManagerDefaultLimits: o.ControllerManagerDefaultLimits}.SignerQPS()
}

// result holds the figures of one run; its JSON is what the tables of docs/benchmarks.md are made from.
type result struct {
	Commit     string   `json:"commit"`
	Consumers  int      `json:"consumers"`
	Completed  bool     `json:"completed"`
	Outcome    string   `json:"outcome"`
	CPUs       int      `json:"cpus"`
	AgentFlags []string `json:"agentFlags"`
	Interval   string   `json:"interval"`
	Commits    int      `json:"pullRequestsPerPhase"`
	// Phases, in seconds.
	KeygenSeconds   float64 `json:"keygenSeconds"`
	RequestsSeconds float64 `json:"requestsMergeSeconds"`
	// NoncesSeconds: requests merged → every nonce.yaml on main.
	NoncesSeconds  float64 `json:"noncesSeconds"`
	TenantsSeconds float64 `json:"tenantsSignAndMergeSeconds"`
	// IdentitiesSeconds: Tenants merged → every consumer has a valid identity.yaml (without
	// waves).
	IdentitiesSeconds float64 `json:"identitiesSeconds"`
	// RequestsToIdentitiesSeconds: requests merged → every consumer has a valid identity.yaml
	// (in waves too).
	RequestsToIdentitiesSeconds float64 `json:"requestsToIdentitiesSeconds"`
	TotalSeconds                float64 `json:"totalSeconds"`
	// MaxPendingRequests is the provider's maxPendingRequests in force; Waves the waves in which
	// the consumers got their identities when it is below N.
	MaxPendingRequests int          `json:"maxPendingRequests"`
	Waves              []waveResult `json:"waves,omitempty"`
	// SignerQPS is the CSR signer's client limit (kube-controller-manager's --kube-api-qps);
	// SignerFloorSeconds what signing N certificates takes at that rate, and FloorRatio
	// IdentitiesSeconds over it (without waves).
	SignerQPS          int     `json:"signerQPS"`
	SignerFloorSeconds float64 `json:"signerFloorSeconds"`
	FloorRatio         float64 `json:"floorRatio,omitempty"`

	Nonces            int    `json:"nonces"`
	ValidIdentities   int    `json:"validIdentities"`
	InvalidIdentities int    `json:"invalidIdentities"`
	FirstInvalid      string `json:"firstInvalid,omitempty"`
	AgentCommits      int    `json:"agentCommits"`
	// AgentCommitsNonces is how many of them were pushed by the end of the nonce phase.
	AgentCommitsNonces int     `json:"agentCommitsNoncePhase"`
	AgentPeakRSSMiB    float64 `json:"agentPeakRSSMiB"`
	ObjectBytes        int     `json:"peeringRepositoryBytes"`
	ObjectBytesMax     int     `json:"peeringRepositoryBytesMax"`
	// Reviewer*: the concurrent reviewer's merges and its pushes refused because main moved.
	ReviewerMerges     int `json:"reviewerMerges"`
	ReviewerRetries    int `json:"reviewerRetries"`
	ReviewerMaxRetries int `json:"reviewerMaxRetriesPerMerge"`
	// ConsumerRetries: refused pushes of the request and Tenant merges.
	ConsumerRetries    int    `json:"consumerMergeRetries"`
	ConsumerMaxRetries int    `json:"consumerMaxRetriesPerMerge"`
	AgentReady         string `json:"agentReady"`
	// Quiet*: the agent's rounds once nothing changes any more (quiet): how many ran in the
	// window, their mean duration, and the mean number of peerings each visited (-1: the
	// agent does not say).
	QuietWindowSeconds   float64 `json:"quietWindowSeconds,omitempty"`
	QuietRounds          int     `json:"quietRounds,omitempty"`
	QuietRoundSeconds    float64 `json:"quietRoundSeconds,omitempty"`
	QuietVisitedPerRound float64 `json:"quietVisitedPerRound,omitempty"`
	// Idle*: the agent's CPU time (user and system) over the idle window, and scaled to an hour (idle).
	IdleWindowSeconds     float64 `json:"idleWindowSeconds,omitempty"`
	IdleCPUSeconds        float64 `json:"idleCPUSeconds,omitempty"`
	IdleCPUSecondsPerHour float64 `json:"idleCPUSecondsPerHour,omitempty"`
	// LoadAverage is the machine's mean 1-minute load average during the run: on a shared
	// machine the times depend on it.
	LoadAverage float64 `json:"loadAverage"`
}

// bench is one run in progress.
type bench struct {
	o     options
	e     *env
	obs   *observer
	res   *result
	began time.Time
	// consumers merges the requests and Tenants; reviewer is the concurrent reviewer.
	consumers, reviewer *mergeStats
	lastLine            time.Time
	// load sums the 1-minute load average samples; loads counts them.
	load  float64
	loads int
}

// run runs the benchmark: N consumers request, get nonces, sign them and have their Tenants
// merged, and the agent issues every identity. It returns the figures reached even when the
// run did not complete, with the reason in Outcome.
func run(ctx context.Context, o options) (*result, error) {
	// The Git server (gitkit) logs every SSH connection with the standard logger.
	log.SetOutput(io.Discard)
	res := &result{Consumers: o.Consumers, CPUs: runtime.NumCPU(), AgentFlags: o.AgentFlags, Interval: o.Interval.String(), Commits: o.Commits,
		MaxPendingRequests: o.wave(), SignerQPS: o.signerQPS(), SignerFloorSeconds: float64(o.Consumers) / float64(o.signerQPS())}
	work, err := os.MkdirTemp("", "gitpeer-scale-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	binary := o.Agent
	if binary == "" {
		if binary, err = buildAgent(work); err != nil {
			return nil, err
		}
	}
	began := time.Now()
	cs, err := newConsumers(o.Consumers)
	if err != nil {
		return nil, err
	}
	res.KeygenSeconds = since(began)
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	e, err := startEnv(ctx, work, binary, o, o.AgentLog)
	if err != nil {
		return nil, err
	}
	defer e.stop()
	b := &bench{o: o, e: e, res: res, began: time.Now(), consumers: &mergeStats{}, reviewer: &mergeStats{},
		obs: &observer{dir: e.repo.Dir, provider: providerID, ca: e.cp.CAPEM, consumers: map[string]*consumer{}}}
	for _, c := range cs {
		b.obs.consumers[c.id] = c
	}
	err = b.handshake(ctx, work, cs)
	b.finish(err)
	return res, nil
}

// handshake runs the phases and the concurrent reviewer.
func (b *bench) handshake(ctx context.Context, work string, cs []*consumer) error {
	rv, err := newReviewer(filepath.Join(work, "reviewer"), b.e.repo.Dir, b.reviewer)
	if err != nil {
		return err
	}
	reviewCtx, stopReview := context.WithCancel(ctx)
	reviewDone := make(chan error, 1)
	go func() { reviewDone <- review(reviewCtx, rv, b.o.ReviewEvery) }()
	err = b.phases(ctx, work, cs)
	stopReview()
	if err = errors.Join(err, <-reviewDone); err != nil {
		return err
	}
	if b.o.QuietWindow > 0 {
		if err := b.quiet(ctx); err != nil {
			return err
		}
	}
	if b.o.IdleWindow <= 0 {
		return nil
	}
	return b.idle(ctx)
}

// phases merges the requests, waits for every nonce, merges the signed Tenants and waits for
// every identity; in waves when the agent answers fewer than N requests at once.
func (b *bench) phases(ctx context.Context, work string, cs []*consumer) (err error) {
	pr, err := newReviewer(filepath.Join(work, "consumers"), b.e.repo.Dir, b.consumers)
	if err != nil {
		return err
	}
	t := time.Now()
	if err := mergeInBatches(pr, "Peering requests", cs, b.o.Commits, func(batch []*consumer) (map[string][]byte, error) {
		return requestFiles(providerID, batch)
	}); err != nil {
		return err
	}
	b.res.RequestsSeconds = since(t)
	defer func(merged time.Time) {
		if err == nil {
			b.res.RequestsToIdentitiesSeconds = since(merged)
		}
	}(time.Now())
	if b.o.wave() < len(cs) {
		return b.waves(ctx, pr, cs)
	}
	t = time.Now()
	if err := b.waitFor(ctx, "nonces", func(p progress) bool { return p.nonces == len(cs) }); err != nil {
		return err
	}
	b.res.NoncesSeconds = since(t)
	if b.res.AgentCommitsNonces, err = b.e.agentCommits(); err != nil {
		return err
	}
	t = time.Now()
	if err := mergeInBatches(pr, "Tenants", cs, b.o.Commits, func(batch []*consumer) (map[string][]byte, error) {
		return tenantFiles(providerID, batch)
	}); err != nil {
		return err
	}
	b.res.TenantsSeconds = since(t)
	t = time.Now()
	if err := b.waitFor(ctx, "identities", func(p progress) bool { return p.valid+p.invalid == len(cs) }); err != nil {
		return err
	}
	b.res.IdentitiesSeconds = since(t)
	b.res.FloorRatio = b.res.IdentitiesSeconds / b.res.SignerFloorSeconds
	return nil
}

// mergeInBatches splits cs into (at most) commits batches and merges one pull request with the
// files render returns for each.
func mergeInBatches(r *reviewer, title string, cs []*consumer, commits int, render func([]*consumer) (map[string][]byte, error)) error {
	size := (len(cs) + commits - 1) / max(commits, 1)
	for i := 0; i < len(cs); i += size {
		batch := cs[i:min(i+size, len(cs))]
		files, err := render(batch)
		if err != nil {
			return err
		}
		if err := r.proposeAndMerge(fmt.Sprintf("%s of %s … %s", title, batch[0].id, batch[len(batch)-1].id), files); err != nil {
			return err
		}
	}
	return nil
}

// review merges a pull request with a note outside the agent's directory every interval until
// ctx is done, as a person reviewing other work in the repository would.
func review(ctx context.Context, r *reviewer, every time.Duration) error {
	for i := 1; ; i++ {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(every):
		}
		note := fmt.Sprintf("reviews/note-%d.md", i)
		if err := r.proposeAndMerge("Review note "+fmt.Sprint(i), map[string][]byte{note: []byte("Reviewed.\n")}); err != nil {
			return fmt.Errorf("concurrent reviewer: %w", err)
		}
	}
}

// waitFor observes the repository until done holds, ctx ends or the agent exits, printing
// progress.
func (b *bench) waitFor(ctx context.Context, phase string, done func(progress) bool) error {
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		p, err := b.obs.observe(time.Now())
		switch {
		case errors.Is(err, dotgit.ErrPackfileNotFound):
			// The Git server repacked while the observer read its repository
			// (git gc --auto after a push): observe again at the next tick.
		case err != nil:
			return err
		default:
			b.sample(ctx, p, phase, false)
		}
		if err == nil && done(p) {
			b.sample(ctx, p, phase, true)
			return nil
		}
		if exited, err := b.e.agent.Exited(); exited {
			return fmt.Errorf("the agent exited: %v", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", phase, ctx.Err())
		case <-tick.C:
		}
	}
}

// sample records the object size and prints a progress line when one is due (or force).
func (b *bench) sample(ctx context.Context, p progress, phase string, force bool) {
	if size, err := b.e.objectSize(ctx); err == nil {
		b.res.ObjectBytes, b.res.ObjectBytesMax = size, max(b.res.ObjectBytesMax, size)
	}
	if l, err := process.LoadAverage(); err == nil {
		b.load, b.loads = b.load+l, b.loads+1
	}
	if !force && time.Since(b.lastLine) < b.o.ProgressEvery {
		return
	}
	b.lastLine = time.Now()
	rss, _, _ := b.e.memory()
	commits, _ := b.e.agentCommits()
	merges, retries, _ := b.reviewer.get()
	fmt.Fprintf(b.o.Progress, "[%7.1fs] %-10s nonces %d/%d  identities %d/%d (invalid %d)  agent commits %d  agent RSS %.0f MiB  object %.1f KiB  reviewer merges %d (retries %d)\n",
		since(b.began), phase, p.nonces, b.o.Consumers, p.valid, b.o.Consumers, p.invalid, commits, mib(rss), float64(b.res.ObjectBytes)/1024, merges, retries)
}

// finish fills in the figures that are read at the end, and the outcome.
func (b *bench) finish(err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r := b.res
	r.TotalSeconds = since(b.began)
	if p, oerr := b.obs.observe(time.Now()); oerr == nil {
		r.Nonces, r.ValidIdentities, r.InvalidIdentities = p.nonces, p.valid, p.invalid
	}
	for _, c := range b.obs.consumers {
		if c.err != nil && c.validAt.IsZero() {
			r.FirstInvalid = c.id + ": " + c.err.Error()
			break
		}
	}
	r.AgentCommits, _ = b.e.agentCommits()
	if _, peak, merr := b.e.memory(); merr == nil {
		r.AgentPeakRSSMiB = mib(peak)
	}
	r.ReviewerMerges, r.ReviewerRetries, r.ReviewerMaxRetries = b.reviewer.get()
	_, r.ConsumerRetries, r.ConsumerMaxRetries = b.consumers.get()
	r.AgentReady = b.e.readyMessage(ctx)
	if b.loads > 0 {
		r.LoadAverage = b.load / float64(b.loads)
	}
	switch {
	case err != nil:
		r.Outcome = err.Error()
	case r.InvalidIdentities > 0:
		r.Outcome = fmt.Sprintf("%d invalid identities", r.InvalidIdentities)
	default:
		r.Completed, r.Outcome = true, "every consumer has a valid identity"
	}
	r.Outcome = strings.TrimSpace(r.Outcome)
}

func since(t time.Time) float64 { return time.Since(t).Seconds() }

func mib(bytes int64) float64 { return float64(bytes) / (1 << 20) }
