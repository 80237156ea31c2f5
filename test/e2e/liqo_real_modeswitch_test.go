package e2e

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/test/liqo"
	"github.com/gitpeer/gitpeer/test/liqoreal"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// A peering made in standalone mode, then Liqo's own controllers installed
// on both sides: gitpeer leaves the peering alone until a person accepts the
// switch, and says so; Liqo's tenant and identity controllers meet the Tenant
// and the Identity gitpeer applied in standalone mode. The consumer's
// Identity is Liqo's kind, so Liqo's identity controller takes it
// (docs/liqo.md, "Switching modes").
var _ = Describe("Mode switch on the real Liqo", Ordered, func() {
	const providerID, consumerID = "rmode-p", "rmode-c"
	var prov, consumer *cluster
	var liqos []*liqoreal.Harness // started by the first spec, running until the last

	// namespaceOf is the tenant namespace of peer on c.
	namespaceOf := func(ctx SpecContext, g Gomega, c *cluster, peer string) *corev1.Namespace {
		ns := &corev1.Namespace{}
		g.Expect(c.k8s.Get(ctx, client.ObjectKey{Name: authv1beta1.TenantNamespaceName(authv1beta1.ClusterID(peer))}, ns)).To(Succeed())
		return ns
	}
	peeringsOf := func(ctx SpecContext, g Gomega, c *cluster) map[string]gitpeerv1alpha1.PeeringStatus {
		out := map[string]gitpeerv1alpha1.PeeringStatus{}
		for _, p := range peeringRepository(ctx, g, c).Status.Peerings {
			out[string(p.PeerID)] = p
		}
		return out
	}
	sides := func() []struct {
		c    *cluster
		peer string
	} {
		return []struct {
			c    *cluster
			peer string
		}{{prov, consumerID}, {consumer, providerID}}
	}

	BeforeAll(func() {
		prov, consumer = peerDirect(providerID, consumerID)
		DeferCleanup(func() {
			for _, h := range liqos {
				h.Stop()
			}
		})
	})

	It("reports ModeChanged on both sides when Liqo arrives; Liqo leaves the provider's Tenant but rewrites the consumer's kubeconfig", func(ctx SpecContext) {
		kubeconfig, tenantYAML := kubeconfigOf(ctx, consumer, providerID), show("main", providerID+"/"+consumerID+"/tenant.yaml")
		for _, side := range sides() {
			Expect(namespaceOf(ctx, Default, side.c, side.peer).Annotations).To(HaveKeyWithValue(vocabulary.ModeAnnotation, gitpeerv1alpha1.PeeringModeStandalone))
		}
		for _, c := range []*cluster{prov, consumer} {
			liqos = append(liqos, startRealLiqo(ctx, c, false))
		}
		for _, side := range sides() {
			Eventually(func(g Gomega) {
				g.Expect(peeringsOf(ctx, g, side.c)).To(HaveKeyWithValue(side.peer, And(
					HaveField("Phase", gitpeerv1alpha1.PhaseFailed), HaveField("Reason", vocabulary.ReasonModeChanged),
					HaveField("Message", ContainSubstring("was made in standalone mode but this cluster now runs in liqo mode")))))
				g.Expect(conditionOf(peeringRepository(ctx, g, side.c), gitpeerv1alpha1.PeeringsHealthyCondition)).To(HaveField("Status", metav1.ConditionFalse))
			}).WithTimeout(time.Minute).Should(Succeed(), side.c.id)
			expectEvent(ctx, side.c, vocabulary.ReasonModeChanged, gitpeerv1alpha1.SwitchModeAnnotationPrefix+side.peer+"="+gitpeerv1alpha1.PeeringModeLiqo)
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

		By("on the consumer, Liqo's identity controller rewrites the kubeconfig Secret of the standalone Identity with Liqo's key: access stops at once")
		Eventually(func() []byte { return kubeconfigOf(ctx, consumer, providerID) }).WithTimeout(30 * time.Second).ShouldNot(Equal(kubeconfig))
		cfg := must(clientcmd.RESTConfigFromKubeConfig(kubeconfigOf(ctx, consumer, providerID)))
		_, err := rest.TLSConfigFor(cfg)
		Expect(err).To(MatchError(ContainSubstring("private key does not match public key")))
	})

	It("records the new mode once a person accepts the switch", func(ctx SpecContext) {
		for _, side := range sides() {
			annotateRepository(ctx, side.c, gitpeerv1alpha1.SwitchModeAnnotationPrefix+side.peer, gitpeerv1alpha1.PeeringModeLiqo)
			Eventually(func(g Gomega) {
				g.Expect(namespaceOf(ctx, g, side.c, side.peer).Annotations).To(HaveKeyWithValue(vocabulary.ModeAnnotation, gitpeerv1alpha1.PeeringModeLiqo))
				g.Expect(peeringRepository(ctx, g, side.c).Annotations).NotTo(HaveKey(gitpeerv1alpha1.SwitchModeAnnotationPrefix + side.peer))
				g.Expect(peeringsOf(ctx, g, side.c)).To(HaveKeyWithValue(side.peer, HaveField("Reason", Not(Equal(vocabulary.ReasonModeChanged)))))
			}).WithTimeout(time.Minute).Should(Succeed(), side.c.id)
		}
	})
})
