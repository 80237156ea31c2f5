package controlplane_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitpeer/gitpeer/test/controlplane"
)

var (
	cp  *controlplane.ControlPlane
	k8s client.Client
)

func TestControlPlane(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Control-plane harness")
}

var _ = BeforeSuite(func() {
	cp = controlplane.Start(GinkgoT())
	GinkgoWriter.Printf("control plane ready in %s\n", cp.StartupTime)
	var err error
	k8s, err = client.New(cp.Config, client.Options{})
	Expect(err).NotTo(HaveOccurred())
})

// BenchmarkStart measures how long one control plane takes to become ready
// (etcd, kube-apiserver /readyz, and the controller-manager working).
func BenchmarkStart(b *testing.B) {
	for b.Loop() {
		c := controlplane.Start(b)
		b.ReportMetric(c.StartupTime.Seconds(), "s/ready")
		c.Stop()
	}
}
