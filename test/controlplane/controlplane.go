// Package controlplane starts an isolated, real Kubernetes control plane —
// etcd, kube-apiserver and kube-controller-manager built by `make tools` — on
// free loopback ports, for tests and the demo. One generated CA is both the API
// server's client CA and the controller-manager's cluster-signing CA, so
// kubernetes.io/kube-apiserver-client CSRs are really issued and the issued
// certificates really authenticate. Namespaces really terminate and owner
// references really garbage-collect.
package controlplane

import (
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitpeer/gitpeer/test/process"
)

// TB is the part of testing.TB the harness needs; *testing.T, *testing.B and
// ginkgo's GinkgoT() all satisfy it.
type TB interface {
	Helper()
	Cleanup(func())
	Failed() bool
	Logf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// ControlPlane is a running etcd + kube-apiserver + kube-controller-manager.
type ControlPlane struct {
	// Config is an admin (system:masters) client configuration.
	Config *rest.Config
	// URL is the API server's https URL.
	URL string
	// CAPEM is the cluster CA: it signs the serving certificate (unless
	// Options.SeparateServingCA), client certificates and every
	// kube-apiserver-client CSR.
	CAPEM []byte
	// ServingCAPEM is the CA of the API server's serving certificate, the CA
	// of Config: CAPEM, or another CA with Options.SeparateServingCA.
	ServingCAPEM []byte
	// Dir holds the control plane's files; KubeconfigPath is the admin kubeconfig in it.
	Dir, KubeconfigPath string
	// StartupTime is how long the control plane took to become ready.
	StartupTime time.Duration

	pki       *pki
	processes []*process.Process
	ownDir    bool
	bin       string   // the directory of the binaries
	apiArgs   []string // kube-apiserver's flags, for RestartAPIServer
}

// ControllerManagerQPS is kube-controller-manager's --kube-api-qps (its
// --kube-api-burst is twice that): the default, 20, caps CSR signing at 20
// per second, which the scale benchmark would measure instead of gitpeer
// (unless Options.ControllerManagerDefaultLimits).
const ControllerManagerQPS = 500

// DefaultControllerManagerQPS is kube-controller-manager's own default
// --kube-api-qps (its --kube-api-burst is 30): as a cluster's CSR signer, it
// signs at most that many certificates per second.
const DefaultControllerManagerQPS = 20

// controllers are the kube-controller-manager controllers the handshake needs:
// CSR signing, namespace deletion, garbage collection, and service accounts.
const controllers = "certificatesigningrequest-signing-controller,certificatesigningrequest-cleaner-controller," +
	"namespace-controller,garbage-collector-controller,serviceaccount-controller," +
	"clusterrole-aggregation-controller,root-ca-certificate-publisher-controller"

// Options change how a control plane is set up.
type Options struct {
	// SeparateServingCA signs the API server's serving certificate with a CA
	// of its own, as k3s and managed clusters do: client certificates (and
	// CSRs) then do not chain to the CA clients verify the server with.
	SeparateServingCA bool
	// ClusterSigningDuration is kube-controller-manager's
	// --cluster-signing-duration (zero: its default, a year): the lifetime of
	// certificates whose CSR asks for none, as Liqo's do. A short one lets a
	// test see Liqo renew.
	ClusterSigningDuration time.Duration
	// ControllerManagerDefaultLimits runs kube-controller-manager with its
	// default client limits (DefaultControllerManagerQPS, burst 30), as most
	// clusters do, instead of ControllerManagerQPS.
	ControllerManagerDefaultLimits bool
}

// SignerQPS is the CSR signer's client limit under o: each certificate it
// signs is one request, so N certificates take at least N / SignerQPS seconds.
func (o Options) SignerQPS() int {
	if o.ControllerManagerDefaultLimits {
		return DefaultControllerManagerQPS
	}
	return ControllerManagerQPS
}

// Start runs a control plane until the test ends. Everything it started is
// stopped and its directory removed when the test ends, also when the test
// fails or panics. Component logs are printed only when the test failed.
func Start(t TB) *ControlPlane {
	t.Helper()
	return StartWith(t, Options{})
}

// StartWith is Start with options.
func StartWith(t TB, o Options) *ControlPlane {
	t.Helper()
	cp, err := NewWith(context.Background(), "", o)
	if err != nil {
		t.Fatalf("start control plane: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s", cp.Logs(200))
		}
		cp.Stop()
	})
	t.Logf("control plane %s ready in %s", cp.URL, cp.StartupTime.Round(time.Millisecond))
	return cp
}

// New starts a control plane in dir (a new temporary directory, removed by
// Stop, when dir is empty) and waits until it is ready. Call Stop when done.
func New(ctx context.Context, dir string) (*ControlPlane, error) {
	return NewWith(ctx, dir, Options{})
}

