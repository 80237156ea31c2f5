package main

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

// TestMemoryLimit checks where the agent's soft memory limit comes from: the
// flag, else the limit cgroup reports less the binary's size or 10% of it if
// more, at least half of it; none when cgroup reports none (or there is no
// cgroup) or GOMEMLIMIT is set, and a clear error for bad input. Reading
// cgroup v2 and v1 is automemlimit's, tested there.
func TestMemoryLimit(t *testing.T) {
	noEnv := func(string) string { return "" }
	fails := func(err error) memlimit.Provider {
		return func() (uint64, error) { return 0, err }
	}
	limited := memlimit.Limit(512 << 20)
	const binary = 60 << 20
	for _, c := range []struct {
		name, flag string
		cgroup     memlimit.Provider
		env        func(string) string
		want       int64
	}{
		{"flag", "400Mi", limited, noEnv, 400 << 20},
		{"flag zero sets none", "0", limited, noEnv, 0},
		{"flag wins over a broken cgroup", "400Mi", fails(errors.New("garbage")), noEnv, 400 << 20},
		{"cgroup, less the binary", "auto", limited, noEnv, 452 << 20},
		{"cgroup, less 10% (more than the binary)", "auto", memlimit.Limit(1 << 30), noEnv, 966367641},
		{"small cgroup, less the binary", "auto", memlimit.Limit(160 << 20), noEnv, 100 << 20},
		{"cgroup under twice the binary: half of it", "auto", memlimit.Limit(96 << 20), noEnv, 48 << 20},
		{"cgroup without limit", "auto", fails(memlimit.ErrNoLimit), noEnv, 0},
		{"no cgroup", "auto", fails(memlimit.ErrNoCgroup), noEnv, 0},
		{"cgroups not supported", "auto", fails(fmt.Errorf("wrapped: %w", memlimit.ErrCgroupsNotSupported)), noEnv, 0},
		{"GOMEMLIMIT set", "auto", limited, func(k string) string { return map[string]string{"GOMEMLIMIT": "300MiB"}[k] }, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, _, err := memoryLimit(c.flag, c.cgroup, c.env, binary)
			if err != nil || got != c.want {
				t.Errorf("memoryLimit(%q) = %d, %v; want %d", c.flag, got, err, c.want)
			}
		})
	}
	for _, c := range []struct {
		name, flag string
		cgroup     memlimit.Provider
	}{
		{"bad flag", "lots", limited},
		{"negative flag", "-1Mi", limited},
		{"bad cgroup file", "auto", fails(errors.New(`failed to parse memory.max value: "garbage"`))},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, _, err := memoryLimit(c.flag, c.cgroup, noEnv, 0); err == nil || !strings.Contains(err.Error(), "memory") {
				t.Errorf("memoryLimit(%q) = %v; want an error about the memory limit", c.flag, err)
			}
		})
	}
}

// TestMemoryLimitHere reads this machine's real cgroup as the agent does: it
// must either find a limit or find none, never fail.
func TestMemoryLimitHere(t *testing.T) {
	limit, from, err := memoryLimit("auto", memlimit.FromCgroup, func(string) string { return "" }, executableSize())
	if err != nil {
		t.Fatalf("memoryLimit(auto) on this machine: %v", err)
	}
	t.Logf("auto memory limit here: %d MiB (from %s)", limit>>20, from)
}

// TestProfiling: the heap profile is sampled only when --pprof-addr serves it.
func TestProfiling(t *testing.T) {
	for addr, want := range map[string]bool{"0": false, "": false, "127.0.0.1:6060": true, ":6060": true} {
		if got := profiling(addr); got != want {
			t.Errorf("profiling(%q) = %v, want %v", addr, got, want)
		}
	}
}
