package e2e

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/test/liqo"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// "Mode switch" with Liqo's own controllers installed later on both sides
// instead of the double's objects: Liqo's tenant and identity controllers
// meet the Tenant and the Identity gitpeer applied in standalone mode. The
// consumer's Identity is Liqo's kind, so Liqo's identity controller takes it
// (docs/liqo.md, "Switching modes").
var _ = Describe("Mode switch on the real Liqo", Ordered, func() {
	const providerID, consumerID = "rmode-p", "rmode-c"
	var prov, consumer *cluster

	BeforeAll(func() { prov, consumer = peerDirect(providerID, consumerID) })

	It("reports ModeChanged on both sides when Liqo arrives; Liqo leaves the provider's Tenant but rewrites the consumer's kubeconfig", func(ctx SpecContext) {
		kubeconfig, tenantYAML := kubeconfigOf(ctx, consumer, providerID), show("main", providerID+"/"+consumerID+"/tenant.yaml")
		for _, c := range []*cluster{prov, consumer} {
			DeferCleanup(startRealLiqo(ctx, c, false).Stop)
		}
		for _, side := range []struct {
			c    *cluster
			peer string
		}{{prov, consumerID}, {consumer, providerID}} {
			Eventually(func(g Gomega) {
				status := map[string]gitpeerv1alpha1.PeeringStatus{}
				for _, p := range peeringRepository(ctx, g, side.c).Status.Peerings {
					status[string(p.PeerID)] = p
				}
				g.Expect(status).To(HaveKeyWithValue(side.peer, And(
					HaveField("Phase", gitpeerv1alpha1.PhaseFailed), HaveField("Reason", vocabulary.ReasonModeChanged))))
			}).WithTimeout(time.Minute).Should(Succeed(), side.c.id)
		}
		By("on the provider, Liqo's tenant controller issues nothing for the standalone Tenant")
		Consistently(func(g Gomega) {
			g.Expect(show("main", providerID+"/"+consumerID+"/tenant.yaml")).To(Equal(tenantYAML))
			var csrs certificatesv1.CertificateSigningRequestList
			g.Expect(prov.k8s.List(ctx, &csrs)).To(Succeed())
			for _, csr := range csrs.Items {
				g.Expect(csr.Labels).NotTo(HaveKey(liqo.TenantCSRLabel), "Liqo issued for the standalone Tenant: CSR %s", csr.Name)
			}
		}).WithTimeout(5 * time.Second).Should(Succeed())

		By("on the consumer, Liqo's identity controller rewrites the kubeconfig Secret of the standalone Identity with Liqo's key: access stops at once (the double never showed it)")
		Eventually(func() []byte { return kubeconfigOf(ctx, consumer, providerID) }).WithTimeout(30 * time.Second).ShouldNot(Equal(kubeconfig))
		cfg := must(clientcmd.RESTConfigFromKubeConfig(kubeconfigOf(ctx, consumer, providerID)))
		_, err := rest.TLSConfigFor(cfg)
		Expect(err).To(MatchError(ContainSubstring("private key does not match public key")))
	})
})
