package controlplane

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// process is one control-plane component running as a child process whose
// output goes to a log file.
type process struct {
	name    string
	logPath string
	cmd     *exec.Cmd
	done    chan struct{}
	err     error
}

// startProcess starts bin with args. The child gets its own process group and
// is killed by the kernel if the test binary dies, so nothing outlives a crash.
func startProcess(dir, bin string, args ...string) (*process, error) {
	name := filepath.Base(bin)
	p := &process{name: name, logPath: filepath.Join(dir, name+".log"), done: make(chan struct{})}
	logFile, err := os.Create(p.logPath)
	if err != nil {
		return nil, err
	}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has ended, with its exit error.
func (p *process) exited() (bool, error) {
	select {
	case <-p.done:
		return true, fmt.Errorf("%s exited: %v", p.name, p.err)
	default:
		return false, nil
	}
}

// stop sends SIGTERM to the process group, then SIGKILL after grace.
func (p *process) stop(grace time.Duration) {
	if done, _ := p.exited(); done {
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

// tail returns the last n lines of the process log.
func (p *process) tail(n int) string {
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

// portInUse reports whether the process failed because a port was taken
// between choosing it and binding it.
func (p *process) portInUse() bool {
	data, _ := os.ReadFile(p.logPath)
	return strings.Contains(string(data), "address already in use")
}

// findBinaries returns the directory holding kube-apiserver,
// kube-controller-manager and etcd: $GITPEER_TOOLS_BIN as set by the Makefile,
// or the only build under .cache/tools of the enclosing checkout.
func findBinaries() (string, error) {
	if dir := os.Getenv("GITPEER_TOOLS_BIN"); dir != "" {
		return dir, checkBinaries(dir)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		matches, _ := filepath.Glob(filepath.Join(dir, ".cache", "tools", "*"))
		if len(matches) == 1 {
			return matches[0], checkBinaries(matches[0])
		}
		if len(matches) > 1 {
			return "", fmt.Errorf("several tool builds in %s: set GITPEER_TOOLS_BIN (the Makefile does)", filepath.Join(dir, ".cache", "tools"))
		}
		if filepath.Dir(dir) == dir {
			return "", errors.New("kube-apiserver, kube-controller-manager and etcd not found: run `make tools`")
		}
	}
}

func checkBinaries(dir string) error {
	for _, name := range []string{"etcd", "kube-apiserver", "kube-controller-manager"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("%s not found in %s: run `make tools`", name, dir)
		}
	}
	return nil
}
