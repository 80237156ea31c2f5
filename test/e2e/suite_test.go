// Package e2e runs the whole handshake between two real control planes
// through a real Git server over SSH, with the agents in this process.
package e2e

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/config/crd"
	"github.com/gitpeer/gitpeer/reconciler"
	"github.com/gitpeer/gitpeer/test/controlplane"
	"github.com/gitpeer/gitpeer/test/gitserver"
)

func init() { utilruntime.Must(apiextensionsv1.AddToScheme(scheme)) }

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "gitpeer end to end")
}

const agentNamespace = "gitpeer-system"

var (
	scheme = reconciler.NewScheme()
	gitSrv *gitserver.Server
	repo   gitserver.Repo
)

var _ = BeforeSuite(func() {
	gitSrv = gitserver.Start(GinkgoT())
	var err error
	repo, err = gitSrv.NewRepo("peering")
	Expect(err).NotTo(HaveOccurred())
	// An initial commit so the branch exists, as in any real repository.
	dir := GinkgoT().TempDir()
	gitCLI(dir, "clone", "-q", repo.Dir, "w")
	w := filepath.Join(dir, "w")
	gitCLI(w, "commit", "-q", "--allow-empty", "-m", "Peering repository")
	gitCLI(w, "push", "-q", "origin", "HEAD:main")
})

// cluster is one control plane with its agent.
type cluster struct {
	id     string
	cp     *controlplane.ControlPlane
	k8s    client.Client
	stop   context.CancelFunc
	done   chan struct{}
	data   string
	object *gitpeerv1alpha1.PeeringRepository
}

// newCluster starts a control plane, installs the CRDs and the tenant
// ClusterRole, and stores the Git credentials for its agent.
func newCluster(id string) *cluster {
	c := &cluster{id: id, cp: controlplane.Start(GinkgoT()), data: GinkgoT().TempDir()}
	var err error
	c.k8s, err = client.New(c.cp.Config, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	ctx := context.Background()
	crds, err := crd.Load()
	Expect(err).NotTo(HaveOccurred())
	for _, d := range crds {
		Expect(c.k8s.Create(ctx, d)).To(Succeed())
	}
	for _, d := range crds {
		Eventually(func(g Gomega) {
			got := &apiextensionsv1.CustomResourceDefinition{}
			g.Expect(c.k8s.Get(ctx, client.ObjectKeyFromObject(d), got)).To(Succeed())
			established := false
			for _, cond := range got.Status.Conditions {
				established = established || (cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue)
			}
			g.Expect(established).To(BeTrue())
		}).Should(Succeed())
	}
	Expect(c.k8s.Create(ctx, tenantClusterRole())).To(Succeed())
	Expect(c.k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: agentNamespace}})).To(Succeed())
	Expect(c.k8s.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: agentNamespace, Name: "git"},
		Data:       map[string][]byte{"identity": gitSrv.ClientKey, "known_hosts": gitSrv.KnownHosts},
	})).To(Succeed())
	return c
}

// tenantClusterRole is Liqo's remote control-plane role, limited as Liqo's is.
func tenantClusterRole() *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: gitpeerv1alpha1.DefaultClusterRoleName},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"authentication.liqo.io"}, Resources: []string{"resourceslices", "renews"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
			{APIGroups: []string{"offloading.liqo.io"}, Resources: []string{"namespacemaps"}, Verbs: []string{"get", "list", "watch"}},
		},
	}
}

// apply creates the cluster's PeeringRepository.
func (c *cluster) apply(mutate func(spec *gitpeerv1alpha1.PeeringRepositorySpec)) {
	obj := &gitpeerv1alpha1.PeeringRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: agentNamespace, Name: "peering"},
		Spec: gitpeerv1alpha1.PeeringRepositorySpec{
			URL: repo.SSHURL, ClusterID: authv1beta1.ClusterID(c.id),
			Interval:  &metav1.Duration{Duration: time.Second},
			SecretRef: &meta.LocalObjectReference{Name: "git"},
		},
	}
	mutate(&obj.Spec)
	Expect(c.k8s.Create(context.Background(), obj)).To(Succeed())
	c.object = obj
}

// startAgent runs the cluster's agent (a controller manager) until stopAgent.
func (c *cluster) startAgent() {
	mgr, err := ctrl.NewManager(c.cp.Config, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	Expect(err).NotTo(HaveOccurred())
	r := &reconciler.PeeringRepositoryReconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Config: c.cp.Config,
		Recorder: mgr.GetEventRecorder("gitpeer"), DataDir: c.data,
	}
	Expect(r.SetupWithManager(mgr, reconciler.ControllerOptions{SkipNameValidation: true})).To(Succeed())
	ctx, cancel := context.WithCancel(context.Background())
	c.stop, c.done = cancel, make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(c.done)
		Expect(mgr.Start(ctx)).To(Succeed())
	}()
	DeferCleanup(c.stopAgent)
}

func (c *cluster) stopAgent() {
	if c.stop != nil {
		c.stop()
		<-c.done
		c.stop = nil
	}
}

// gitCLI runs git in dir as a person would.
func gitCLI(dir string, args ...string) string {
	GinkgoHelper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=Rita Reviewer", "-c", "user.email=rita@example.com", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "git %s: %s", strings.Join(args, " "), out)
	return string(out)
}

// show returns a file at ref in the suite's repository, or "" if absent.
func show(ref, path string) string { return showIn(repo, ref, path) }

// showIn returns a file at ref in r, or "" if absent.
func showIn(r gitserver.Repo, ref, path string) string {
	out, err := exec.Command("git", "--git-dir", r.Dir, "show", ref+":"+path).Output()
	if err != nil {
		return ""
	}
	return string(out)
}
