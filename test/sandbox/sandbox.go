// Package sandbox assembles local gitpeer environments from real parts: a
// control plane per cluster (test/controlplane) with gitpeer's CRDs and the
// tenant ClusterRole installed, Git credentials for a test/gitserver, and an
// in-process agent. The end-to-end suite and the demo (test/demo) share it.
package sandbox

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitpeer/gitpeer/agent"
	"github.com/gitpeer/gitpeer/apis"
	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	tenantrole "github.com/gitpeer/gitpeer/config/tenant-role"
	"github.com/gitpeer/gitpeer/reconciler/webhook"
	"github.com/gitpeer/gitpeer/test/controlplane"
	"github.com/gitpeer/gitpeer/test/crdinstall"
	"github.com/gitpeer/gitpeer/test/gitserver"
)

// AgentNamespace is where each cluster's agent, its PeeringRepository and its
// Git credentials live.
const AgentNamespace = "gitpeer-system"

// Scheme knows the built-in types, gitpeer's and Liqo's types, and CRDs.
var Scheme = func() *runtime.Scheme {
	s := apis.NewScheme()
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	return s
}()

// Cluster is one control plane prepared for gitpeer.
type Cluster struct {
	ID     string
	CP     *controlplane.ControlPlane
	Client client.Client
	// RoundLimit is the agent's round limit (agent.Options.RoundLimit); zero: the default.
	RoundLimit int
	// FullResyncPeriod is the agent's agent.Options.FullResyncPeriod; zero: the default.
	FullResyncPeriod time.Duration

	dataDir     string
	webhookAddr string
	stop        context.CancelFunc
	done        chan error
}

// Prepare installs the CRDs, the tenant ClusterRole, the agent namespace and
// a Secret with the Git server's SSH credentials on cp.
func Prepare(ctx context.Context, id string, cp *controlplane.ControlPlane, git *gitserver.Server, dataDir string) (*Cluster, error) {
	c := &Cluster{ID: id, CP: cp, dataDir: dataDir}
	var err error
	if c.Client, err = client.New(cp.Config, client.Options{Scheme: Scheme}); err != nil {
		return nil, err
	}
	if err := crdinstall.Install(ctx, c.Client); err != nil {
		return nil, err
	}
	role, err := tenantrole.ClusterRole()
	if err != nil {
		return nil, err
	}
	for _, obj := range []client.Object{
		role,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: AgentNamespace}},
		GitCredentials(git),
	} {
		if err := c.Client.Create(ctx, obj); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// GitCredentials is the Secret "git" in AgentNamespace with the SSH credentials for git, the one
// SecretRef of the PeeringRepositories Apply creates.
func GitCredentials(git *gitserver.Server) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: AgentNamespace, Name: "git"},
		Data:       map[string][]byte{"identity": git.ClientKey, "known_hosts": git.KnownHosts},
	}
}

// Apply creates the cluster's PeeringRepository "peering" for repoURL, polling
// every interval, after mutate has filled in the roles.
func (c *Cluster) Apply(ctx context.Context, repoURL string, interval time.Duration, mutate func(*gitpeerv1alpha1.PeeringRepositorySpec)) (*gitpeerv1alpha1.PeeringRepository, error) {
	obj := &gitpeerv1alpha1.PeeringRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: AgentNamespace, Name: "peering"},
		Spec: gitpeerv1alpha1.PeeringRepositorySpec{
			URL: repoURL, ClusterID: authv1beta1.ClusterID(c.ID),
			Interval:  &metav1.Duration{Duration: interval},
			SecretRef: &meta.LocalObjectReference{Name: "git"},
		},
	}
	mutate(&obj.Spec)
	return obj, c.Client.Create(ctx, obj)
}

// MaxRetryDelay caps the agents' backoff after a transient failure, so tests
// see them recover within seconds of the end of an outage.
const MaxRetryDelay = 5 * time.Second

// StartAgent runs the cluster's agent in this process until StopAgent, wired
// as `gitpeer agent` wires it (package agent), with its push webhook receiver
// on a loopback port (WebhookURL); log receives its logs.
func (c *Cluster) StartAgent(log logr.Logger) error {
	addr, err := FreeLoopbackAddr()
	if err != nil {
		return err
	}
	mgr, err := agent.New(c.CP.Config, agent.Options{
		DataDir: c.dataDir, MetricsAddr: "0", HealthAddr: "0", Logger: log,
		Webhook: agent.WebhookOptions{Addr: addr}, SkipNameValidation: true, MaxRetryDelay: MaxRetryDelay,
		RoundLimit: c.RoundLimit, FullResyncPeriod: c.FullResyncPeriod,
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.webhookAddr, c.stop, c.done = addr, cancel, make(chan error, 1)
	go func() { c.done <- mgr.Start(ctx) }()
	return nil
}

// WebhookURL is where the running agent receives push webhooks for the
// PeeringRepository name in AgentNamespace.
func (c *Cluster) WebhookURL(name string) string {
	return "http://" + c.webhookAddr + webhook.PathPrefix + AgentNamespace + "/" + name
}

// FreeLoopbackAddr returns a loopback address with a port free right now.
func FreeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// StopAgent stops the agent and waits for it; it is safe to call when stopped.
func (c *Cluster) StopAgent() error {
	if c.stop == nil {
		return nil
	}
	c.stop()
	err := <-c.done
	c.stop = nil
	if err != nil {
		return fmt.Errorf("agent of %s: %w", c.ID, err)
	}
	return nil
}
