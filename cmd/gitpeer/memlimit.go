package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// memoryLimitShare is the part of the container's memory limit the agent's Go
// runtime aims to stay under by default: the rest is left to what the soft
// limit does not count (the binary's mapped code, memory not yet returned).
const memoryLimitShare = 0.9

// unlimitedCgroup is the smallest cgroup v1 memory.limit_in_bytes read as "no
// limit" (v1 reports a page-aligned near-MaxInt64 value when none is set).
const unlimitedCgroup = int64(1) << 62

// cgroupMemoryFiles are the files holding the container's memory limit under
// the cgroup root, cgroup v2 first.
var cgroupMemoryFiles = []string{"memory.max", filepath.Join("memory", "memory.limit_in_bytes")}

// memoryLimit is the Go soft memory limit (runtime/debug.SetMemoryLimit) the
// agent sets, from --memory-limit (flag): a quantity ("400Mi"), "0" for none,
// or "auto": memoryLimitShare of the memory limit found under cgroupRoot,
// none if there is none or if the environment sets GOMEMLIMIT (Go applies
// that itself). It returns 0 when the agent sets none, and where the limit
// comes from for the log.
func memoryLimit(flag, cgroupRoot string, env func(string) string) (int64, string, error) {
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
	for _, name := range cgroupMemoryFiles {
		path := filepath.Join(cgroupRoot, name)
		b, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, "", fmt.Errorf("reading the container's memory limit: %w", err)
		}
		s := strings.TrimSpace(string(b))
		if s == "max" {
			return 0, path, nil
		}
		limit, err := strconv.ParseInt(s, 10, 64)
		if err != nil || limit <= 0 {
			return 0, "", fmt.Errorf("reading the container's memory limit: %s holds %q", path, s)
		}
		if limit >= unlimitedCgroup {
			return 0, path, nil
		}
		return int64(float64(limit) * memoryLimitShare), path, nil
	}
	return 0, "", nil
}
