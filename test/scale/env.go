package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/test/controlplane"
	"github.com/gitpeer/gitpeer/test/gitserver"
	"github.com/gitpeer/gitpeer/test/installed"
	"github.com/gitpeer/gitpeer/test/process"
	"github.com/gitpeer/gitpeer/test/sandbox"
)

// providerID is the cluster ID of the provider the benchmark's agent runs.
const providerID = "provider"

// env is what the benchmark runs against: a Git server with the peering repository, a control
// plane with gitpeer installed and a PeeringRepository for the provider role, and the agent.
type env struct {
	git   *gitserver.Server
	repo  gitserver.Repo
	cp    *controlplane.ControlPlane
	k8s   client.Client
	agent *installed.Agent
	// args are the agent's arguments.
	args []string
	// metricsAddr is where the agent serves its metrics.
	metricsAddr string
}

// startEnv starts the Git server (with a repository holding one commit on main), the control
// plane and the agent binary as provider, with the options' interval, agent flags and
// maxPendingRequests.
func startEnv(ctx context.Context, work, binary string, o options, log io.Writer) (e *env, err error) {
	e = &env{}
	defer func() {
		if err != nil {
			e.stop()
		}
	}()
	if e.git, err = gitserver.New(filepath.Join(work, "git")); err != nil {
		return e, err
	}
	if e.repo, err = e.git.NewRepo("peering"); err != nil {
		return e, err
	}
	if err = initialCommit(filepath.Join(work, "init"), e.repo.Dir); err != nil {
		return e, err
	}
	if e.cp, err = controlplane.NewWith(ctx, "", controlplane.Options{ControllerManagerDefaultLimits: o.ControllerManagerDefaultLimits}); err != nil {
		return e, err
	}
	sb, err := sandbox.Prepare(ctx, providerID, e.cp, e.git, filepath.Join(work, "unused"))
	if err != nil {
		return e, err
	}
	e.k8s = sb.Client
	var pending *int32
	if o.MaxPending > 0 {
		pending = new(int32(o.MaxPending))
	}
	if _, err = sb.Apply(ctx, e.repo.SSHURL, o.Interval, func(s *gitpeerv1alpha1.PeeringRepositorySpec) {
		s.Provider = &gitpeerv1alpha1.ProviderSpec{Enabled: true, APIServer: e.cp.URL, MaxPendingRequests: pending}
	}); err != nil {
		return e, err
	}
	home := filepath.Join(work, "agent")
	if e.metricsAddr, err = sandbox.FreeLoopbackAddr(); err != nil {
		return e, err
	}
	e.args = append([]string{"agent",
		"--kubeconfig=" + e.cp.KubeconfigPath, "--data-dir=" + filepath.Join(home, "data"),
		"--watch-namespace=" + sandbox.AgentNamespace,
		"--metrics-addr=" + e.metricsAddr, "--health-addr=0", "--webhook-addr=0",
	}, o.AgentFlags...)
	e.agent, err = installed.StartAgent(binary, e.args, home, log)
	return e, err
}

// stop stops the agent, the control plane and the Git server, whichever were started.
func (e *env) stop() {
	if e.agent != nil {
		_ = e.agent.Stop(30 * time.Second)
	}
	if e.cp != nil {
		e.cp.Stop()
	}
	if e.git != nil {
		e.git.Stop()
	}
}

// initialCommit pushes an empty first commit to main of the bare repository origin, as any
// real repository has, from a clone in dir.
func initialCommit(dir, origin string) error {
	for _, args := range [][]string{
		{"clone", "-q", origin, dir},
		{"-C", dir, "commit", "-q", "--allow-empty", "-m", "Peering repository"},
		{"-C", dir, "push", "-q", "origin", "HEAD:main"},
	} {
		if _, err := sandbox.Git(filepath.Dir(dir), args...); err != nil {
			return err
		}
	}
	return nil
}

// peeringRepository returns the agent's PeeringRepository as the API server stores it.
func (e *env) peeringRepository(ctx context.Context) (*unstructured.Unstructured, error) {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gitpeerv1alpha1.GroupVersion.WithKind("PeeringRepository"))
	err := e.k8s.Get(ctx, client.ObjectKey{Namespace: sandbox.AgentNamespace, Name: "peering"}, obj)
	return obj, err
}

// objectSize returns the size in bytes of the PeeringRepository's JSON.
func (e *env) objectSize(ctx context.Context) (int, error) {
	obj, err := e.peeringRepository(ctx)
	if err != nil {
		return 0, err
	}
	data, err := json.Marshal(obj.Object)
	return len(data), err
}

// readyMessage returns the PeeringRepository's Ready condition as "<status> <reason>: <message>".
func (e *env) readyMessage(ctx context.Context) string {
	obj := &gitpeerv1alpha1.PeeringRepository{}
	if err := e.k8s.Get(ctx, client.ObjectKey{Namespace: sandbox.AgentNamespace, Name: "peering"}, obj); err != nil {
		return err.Error()
	}
	c := apimeta.FindStatusCondition(obj.Status.Conditions, meta.ReadyCondition)
	if c == nil {
		return "no Ready condition"
	}
	return fmt.Sprintf("%s %s: %s", c.Status, c.Reason, c.Message)
}

// memory returns the agent's resident set size now and at its peak (VmRSS, VmHWM), in bytes.
func (e *env) memory() (rss, peak int64, err error) { return process.Memory(e.agent.PID()) }

// agentCommits counts the commits on main the agent authored.
func (e *env) agentCommits() (int, error) {
	_, email := (*gitpeerv1alpha1.CommitSpec)(nil).GetAuthor()
	return countCommitsBy(e.repo.Dir, email)
}

// buildAgent builds the gitpeer binary into dir and returns its path.
func buildAgent(dir string) (string, error) {
	binary := filepath.Join(dir, "gitpeer")
	out, err := exec.Command("go", "build", "-o", binary, "github.com/gitpeer/gitpeer/cmd/gitpeer").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build ./cmd/gitpeer: %w: %s", err, out)
	}
	return binary, nil
}
