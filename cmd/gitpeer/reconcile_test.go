package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
)

// runGitpeer runs the gitpeer command line in process and returns its stdout and stderr.
func runGitpeer(args ...string) (stdout, stderr string, err error) {
	var out, errOut bytes.Buffer
	root := newRootCmd()
	root.SetArgs(args)
	root.SetOut(&out)
	root.SetErr(&errOut)
	err = root.Execute()
	return out.String(), errOut.String(), err
}

// testReconcileSuspendResume runs reconcile, suspend and resume against the
// running agent of TestAgent, whose PeeringRepository key fails at Git: every
// reconcile the agent handles ends with Ready False, which the commands report.
func testReconcileSuspendResume(t *testing.T, k8s client.Client, kubeconfig string, key client.ObjectKey) {
	ctx := context.Background()
	flags := []string{key.Name, "-n", key.Namespace, "--kubeconfig", kubeconfig}
	get := func() *gitpeerv1alpha1.PeeringRepository {
		t.Helper()
		obj := &gitpeerv1alpha1.PeeringRepository{}
		if err := k8s.Get(ctx, key, obj); err != nil {
			t.Fatal(err)
		}
		return obj
	}
	// handledNotReady checks that the command waited for the agent to handle
	// its own request and failed with the Ready condition's message.
	handledNotReady := func(cmd string, before string, err error) {
		t.Helper()
		obj := get()
		requested := obj.GetAnnotations()[meta.ReconcileRequestAnnotation]
		if requested == before || obj.Status.LastHandledReconcileAt != requested {
			t.Errorf("%s: request %q (before %q), handled %q", cmd, requested, before, obj.Status.LastHandledReconcileAt)
		}
		ready := apimeta.FindStatusCondition(obj.Status.Conditions, meta.ReadyCondition)
		if err == nil || ready == nil || ready.Status != "False" || !strings.Contains(err.Error(), ready.Message) {
			t.Errorf("%s: error %v, want the Ready condition's message (%+v)", cmd, err, ready)
		}
	}

	before := get().GetAnnotations()[meta.ReconcileRequestAnnotation]
	_, stderr, err := runGitpeer(append([]string{"reconcile", "--timeout", "1m"}, flags...)...)
	handledNotReady("reconcile", before, err)
	if !strings.Contains(stderr, "waiting for the agent to reconcile PeeringRepository "+key.String()) {
		t.Errorf("reconcile: no progress on stderr: %q", stderr)
	}

	if _, _, err := runGitpeer(append([]string{"suspend"}, flags...)...); err != nil {
		t.Fatalf("suspend: %v", err)
	}
	if !get().Spec.Suspend {
		t.Fatal("suspend: spec.suspend is not set")
	}
	before = get().GetAnnotations()[meta.ReconcileRequestAnnotation]
	if _, _, err := runGitpeer(append([]string{"reconcile"}, flags...)...); err == nil || !strings.Contains(err.Error(), "is suspended") {
		t.Errorf("reconcile of a suspended PeeringRepository: %v, want it refused", err)
	}
	if got := get().GetAnnotations()[meta.ReconcileRequestAnnotation]; got != before {
		t.Errorf("reconcile of a suspended PeeringRepository requested one (%q)", got)
	}

	_, _, err = runGitpeer("resume", "--all", "-n", key.Namespace, "--kubeconfig", kubeconfig, "--timeout", "1m")
	if get().Spec.Suspend {
		t.Error("resume: spec.suspend is still set")
	}
	handledNotReady("resume --all", before, err)

	// Shell completion (cobra's __complete, which the completion scripts call) offers the names.
	out, _, err := runGitpeer("__complete", "suspend", "-n", key.Namespace, "--kubeconfig", kubeconfig, "")
	if err != nil || !strings.HasPrefix(out, key.Name+"\n") {
		t.Errorf("completion of suspend's NAME: %q, %v", out, err)
	}

	// status reads the cluster through the same kubectl flags, as the quickstart runs it (--context).
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if out, _, err := runGitpeer("status", "-n", key.Namespace, "--kubeconfig", kubeconfig, "--context", cfg.CurrentContext, "-o", "wide"); err != nil || !strings.Contains(out, key.Namespace+"   "+key.Name) {
		t.Errorf("status: %v\n%s", err, out)
	}
	if _, _, err := runGitpeer("status", "--kubeconfig", kubeconfig, "--context", "nowhere"); err == nil || !strings.Contains(err.Error(), `--context`) || !strings.Contains(err.Error(), `"nowhere"`) {
		t.Errorf("status --context nowhere: %v", err)
	}

	if _, _, err := runGitpeer("reconcile", "missing", "-n", key.Namespace, "--kubeconfig", kubeconfig); err == nil || !strings.Contains(err.Error(), `"missing" not found`) {
		t.Errorf("reconcile of a missing PeeringRepository: %v", err)
	}
	if _, _, err := runGitpeer("suspend", "--kubeconfig", kubeconfig); err == nil || !strings.Contains(err.Error(), "--all") {
		t.Errorf("suspend without a name: %v, want the usage named", err)
	}
}