// NewWith is New with options.
func NewWith(ctx context.Context, dir string, o Options) (*ControlPlane, error) {
	bin, err := findBinaries()
	if err != nil {
		return nil, err
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		cp, err := start(ctx, bin, dir, o)
		if err == nil {
			return cp, nil
		}
		lastErr = err
		if !errors.Is(err, errPortInUse) {
			break
		}
	}
	return nil, lastErr
}

var errPortInUse = errors.New("port taken before it could be bound")

func start(ctx context.Context, bin, dir string, o Options) (cp *ControlPlane, err error) {
	began := time.Now()
	cp = &ControlPlane{Dir: dir, bin: bin}
	if dir == "" {
		if cp.Dir, err = os.MkdirTemp("", "gitpeer-controlplane-"); err != nil {
			return nil, err
		}
		cp.ownDir = true
	} else if err = os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err = fmt.Errorf("%w\n%s", err, cp.Logs(60))
			cp.Stop()
		}
	}()
	if cp.pki, err = newPKI(); err != nil {
		return cp, err
	}
	cp.pki.serving = cp.pki
	if o.SeparateServingCA {
		if cp.pki.serving, err = newPKI(); err != nil {
			return cp, err
		}
	}
	cp.CAPEM, cp.ServingCAPEM = cp.pki.caPEM, cp.pki.serving.caPEM
	files, err := cp.pki.writeFiles(cp.Dir)
	if err != nil {
		return cp, err
	}
	ports, err := process.FreePorts(3)
	if err != nil {
		return cp, err
	}
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	peerURL := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	cp.URL = "https://127.0.0.1:" + strconv.Itoa(ports[2])

	if err = cp.run(bin, "etcd",
		"--name=default", "--data-dir="+filepath.Join(cp.Dir, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=default="+peerURL, "--unsafe-no-fsync", "--log-level=warn",
	); err != nil {
		return cp, err
	}
	cp.apiArgs = []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port=" + strconv.Itoa(ports[2]),
		"--cert-dir=" + filepath.Join(cp.Dir, "apiserver-certs"),
		"--tls-cert-file=" + files.servingCert, "--tls-private-key-file=" + files.servingKey,
		"--client-ca-file=" + files.caCert,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + files.saPub, "--service-account-signing-key-file=" + files.saKey,
		"--service-cluster-ip-range=10.0.0.0/24", "--authorization-mode=RBAC", "--allow-privileged=true",
	}
	if err = cp.run(bin, "kube-apiserver", cp.apiArgs...); err != nil {
		return cp, err
	}

	if cp.Config, err = cp.clientConfig("admin", []string{"system:masters"}); err != nil {
		return cp, err
	}
	cp.KubeconfigPath = filepath.Join(cp.Dir, "admin.kubeconfig")
	if err = WriteKubeconfig(cp.Config, cp.KubeconfigPath); err != nil {
		return cp, err
	}
	cmConfig, err := cp.clientConfig("system:kube-controller-manager", []string{"system:masters"})
	if err != nil {
		return cp, err
	}
	cmKubeconfig := filepath.Join(cp.Dir, "controller-manager.kubeconfig")
	if err = WriteKubeconfig(cmConfig, cmKubeconfig); err != nil {
		return cp, err
	}
	if err = cp.waitAPIServer(ctx); err != nil {
		return cp, err
	}
	// The signer's client is rate-limited like every controller's (default 20 QPS, burst 30):
	// each signed CSR is one request, so it would sign at most 20 CSRs per second.
	cmArgs := []string{"--kubeconfig=" + cmKubeconfig, "--secure-port=0", "--leader-elect=false"}
	if !o.ControllerManagerDefaultLimits {
		cmArgs = append(cmArgs, "--kube-api-qps="+strconv.Itoa(ControllerManagerQPS), "--kube-api-burst="+strconv.Itoa(2*ControllerManagerQPS))
	}
	cmArgs = append(cmArgs, "--controllers="+controllers, "--use-service-account-credentials=false",
		"--cluster-signing-cert-file="+files.caCert, "--cluster-signing-key-file="+files.caKey,
		"--root-ca-file="+files.servingCA, "--service-account-private-key-file="+files.saKey)
	if o.ClusterSigningDuration > 0 {
		cmArgs = append(cmArgs, "--cluster-signing-duration="+o.ClusterSigningDuration.String())
	}
	if err = cp.run(bin, "kube-controller-manager", cmArgs...); err != nil {
		return cp, err
	}
	// The service-account controller creating "default" shows the controller-manager is working.
	c, err := client.New(cp.Config, client.Options{})
	if err != nil {
		return cp, err
	}
	if err = cp.waitFor(ctx, "kube-controller-manager", func(ctx context.Context) error {
		return c.Get(ctx, types.NamespacedName{Namespace: "default", Name: "default"}, &corev1.ServiceAccount{})
	}); err != nil {
		return cp, err
	}
	cp.StartupTime = time.Since(began)
	return cp, nil
}

