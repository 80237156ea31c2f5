package liqo_test

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitpeer/gitpeer/test/controlplane"
	"github.com/gitpeer/gitpeer/test/crdinstall"
	"github.com/gitpeer/gitpeer/test/liqo"
	"github.com/gitpeer/gitpeer/test/sandbox"
)

func TestLiqoDouble(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Liqo double")
}

// cluster is one control plane with the double running on it.
type cluster struct {
	id     string
	cp     *controlplane.ControlPlane
	client client.Client
	double *liqo.Double
}

var provider, consumer *cluster

// startCluster starts a control plane with Liqo's CRDs, installs the double and
// runs its controllers until the suite ends; peer, when set, is the provider
// the renewal path reads.
func startCluster(ctx context.Context, id string, o liqo.Options, peer *cluster) *cluster {
	cp := controlplane.Start(GinkgoT())
	c, err := client.New(cp.Config, client.Options{Scheme: sandbox.Scheme})
	Expect(err).NotTo(HaveOccurred())
	Expect(crdinstall.Install(ctx, c)).To(Succeed())
	o.ClusterID = id
	d, err := liqo.New(ctx, c, o)
	Expect(err).NotTo(HaveOccurred())
	var reader client.Reader
	if peer != nil {
		reader = peer.client
	}
	stop, err := d.Start(context.Background(), cp.Config, liqo.RunOptions{Scheme: sandbox.Scheme, Provider: reader})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(stop()).To(Succeed()) })
	return &cluster{id: id, cp: cp, client: c, double: d}
}

var _ = BeforeSuite(func(ctx SpecContext) {
	ctrl.SetLogger(GinkgoLogr)
	provider = startCluster(ctx, "double-provider", liqo.Options{APIServer: "https://provider.example:6443"}, nil)
	consumer = startCluster(ctx, "double-consumer", liqo.Options{}, provider)
})
