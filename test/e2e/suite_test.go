// Package e2e runs the whole handshake between two real control planes
// through a real Git server over SSH, with the agents in this process.
package e2e

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/test/controlplane"
	"github.com/gitpeer/gitpeer/test/gitserver"
	"github.com/gitpeer/gitpeer/test/sandbox"
)

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "gitpeer end to end")
}

const agentNamespace = sandbox.AgentNamespace

var (
	scheme = sandbox.Scheme
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

// cluster is one control plane prepared by test/sandbox, with its agent.
type cluster struct {
	id     string
	cp     *controlplane.ControlPlane
	k8s    client.Client
	sb     *sandbox.Cluster
	object *gitpeerv1alpha1.PeeringRepository
}

// newCluster starts a control plane, installs the CRDs and the tenant
// ClusterRole, and stores the Git credentials for its agent.
func newCluster(id string) *cluster { return newClusterWith(id, controlplane.Options{}) }

// newClusterWith is newCluster on a control plane set up with o.
func newClusterWith(id string, o controlplane.Options) *cluster {
	cp := controlplane.StartWith(GinkgoT(), o)
	sb, err := sandbox.Prepare(context.Background(), id, cp, gitSrv, GinkgoT().TempDir())
	Expect(err).NotTo(HaveOccurred())
	return &cluster{id: id, cp: cp, k8s: sb.Client, sb: sb}
}

// apply creates the cluster's PeeringRepository for the suite's repository.
func (c *cluster) apply(mutate func(spec *gitpeerv1alpha1.PeeringRepositorySpec)) {
	obj, err := c.sb.Apply(context.Background(), repo.SSHURL, time.Second, mutate)
	Expect(err).NotTo(HaveOccurred())
	c.object = obj
}

// startAgent runs the cluster's agent (a controller manager) until stopAgent
// or the end of the current node.
func (c *cluster) startAgent() {
	Expect(c.sb.StartAgent(zap.New(zap.WriteTo(GinkgoWriter)))).To(Succeed())
	DeferCleanup(c.stopAgent)
}

func (c *cluster) stopAgent() { Expect(c.sb.StopAgent()).To(Succeed()) }

// gitCLI runs git in dir as the reviewer would.
func gitCLI(dir string, args ...string) string {
	GinkgoHelper()
	out, err := sandbox.Git(dir, args...)
	Expect(err).NotTo(HaveOccurred())
	return out
}

// show returns a file at ref in the suite's repository, or "" if absent.
func show(ref, path string) string { return showIn(repo, ref, path) }

// showIn returns a file at ref in r, or "" if absent.
func showIn(r gitserver.Repo, ref, path string) string { return sandbox.Show(r.Dir, ref, path) }

// anchors is spec.consumer.trustedCAs anchoring each provider by the hash of
// its CA, as its admin gives it (kubeadm's --discovery-token-ca-cert-hash):
// the serving CA of its control plane, the CA its agent puts in Identities.
func anchors(providers ...*cluster) []gitpeerv1alpha1.TrustedCA {
	out := make([]gitpeerv1alpha1.TrustedCA, len(providers))
	for i, p := range providers {
		out[i] = gitpeerv1alpha1.TrustedCA{Provider: authv1beta1.ClusterID(p.id), CACertHashes: must(crypto.CACertHashes(p.cp.ServingCAPEM))}
	}
	return out
}
