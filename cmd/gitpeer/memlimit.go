package main

import (
	"errors"
	"fmt"
	"math"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"k8s.io/apimachinery/pkg/api/resource"
)

// memoryLimitShare is the part of the container's memory limit the agent's Go
// runtime aims to stay under by default: the rest is left to what the soft
// limit does not count (the binary's mapped code, memory not yet returned).
const memoryLimitShare = 0.9

// memoryLimit is the Go soft memory limit (runtime/debug.SetMemoryLimit) the
// agent sets, from --memory-limit (flag): a quantity ("400Mi"), "0" for none,
// or "auto": memoryLimitShare of the memory limit cgroup reports (the agent
// passes memlimit.FromCgroup, which reads cgroup v2 or v1 through
// /proc/self), none if it reports none or if the environment sets GOMEMLIMIT
// (Go applies that itself). It returns 0 when the agent sets none, and where
// the limit comes from for the log.
func memoryLimit(flag string, cgroup memlimit.Provider, env func(string) string) (int64, string, error) {
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
	limit, err := memlimit.ApplyRatio(cgroup, memoryLimitShare)()
	switch {
	case errors.Is(err, memlimit.ErrNoLimit), errors.Is(err, memlimit.ErrNoCgroup), errors.Is(err, memlimit.ErrCgroupsNotSupported):
		return 0, "cgroup", nil
	case err != nil:
		return 0, "", fmt.Errorf(`reading the container's memory limit (set --memory-limit to a quantity or "0" to skip this): %w`, err)
	case limit >= math.MaxInt64:
		return 0, "cgroup", nil
	}
	return int64(limit), "cgroup", nil
}
