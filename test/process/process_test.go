package process_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gitpeer/gitpeer/test/process"
)

// TestStopEndsTheGroup starts a shell that leaves a child behind, logs, and
// ends both with Stop: the whole process group is signalled.
func TestStopEndsTheGroup(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	p, err := process.Start("sh", exec.Command("sh", "-c", "sleep 600 & echo $! > "+pidFile+"; echo one; echo two; wait"), filepath.Join(dir, "sh.log"))
	if err != nil {
		t.Fatal(err)
	}
	if err := process.WaitUntil(context.Background(), 30*time.Second, 10*time.Millisecond, "the log", func(context.Context) error {
		if !strings.Contains(p.Log(), "two") {
			return errors.New("not yet")
		}
		return nil
	}, p); err != nil {
		t.Fatal(err)
	}
	if got := p.Tail(1); got != "two" {
		t.Errorf("Tail(1) = %q, want %q", got, "two")
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	p.Stop(10 * time.Second)
	if done, _ := p.Exited(); !done {
		t.Fatal("the process runs after Stop")
	}
	child, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	if err := process.WaitUntil(context.Background(), 30*time.Second, 10*time.Millisecond, "the child to end", func(context.Context) error {
		if alive(child) {
			return errors.New("child alive")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	p.Stop(time.Second) // a second Stop returns at once
}

// alive reports whether pid runs: it exists and is not a zombie (an orphan
// waits as one until its new parent reaps it).
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(stat), ") ")
	return !strings.HasPrefix(rest, "Z")
}

// TestWaitUntilExit returns the exit error of a process that ends before the check passes.
func TestWaitUntilExit(t *testing.T) {
	p, err := process.Start("false", exec.Command("false"), filepath.Join(t.TempDir(), "false.log"))
	if err != nil {
		t.Fatal(err)
	}
	err = process.WaitUntil(context.Background(), time.Minute, 10*time.Millisecond, "never",
		func(context.Context) error { return errors.New("never ready") }, p)
	if err == nil || !strings.Contains(err.Error(), "false exited: exit status 1") {
		t.Fatalf("WaitUntil = %v, want the exit of false", err)
	}
}

// TestFind takes the environment variable first, else the only build under
// .cache of the working directory or a parent, and refuses two.
func TestFind(t *testing.T) {
	root := t.TempDir()
	sub := filepath.Join(root, "a", "b")
	for _, d := range []string{sub, filepath.Join(root, ".cache", "tool", "v1")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(sub)
	t.Setenv("PROCESS_TEST_BIN", "")
	got, err := process.Find("PROCESS_TEST_BIN", "tool/v*")
	if err != nil || got != filepath.Join(root, ".cache", "tool", "v1") {
		t.Errorf("Find = %q, %v; want the build under %s", got, err, root)
	}
	if err := os.MkdirAll(filepath.Join(root, ".cache", "tool", "v2"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := process.Find("PROCESS_TEST_BIN", "tool/v*"); err == nil || !strings.Contains(err.Error(), "set PROCESS_TEST_BIN") {
		t.Errorf("Find with two builds = %v, want an error naming PROCESS_TEST_BIN", err)
	}
	t.Setenv("PROCESS_TEST_BIN", "/elsewhere")
	if got, err := process.Find("PROCESS_TEST_BIN", "tool/v*"); err != nil || got != "/elsewhere" {
		t.Errorf("Find with PROCESS_TEST_BIN set = %q, %v", got, err)
	}
}

// TestHTTPReady passes on 200 OK only.
func TestHTTPReady(t *testing.T) {
	status := http.StatusServiceUnavailable
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(status) }))
	defer srv.Close()
	check := process.HTTPReady(srv.Client(), srv.URL+"/readyz")
	if err := check(context.Background()); err == nil || !strings.Contains(err.Error(), "503") {
		t.Errorf("check with 503 = %v, want an error naming the status", err)
	}
	status = http.StatusOK
	if err := check(context.Background()); err != nil {
		t.Errorf("check with 200 = %v", err)
	}
}

// TestProcReadings reads a child's CPU time and memory, and the machine's load, from /proc.
func TestProcReadings(t *testing.T) {
	p, err := process.Start("sleep", exec.Command("sleep", "60"), filepath.Join(t.TempDir(), "sleep.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop(time.Second)
	if cpu, err := process.CPUSeconds(p.PID()); err != nil || cpu < 0 {
		t.Errorf("CPUSeconds = %v, %v", cpu, err)
	}
	if rss, peak, err := process.Memory(p.PID()); err != nil || rss <= 0 || peak < rss {
		t.Errorf("Memory = %d, %d, %v; want 0 < RSS <= peak", rss, peak, err)
	}
	if l, err := process.LoadAverage(); err != nil || l < 0 {
		t.Errorf("LoadAverage = %v, %v", l, err)
	}
	if _, err := process.CPUSeconds(-1); err == nil {
		t.Error("CPUSeconds of no process: no error")
	}
}
