package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMemoryLimit checks where the agent's soft memory limit comes from: the
// flag, else 90% of the cgroup v2 or v1 memory limit, none when the cgroup
// has none or GOMEMLIMIT is set, and a clear error for bad input.
func TestMemoryLimit(t *testing.T) {
	noEnv := func(string) string { return "" }
	cgroup := func(t *testing.T, file, content string) string {
		root := t.TempDir()
		path := filepath.Join(root, file)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return root
	}
	v2 := cgroup(t, "memory.max", "536870912\n")
	for _, c := range []struct {
		name, flag, root string
		env              func(string) string
		want             int64
	}{
		{"flag", "400Mi", v2, noEnv, 400 << 20},
		{"flag zero sets none", "0", v2, noEnv, 0},
		{"cgroup v2", "auto", v2, noEnv, 483183820},
		{"cgroup v2 without limit", "auto", cgroup(t, "memory.max", "max\n"), noEnv, 0},
		{"cgroup v1", "auto", cgroup(t, "memory/memory.limit_in_bytes", "1073741824\n"), noEnv, 966367641},
		{"cgroup v1 without limit", "auto", cgroup(t, "memory/memory.limit_in_bytes", "9223372036854771712\n"), noEnv, 0},
		{"no cgroup", "auto", t.TempDir(), noEnv, 0},
		{"GOMEMLIMIT set", "auto", v2, func(k string) string { return map[string]string{"GOMEMLIMIT": "300MiB"}[k] }, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, _, err := memoryLimit(c.flag, c.root, c.env)
			if err != nil || got != c.want {
				t.Errorf("memoryLimit(%q) = %d, %v; want %d", c.flag, got, err, c.want)
			}
		})
	}
	for _, c := range []struct{ name, flag, root string }{
		{"bad flag", "lots", v2},
		{"negative flag", "-1Mi", v2},
		{"bad cgroup file", "auto", cgroup(t, "memory.max", "garbage")},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, _, err := memoryLimit(c.flag, c.root, noEnv); err == nil || !strings.Contains(err.Error(), "memory") {
				t.Errorf("memoryLimit(%q) = %v; want an error about the memory limit", c.flag, err)
			}
		})
	}
}
