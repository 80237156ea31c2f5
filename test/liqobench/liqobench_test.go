package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestSmoke runs the benchmark with five Tenants, as `make test` does to keep it working
// (seconds); `make bench-liqo` runs it at scale.
func TestSmoke(t *testing.T) {
	var progress bytes.Buffer
	// The signer at its default limits: the path of -kcm-default-limits.
	o, _, err := parseFlags([]string{"-n", "5", "-workers", "2", "-kcm-default-limits", "-timeout", "3m"})
	if err != nil {
		t.Fatal(err)
	}
	o.Progress = &progress
	res, harnessLog, err := run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("progress:\n%s", progress.String())
	if !res.Completed || res.Issued != 5 || res.ValidCertificates != 5 || res.Nonces != 5 {
		t.Fatalf("not every Tenant got a valid certificate: %+v\nharness log:\n%s", res, tail(harnessLog, 40))
	}
	if res.LiqoVersion == "" || res.HarnessPeakRSSMiB <= 0 || res.HarnessCPUSeconds < 0 {
		t.Errorf("missing figures: Liqo %q, peak RSS %.1f MiB, CPU %.2f s", res.LiqoVersion, res.HarnessPeakRSSMiB, res.HarnessCPUSeconds)
	}
	if res.IssuedSeconds <= 0 || res.FirstIssuedSeconds > res.IssuedSeconds || res.FloorRatio <= 0 {
		t.Errorf("phase not measured: first %.1f s, last %.1f s, ratio %.2f", res.FirstIssuedSeconds, res.IssuedSeconds, res.FloorRatio)
	}
	if res.SignerQPS != 20 || res.SignerFloorSeconds != 0.25 {
		t.Errorf("signer %d QPS, floor %.2f s; want 20 QPS, 0.25 s", res.SignerQPS, res.SignerFloorSeconds)
	}
	if !strings.Contains(progress.String(), "certificates 5/5") {
		t.Errorf("no final progress line:\n%s", progress.String())
	}
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
