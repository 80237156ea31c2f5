package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitpeer/gitpeer/apis"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/reconciler/webhook"
	"github.com/gitpeer/gitpeer/test/controlplane"
	"github.com/gitpeer/gitpeer/test/crdinstall"
)

// agentProcessEnv makes the test binary run `gitpeer <args after -->` instead
// of the tests, so TestAgent can run the agent as a real process and signal it.
const agentProcessEnv = "GITPEER_TEST_AGENT_PROCESS"

// TestAgentProcess is the agent process of TestAgent; it is skipped otherwise.
func TestAgentProcess(t *testing.T) {
	if os.Getenv(agentProcessEnv) != "1" {
		t.Skip("helper process of TestAgent")
	}
	root := newRootCmd()
	root.SetArgs(flag.Args())
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// TestAgent runs `gitpeer agent` against a real control plane: probes answer,
// a signed push webhook makes the agent reconcile although the poll interval
// is ten minutes, gitpeer reconcile, suspend and resume drive it, and SIGTERM
// stops it cleanly.
func TestAgent(t *testing.T) {
	cp := controlplane.Start(t)
	scheme := apis.NewScheme()
	utilruntime.Must(apiextensionsv1.AddToScheme(scheme))
	k8s, err := client.New(cp.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := crdinstall.Install(ctx, k8s); err != nil {
		t.Fatal(err)
	}
	const ns, token = "gitpeer-system", "agent-test-token"
	key := client.ObjectKey{Namespace: ns, Name: "peering"}
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hook"}, Data: map[string][]byte{webhook.TokenKey: []byte(token)}},
		&gitpeerv1alpha1.PeeringRepository{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name, Annotations: map[string]string{
				gitpeerv1alpha1.WebhookSecretAnnotation: "hook", gitpeerv1alpha1.WebhookTypeAnnotation: string(webhook.GitHub),
			}},
			Spec: gitpeerv1alpha1.PeeringRepositorySpec{
				// Nothing listens there: the reconcile fails at Git, after recording the request.
				URL: "https://127.0.0.1:1/peering.git", ClusterID: "cluster-a",
				Interval: &metav1.Duration{Duration: 10 * time.Minute},
				Provider: &gitpeerv1alpha1.ProviderSpec{Enabled: true, APIServer: cp.URL},
			},
		},
	} {
		if err := k8s.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}

	metrics, health, hook := freeAddr(t), freeAddr(t), freeAddr(t)
	var logs bytes.Buffer
	cmd := exec.Command(os.Args[0], "-test.run=^TestAgentProcess$", "--", "agent",
		"--kubeconfig="+cp.KubeconfigPath, "--metrics-addr="+metrics, "--health-addr="+health,
		"--webhook-addr="+hook, "--data-dir="+t.TempDir(), "--watch-namespace="+ns,
		"--concurrent=2", "--kube-api-qps=20", "--log-encoding=console", "--log-level=debug")
	cmd.Env = append(os.Environ(), agentProcessEnv+"=1")
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited, reaped := make(chan error, 1), false
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if !reaped {
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("agent output:\n%s", logs.String())
		}
	})

	for _, path := range []string{"/healthz", "/readyz"} {
		eventually(t, 30*time.Second, "GET "+path, func() bool { return get("http://"+health+path) == http.StatusOK })
	}
	eventually(t, 10*time.Second, "GET /metrics", func() bool { return get("http://"+metrics+"/metrics") == http.StatusOK })

	// The receiver knows the token once the agent's cache has synced: until then, 401.
	body := `{"ref":"refs/heads/main"}`
	eventually(t, 30*time.Second, "the webhook to be accepted (202)", func() bool {
		req, _ := http.NewRequest(http.MethodPost, "http://"+hook+"/hook/"+ns+"/peering", strings.NewReader(body))
		req.Header.Set("X-GitHub-Event", "push")
		req.Header.Set("X-Hub-Signature-256", "sha256="+webhook.Signature([]byte(token), []byte(body)))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusAccepted
	})
	obj := &gitpeerv1alpha1.PeeringRepository{}
	eventually(t, 30*time.Second, "the agent to handle the webhook's reconcile request", func() bool {
		if err := k8s.Get(ctx, key, obj); err != nil {
			return false
		}
		v := obj.GetAnnotations()[meta.ReconcileRequestAnnotation]
		return v != "" && obj.Status.LastHandledReconcileAt == v
	})
	testReconcileSuspendResume(t, k8s, cp.KubeconfigPath, key)

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		reaped = true
		if err != nil {
			t.Fatalf("agent exited with %v after SIGTERM", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("agent still running 30s after SIGTERM")
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func get(url string) int {
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(timeout); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
	}
}
