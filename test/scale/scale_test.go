package main

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/test/sandbox"
)

// TestSmoke runs the benchmark with five consumers, as `make test` does to keep it working
// (seconds); `make bench-scale` runs it at scale.
func TestSmoke(t *testing.T) {
	var progress bytes.Buffer
	// Two requests answered at once: the consumers sign in three waves. The signer at its
	// default limits: the path of -kcm-default-limits.
	o, _, _, err := parseFlags([]string{"-n", "5", "-max-pending", "2", "-kcm-default-limits", "-review-every", "500ms", "-timeout", "3m", "-quiet-settle", "5s", "-quiet", "5s",
		"-idle", "3s", "-idle-interval", "2s", "-agent-flags", "--full-resync-period=2s"})
	if err != nil {
		t.Fatal(err)
	}
	o.Progress, o.AgentLog = &progress, io.Discard
	res, err := run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("progress:\n%s", progress.String())
	if !res.Completed || res.ValidIdentities != 5 || res.InvalidIdentities != 0 {
		t.Fatalf("not every consumer got a valid identity: %+v", res)
	}
	// Each consumer gets a nonce and an identity: at least one commit, and no more than two
	// per consumer.
	if res.AgentCommits < 1 || res.AgentCommits > 10 {
		t.Errorf("agent commits = %d, want 1 … 10", res.AgentCommits)
	}
	if res.AgentPeakRSSMiB <= 0 || res.ObjectBytes <= 0 || res.ReviewerMerges < 1 {
		t.Errorf("missing figures: RSS %.1f MiB, object %d bytes, reviewer merges %d", res.AgentPeakRSSMiB, res.ObjectBytes, res.ReviewerMerges)
	}
	if res.QuietRounds < 1 || res.QuietRoundSeconds <= 0 || res.QuietVisitedPerRound < 0 {
		t.Errorf("quiet rounds not measured: %d rounds, %.3f s each, %.1f visited", res.QuietRounds, res.QuietRoundSeconds, res.QuietVisitedPerRound)
	}
	// The kernel accounts CPU time in clock ticks (10 ms) by sampling, so a few seconds of five
	// idle peerings may honestly read zero: the smoke test asks only that the window was measured.
	if res.IdleWindowSeconds < 3 || res.IdleCPUSeconds < 0 || res.IdleCPUSecondsPerHour < 0 {
		t.Errorf("idle CPU not measured: %.2f s in %.1f s, %.1f s per hour", res.IdleCPUSeconds, res.IdleWindowSeconds, res.IdleCPUSecondsPerHour)
	}
	if res.RequestsToIdentitiesSeconds <= 0 || res.RequestsToIdentitiesSeconds > (3*time.Minute).Seconds() {
		t.Errorf("requests merged → every identity = %.1f s", res.RequestsToIdentitiesSeconds)
	}
	if len(res.Waves) != 3 || res.Waves[0].Consumers != 2 || res.Waves[2].Consumers != 1 || res.SignerQPS != 20 || res.SignerFloorSeconds != 0.25 {
		t.Errorf("waves %+v, signer %d QPS, floor %.2f s; want waves of 2, 2 and 1 consumers, 20 QPS, 0.25 s", res.Waves, res.SignerQPS, res.SignerFloorSeconds)
	}
}

// BenchmarkConsumers10000 measures what the benchmark itself does for 10,000 consumers, so that
// it never slows a large run: keys, requests and signed Tenants generated, and each set merged
// in five pull requests into a local bare repository.
//
//	go test ./test/scale -run '^$' -bench Consumers -benchtime 1x
func BenchmarkConsumers10000(b *testing.B) {
	const n, commits = 10000, 5
	for b.Loop() {
		dir := b.TempDir()
		origin := dir + "/origin.git"
		if _, err := sandbox.Git(dir, "init", "-q", "--bare", origin); err != nil {
			b.Fatal(err)
		}
		if err := initialCommit(dir+"/init", origin); err != nil {
			b.Fatal(err)
		}
		r, err := newReviewer(dir+"/reviewer", origin, &mergeStats{})
		if err != nil {
			b.Fatal(err)
		}
		cs, err := newConsumers(n)
		if err != nil {
			b.Fatal(err)
		}
		if err := mergeInBatches(r, "Requests", cs, commits, func(batch []*consumer) (map[string][]byte, error) {
			return requestFiles(providerID, batch)
		}); err != nil {
			b.Fatal(err)
		}
		for _, c := range cs {
			c.nonce = crypto.GenerateNonce()
		}
		if err := mergeInBatches(r, "Tenants", cs, commits, func(batch []*consumer) (map[string][]byte, error) {
			return tenantFiles(providerID, batch)
		}); err != nil {
			b.Fatal(err)
		}
	}
}