// run starts one component from the binaries directory.
func (cp *ControlPlane) run(bin, name string, args ...string) error {
	p, err := cp.startProcess(bin, name, args...)
	if err != nil {
		return err
	}
	cp.processes = append(cp.processes, p)
	return nil
}

// startProcess starts the component name from the binaries directory bin,
// logging to name.log in the control plane's directory.
func (cp *ControlPlane) startProcess(bin, name string, args ...string) (*process.Process, error) {
	return process.Start(name, exec.Command(filepath.Join(bin, name), args...), filepath.Join(cp.Dir, name+".log"))
}

// waitFor polls check until it succeeds, a component exits, or a minute passes.
func (cp *ControlPlane) waitFor(ctx context.Context, what string, check func(context.Context) error) error {
	err := process.WaitUntil(ctx, time.Minute, 100*time.Millisecond, what, check, cp.processes...)
	for _, p := range cp.processes {
		if done, _ := p.Exited(); done && p.PortInUse() {
			return fmt.Errorf("%w: %v", errPortInUse, err)
		}
	}
	return err
}

// waitAPIServer waits until kube-apiserver is ready (/readyz).
func (cp *ControlPlane) waitAPIServer(ctx context.Context) error {
	hc, err := rest.HTTPClientFor(cp.Config)
	if err != nil {
		return err
	}
	return cp.waitFor(ctx, "kube-apiserver /readyz", process.HTTPReady(hc, cp.URL+"/readyz"))
}

// clientConfig returns a client configuration authenticating with a fresh
// certificate for user in groups.
func (cp *ControlPlane) clientConfig(user string, groups []string) (*rest.Config, error) {
	certPEM, keyPEM, err := cp.pki.issue(pkix.Name{CommonName: user, Organization: groups}, x509.ExtKeyUsageClientAuth, nil, nil)
	if err != nil {
		return nil, err
	}
	return &rest.Config{
		Host:            cp.URL,
		TLSClientConfig: rest.TLSClientConfig{CAData: cp.ServingCAPEM, CertData: certPEM, KeyData: keyPEM},
		QPS:             100,
		Burst:           200,
	}, nil
}

// UserConfig returns a client configuration for an arbitrary user and groups,
// signed by the cluster CA, for tests that need a non-admin identity.
func (cp *ControlPlane) UserConfig(user string, groups ...string) (*rest.Config, error) {
	return cp.clientConfig(user, groups)
}

// StopAPIServer stops kube-apiserver; etcd and the controller-manager keep
// running, so the cluster's state survives. StartAPIServer brings it back.
func (cp *ControlPlane) StopAPIServer() {
	cp.apiServer().Stop(10 * time.Second)
}

// StartAPIServer starts kube-apiserver again, with the same flags, address
// and certificates, and waits until it is ready.
func (cp *ControlPlane) StartAPIServer(ctx context.Context) error {
	p, err := cp.startProcess(cp.bin, "kube-apiserver", cp.apiArgs...)
	if err != nil {
		return err
	}
	for i, old := range cp.processes {
		if old.Name == "kube-apiserver" {
			cp.processes[i] = p
		}
	}
	return cp.waitAPIServer(ctx)
}

func (cp *ControlPlane) apiServer() *process.Process {
	for _, p := range cp.processes {
		if p.Name == "kube-apiserver" {
			return p
		}
	}
	panic("controlplane: no kube-apiserver")
}

// Stop stops every component (controller-manager first, etcd last) and removes
// the directory if New created it. It is safe to call more than once.
func (cp *ControlPlane) Stop() {
	for i := len(cp.processes) - 1; i >= 0; i-- {
		cp.processes[i].Stop(10 * time.Second)
	}
	if cp.ownDir && cp.Dir != "" {
		_ = os.RemoveAll(cp.Dir)
	}
}

// Logs returns the last lines of every component's log.
func (cp *ControlPlane) Logs(lines int) string {
	var out string
	for _, p := range cp.processes {
		out += fmt.Sprintf("===== %s (last %d lines) =====\n%s\n", p.Name, lines, p.Tail(lines))
	}
	return out
}

// WriteKubeconfig writes a kubeconfig of cfg (its server, CA and client
// certificate, as UserConfig returns them) to path.
func WriteKubeconfig(cfg *rest.Config, path string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["local"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["local"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	kc.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: "local"}
	kc.CurrentContext = "local"
	return clientcmd.WriteToFile(*kc, path)
}
