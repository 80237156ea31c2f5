package main

import (
	"errors"
	"fmt"
	"math"
	"os"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"k8s.io/apimachinery/pkg/api/resource"
)

// memoryLimitShare is the most of the container's memory limit the agent's
// Go runtime aims to stay under by default: the rest is left to what the soft
// limit does not count (the binary's pages mapped from its file, memory not
// yet returned to the system).
const memoryLimitShare = 0.9

// memoryLimitFloor is the least of the container's memory limit "auto" gives
// the Go runtime, however large the binary.
const memoryLimitFloor = 0.5

// memoryLimit is the Go soft memory limit (runtime/debug.SetMemoryLimit) the
// agent sets, from --memory-limit (flag): a quantity ("400Mi"), "0" for none,
// or "auto": the memory limit cgroup reports (the agent passes
// memlimit.FromCgroup, which reads cgroup v2 or v1 through /proc/self) less
// room for the binary's pages, which the container's memory counts and the
// soft limit does not: binarySize (the executable's size, the most of it
// that can be mapped), or 10% of the limit if that is more, never less than
// memoryLimitFloor of it. None if cgroup reports no limit or the environment
// sets GOMEMLIMIT (Go applies that itself). It returns 0 when the agent sets
// none, and where the limit comes from for the log.
//
// Why the binary counts: at scale most of it is resident, so a heap allowed
// 90% of the container would make the kernel evict the agent's code.
func memoryLimit(flag string, cgroup memlimit.Provider, env func(string) string, binarySize int64) (int64, string, error) {
	if flag != "auto" {
		q, err := resource.ParseQuantity(flag)
		if err != nil || q.Sign() < 0 {
			return 0, "", fmt.Errorf(`--memory-limit: %q is neither a quantity (e.g. 400Mi), "0" nor "auto"`, flag)
		}
		return q.Value(), "--memory-limit", nil
	}
	if env("GOMEMLIMIT") != "" {
		return 0, "GOMEMLIMIT", nil
	}
	limit, err := cgroup()
	switch {
	case errors.Is(err, memlimit.ErrNoLimit), errors.Is(err, memlimit.ErrNoCgroup), errors.Is(err, memlimit.ErrCgroupsNotSupported):
		return 0, "cgroup", nil
	case err != nil:
		return 0, "", fmt.Errorf(`reading the container's memory limit (set --memory-limit to a quantity or "0" to skip this): %w`, err)
	case limit >= math.MaxInt64:
		return 0, "cgroup", nil
	}
	l := float64(limit)
	soft := max(min(l*memoryLimitShare, l-float64(binarySize)), l*memoryLimitFloor)
	return int64(soft), "cgroup", nil
}

// executableSize is the size of the running binary's file, 0 if unknown.
func executableSize() int64 {
	exe, err := os.Executable()
	if err != nil {
		return 0
	}
	fi, err := os.Stat(exe)
	if err != nil {
		return 0
	}
	return fi.Size()
}
