// Package process runs the programs the test harnesses start (the control
// plane's components, Gitea) as child processes: each in a process group of
// its own, killed by the kernel if the test binary dies so that nothing
// outlives a crash, with its output in a log file. It also finds those
// programs' builds and free loopback ports for them.
package process

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Process is a running child process whose output goes to a log file.
type Process struct {
	// Name names the process in errors and logs.
	Name    string
	logPath string
	cmd     *exec.Cmd
	done    chan struct{}
	err     error
}

// Start starts cmd (its path, arguments, environment and directory set) with
// its output written to the file logPath.
func Start(name string, cmd *exec.Cmd, logPath string) (*Process, error) {
	p := &Process{Name: name, logPath: logPath, cmd: cmd, done: make(chan struct{})}
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// Exited reports whether the process has ended, with its exit error.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, fmt.Errorf("%s exited: %v", p.Name, p.err)
	default:
		return false, nil
	}
}

// Stop sends SIGTERM to the process group, then SIGKILL after grace, and
// waits for the process to end. It is safe to call when it has ended.
func (p *Process) Stop(grace time.Duration) {
	if done, _ := p.Exited(); done {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// Log returns the process's log.
func (p *Process) Log() string {
	data, _ := os.ReadFile(p.logPath)
	return string(data)
}

// Tail returns the last n lines of the process's log.
func (p *Process) Tail(n int) string {
	data, err := os.ReadFile(p.logPath)
	if err != nil {
		return err.Error()
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// PortInUse reports whether the process failed because a port was taken
// between choosing it (FreePorts) and binding it.
func (p *Process) PortInUse() bool {
	return strings.Contains(p.Log(), "address already in use")
}

// WaitUntil polls check every interval until it succeeds, one of ps exits
// (its exit error), or timeout passes (the last error of check, waiting for what).
func WaitUntil(ctx context.Context, timeout, interval time.Duration, what string, check func(context.Context) error, ps ...*Process) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		err := check(ctx)
		if err == nil {
			return nil
		}
		for _, p := range ps {
			if done, exitErr := p.Exited(); done {
				return exitErr
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %v", what, err)
		case <-time.After(interval):
		}
	}
}

// HTTPReady is a check for WaitUntil: a GET of url with hc answers 200 OK.
func HTTPReady(hc *http.Client, url string) func(context.Context) error {
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s", url, resp.Status)
		}
		return nil
	}
}

// FreePorts returns n distinct loopback ports that were free a moment ago.
func FreePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// Find returns $env when it is set, or else the only path matching glob
// under .cache of the working directory or of a parent (the checkout), as
// `make tools` builds it; an error names env and `make tools` otherwise.
func Find(env, glob string) (string, error) {
	if path := os.Getenv(env); path != "" {
		return path, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		matches, _ := filepath.Glob(filepath.Join(dir, ".cache", glob))
		switch {
		case len(matches) == 1:
			return matches[0], nil
		case len(matches) > 1:
			return "", fmt.Errorf("several builds match %s: set %s (the Makefile does)", filepath.Join(dir, ".cache", glob), env)
		case filepath.Dir(dir) == dir:
			return "", errors.New("no .cache/" + glob + " in " + wd + " or a parent: run `make tools` or set " + env)
		}
	}
}
