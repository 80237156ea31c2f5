// Package installed runs gitpeer as it is installed: it renders an install (a kustomization such as
// config/default; any list of rendered objects, e.g. a Helm chart's, fits Apply), applies it to a
// control plane server-side, and runs the real `gitpeer agent` binary as a subprocess that
// authenticates as the installed ServiceAccount with a token from the TokenRequest API, with the
// arguments of the installed Deployment.
package installed

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/gitpeer/gitpeer/test/crdinstall"
)

// FieldManager is the server-side apply field manager of the install.
const FieldManager = "gitpeer-install"

// RenderChart renders the Helm chart at chart with the helm binary at helm, as `helm install
// gitpeer chart --namespace namespace --create-namespace` installs it on a cluster of kubeVersion:
// its CRDs, its templates with default values, and the release namespace Helm creates.
func RenderChart(helm, chart, namespace, kubeVersion string) ([]*unstructured.Unstructured, error) {
	cmd := exec.Command(helm, "template", "gitpeer", chart, "--namespace", namespace, "--include-crds", "--kube-version", kubeVersion)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("helm template %s: %w: %s", chart, err, stderr.String())
	}
	ns := &unstructured.Unstructured{}
	ns.SetAPIVersion("v1")
	ns.SetKind("Namespace")
	ns.SetName(namespace)
	objs := []*unstructured.Unstructured{ns}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(out), 4096)
	for {
		o := &unstructured.Unstructured{}
		if err := dec.Decode(&o.Object); errors.Is(err, io.EOF) {
			return objs, nil
		} else if err != nil {
			return nil, fmt.Errorf("helm template %s: %w", chart, err)
		}
		if len(o.Object) > 0 {
			objs = append(objs, o)
		}
	}
}

// Render builds the kustomization in dir, as `kubectl apply -k dir` would.
func Render(dir string) ([]*unstructured.Unstructured, error) {
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	objs := make([]*unstructured.Unstructured, 0, resources.Size())
	for _, r := range resources.Resources() {
		// Through JSON: kyaml's maps hold ints, which unstructured objects cannot deep-copy.
		data, err := r.MarshalJSON()
		if err != nil {
			return nil, err
		}
		o := &unstructured.Unstructured{}
		if err := o.UnmarshalJSON(data); err != nil {
			return nil, err
		}
		objs = append(objs, o)
	}
	return objs, nil
}

// Apply applies every object server-side (CustomResourceDefinitions first, waiting until they are
// Established) as FieldManager, as `kubectl apply --server-side` does.
func Apply(ctx context.Context, c client.Client, objs []*unstructured.Unstructured) error {
	isCRD := func(o *unstructured.Unstructured) bool { return o.GetKind() == "CustomResourceDefinition" }
	for _, crds := range []bool{true, false} {
		for _, o := range objs {
			if isCRD(o) != crds {
				continue
			}
			if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o.DeepCopy()), client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
				return fmt.Errorf("apply %s %s: %w", o.GetKind(), o.GetName(), err)
			}
			if crds {
				if err := crdinstall.WaitEstablished(ctx, c, o.GetName()); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// Deployment returns the Deployment named name among objs, converted to its typed form.
func Deployment(objs []*unstructured.Unstructured, name string) (*appsv1.Deployment, error) {
	for _, o := range objs {
		if o.GetKind() == "Deployment" && o.GetName() == name {
			dep := &appsv1.Deployment{}
			return dep, runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, dep)
		}
	}
	return nil, fmt.Errorf("no Deployment %s", name)
}

// AgentArgs returns the arguments of the Deployment's first container with its $(VAR) references to
// environment variables resolved against env, and the flags named in override replaced by (or, when
// absent, completed with) their given values.
func AgentArgs(dep *appsv1.Deployment, env map[string]string, override map[string]string) []string {
	c := dep.Spec.Template.Spec.Containers[0]
	args := make([]string, 0, len(c.Args)+len(override))
	seen := map[string]bool{}
	for _, a := range c.Args {
		for k, v := range env {
			a = strings.ReplaceAll(a, "$("+k+")", v)
		}
		name, _, _ := strings.Cut(a, "=")
		if v, ok := override[name]; ok {
			a, seen[name] = name+"="+v, true
		}
		args = append(args, a)
	}
	for name, v := range override {
		if !seen[name] {
			args = append(args, name+"="+v)
		}
	}
	return args
}

// ServiceAccountKubeconfig writes to path a kubeconfig for cfg's API server (URL and CA) that
// authenticates with a token of ServiceAccount namespace/name from the TokenRequest API.
func ServiceAccountKubeconfig(ctx context.Context, cfg *rest.Config, namespace, name, path string) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: new(int64(3600))},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("token of %s/%s: %w", namespace, name, err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["cluster"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	kc.Contexts["default"] = &clientcmdapi.Context{Cluster: "cluster", AuthInfo: name, Namespace: namespace}
	kc.CurrentContext = "default"
	return clientcmd.WriteToFile(*kc, path)
}

// Agent is a running `gitpeer agent` subprocess.
type Agent struct {
	cmd  *exec.Cmd
	done chan error
	mu   sync.Mutex
	logs bytes.Buffer
}

// StartAgent runs binary with args (AgentArgs) with HOME and TMPDIR in home, as the Deployment
// sets them, and no KUBECONFIG from the environment; its output goes to log and is kept for Logs.
func StartAgent(binary string, args []string, home string, log io.Writer) (*Agent, error) {
	a := &Agent{done: make(chan error, 1)}
	a.cmd = exec.Command(binary, args...)
	a.cmd.Env = append(os.Environ(), "HOME="+home, "TMPDIR="+filepath.Join(home, "tmp"), "KUBECONFIG=")
	if err := os.MkdirAll(filepath.Join(home, "tmp"), 0o700); err != nil {
		return nil, err
	}
	out := io.MultiWriter(log, (*lockedWriter)(a))
	a.cmd.Stdout, a.cmd.Stderr = out, out
	// Killed by the kernel if the test binary dies, as the control plane's components are.
	a.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := a.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { a.done <- a.cmd.Wait() }()
	return a, nil
}

// lockedWriter appends to an Agent's logs.
type lockedWriter Agent

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.logs.Write(p)
}

// Logs returns everything the agent printed so far.
func (a *Agent) Logs() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.logs.String()
}

// PID returns the process ID of the agent.
func (a *Agent) PID() int { return a.cmd.Process.Pid }

// Exited reports whether the agent has stopped, and how.
func (a *Agent) Exited() (bool, error) {
	select {
	case err := <-a.done:
		a.done <- err
		return true, err
	default:
		return false, nil
	}
}

// Stop sends SIGTERM, as the kubelet does, and kills the agent if it has not stopped within grace.
func (a *Agent) Stop(grace time.Duration) error {
	if done, err := a.Exited(); done {
		return err
	}
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-a.done:
		return err
	case <-time.After(grace):
		_ = a.cmd.Process.Kill()
		return fmt.Errorf("agent did not stop within %s: %w", grace, <-a.done)
	}
}
