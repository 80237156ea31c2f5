package e2e

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/examples/repofixture"
)

// An attacker with write access to main replaces a consumer's identity.yaml
// with a certificate from a CA of its own, issued for the consumer's real key:
// it verifies on its own, so only the provider's CA hash the consumer is
// anchored by (spec.consumer.trustedCAs) stops it.
var _ = Describe("Pinned provider CA", Ordered, func() {
	const pProviderID, pConsumerID = "provider-p", "consumer-p"
	path := pProviderID + "/" + pConsumerID + "/identity.yaml"
	tenantNS := authv1beta1.TenantNamespaceName(pConsumerID)
	var provider, consumer *cluster
	var kubeconfig []byte

	BeforeAll(func(ctx SpecContext) {
		provider, consumer = peerDirect(pProviderID, pConsumerID)
		kubeconfig = kubeconfigOf(ctx, consumer, pProviderID)
	})

	It("rejects an identity.yaml issued by another CA and keeps the kubeconfig", func(ctx SpecContext) {
		// Without the provider's agent, nothing rewrites identity.yaml behind the attacker.
		provider.stopAgent()

		var tenant authv1beta1.Tenant
		Expect(yaml.Unmarshal([]byte(show("main", pProviderID+"/"+pConsumerID+"/tenant.yaml")), &tenant)).To(Succeed())
		ca := must(repofixture.NewCA("attacker CA", time.Now().Add(-time.Minute), time.Hour))
		// The consumer's own CSR: its real key, CN=consumer-p, O=liqo.io; client auth only.
		cert := must(ca.Issue(tenant.Spec.CSR, time.Now().Add(-time.Minute), time.Hour))
		var identity authv1beta1.Identity
		Expect(yaml.Unmarshal([]byte(show("main", path)), &identity)).To(Succeed())
		identity.Spec.AuthParams.CA, identity.Spec.AuthParams.SignedCRT = ca.PEM, cert
		commit("Replace "+pConsumerID+"'s identity", map[string][]byte{path: must(yaml.Marshal(&identity))})

		expectEvent(ctx, consumer, gitpeerv1alpha1.RejectedReason, path+" rejected", "CA certificate 1 of the Identity has hash "+must(crypto.CACertHashes(ca.PEM))[0]+", not one of the caCertHashes of provider "+pProviderID)
		Eventually(func(g Gomega) {
			g.Expect(peeringPhases(ctx, consumer)).To(HaveKeyWithValue("Consumer/"+pProviderID, gitpeerv1alpha1.PhaseFailed))
		}).WithTimeout(time.Minute).Should(Succeed())
		Consistently(func() []byte {
			return kubeconfigOf(ctx, consumer, pProviderID)
		}).WithTimeout(5 * time.Second).Should(Equal(kubeconfig))
		Expect(can(ctx, clientFor(kubeconfig), "create", "authentication.liqo.io", "resourceslices", tenantNS)).To(BeTrue(),
			"the kept kubeconfig still authenticates to the real provider")
	})

	It("recovers when the provider restores identity.yaml", func(ctx SpecContext) {
		provider.startAgent()
		Eventually(func(g Gomega) {
			g.Expect(peeringPhases(ctx, consumer)).To(HaveKeyWithValue("Consumer/"+pProviderID, gitpeerv1alpha1.PhaseReady))
		}).WithTimeout(time.Minute).Should(Succeed())
		Expect(can(ctx, clientFor(kubeconfigOf(ctx, consumer, pProviderID)), "create", "authentication.liqo.io", "resourceslices", tenantNS)).To(BeTrue())
	})
})
