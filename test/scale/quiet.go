package main

import (
	"context"
	"fmt"
	"net/http"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// rounds is what the agent's metrics say of its rounds so far.
type rounds struct {
	count, seconds float64 // gitpeer_reconcile_duration_seconds
	// visited sums gitpeer_round_peerings{state="visited"}; known is false for an agent without it.
	visited float64
	known   bool
}

// quiet measures the agent's rounds once every consumer has its identity and nothing changes
// any more: it waits QuietSettle, then reports the rounds of the next QuietWindow, their mean
// duration and the mean number of peerings each visited.
func (b *bench) quiet(ctx context.Context) error {
	if err := sleep(ctx, b.o.QuietSettle); err != nil {
		return err
	}
	start, err := b.e.rounds(ctx)
	if err != nil {
		return err
	}
	if err := sleep(ctx, b.o.QuietWindow); err != nil {
		return err
	}
	end, err := b.e.rounds(ctx)
	if err != nil {
		return err
	}
	r, n := b.res, end.count-start.count
	r.QuietWindowSeconds, r.QuietRounds, r.QuietVisitedPerRound = b.o.QuietWindow.Seconds(), int(n), -1
	if n > 0 {
		r.QuietRoundSeconds = (end.seconds - start.seconds) / n
		if end.known {
			r.QuietVisitedPerRound = (end.visited - start.visited) / n
		}
	}
	return nil
}

// rounds reads the agent's metrics endpoint.
func (e *env) rounds(ctx context.Context) (rounds, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+e.metricsAddr+"/metrics", nil)
	if err != nil {
		return rounds{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return rounds{}, err
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return rounds{}, fmt.Errorf("the agent's metrics: %w", err)
	}
	var out rounds
	for _, m := range families["gitpeer_reconcile_duration_seconds"].GetMetric() {
		out.count += float64(m.GetHistogram().GetSampleCount())
		out.seconds += m.GetHistogram().GetSampleSum()
	}
	for _, m := range families["gitpeer_round_peerings"].GetMetric() {
		if label(m, "state") == "visited" {
			out.visited += m.GetHistogram().GetSampleSum()
			out.known = true
		}
	}
	return out, nil
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// sleep waits for d, or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
