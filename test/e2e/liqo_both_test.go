package e2e

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/reconciler/whoami"
	liqodouble "github.com/gitpeer/gitpeer/test/liqo"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// Both clusters in Liqo mode, each beside the Liqo double: gitpeer on both
// sides only moves the files and gates approval; the provider's Liqo issues
// and renews, the consumer's Liqo signs and builds the kubeconfig. A renewal
// by the provider's Liqo reaches the consumer through exactly one new
// identity.yaml.
//
// The handshake runs on Liqo's own controllers in "Liqo mode on the real
// Liqo" (liqo_real_consumer_test.go); the double stays here for the renewal,
// which needs its clock.
var _ = Describe("Liqo on both sides", Ordered, func() {
	const bProviderID, bConsumerID = "liqob-p", "liqob-c"
	dir := bProviderID + "/" + bConsumerID + "/"
	consumerNS := authv1beta1.TenantNamespaceName(bProviderID)
	identityKey := client.ObjectKey{Namespace: consumerNS, Name: authv1beta1.ControlPlaneIdentityName(bProviderID)}
	tenantKey := client.ObjectKey{Namespace: authv1beta1.TenantNamespaceName(bConsumerID), Name: bConsumerID}
	var provider, consumer *cluster
	var double *liqodouble.Double // the consumer's Liqo
	var clock liqoClock           // the provider's Liqo clock
	var serial string

	BeforeAll(func(ctx SpecContext) {
		provider, consumer = newCluster(bProviderID), newCluster(bConsumerID)
		startLiqoDouble(ctx, provider, &clock)
		double = must(liqodouble.New(ctx, consumer.k8s, liqodouble.Options{ClusterID: bConsumerID}))
		DeferCleanup(startDouble(double, consumer.cp.Config, liqodouble.RunOptions{}))
		applyLiqoProvider(provider)
		consumer.apply(func(s *gitpeerv1alpha1.PeeringRepositorySpec) {
			s.Consumer = &gitpeerv1alpha1.ConsumerSpec{Providers: []authv1beta1.ClusterID{bProviderID}, Direct: true, TrustedCAs: anchors(provider)}
			enableLiqo(s)
		})
		provider.startAgent()
		consumer.startAgent()
	})

	It("completes the handshake with Liqo doing all the crypto: no gitpeer CSR, Liqo's key in the Tenant, Liqo's kubeconfig working", func(ctx SpecContext) {
		id := waitIdentity(dir, "")
		serial = must(crypto.ParseCertificatePEM(id.Spec.AuthParams.SignedCRT)).SerialNumber.Text(16)
		expectLiqoKubeconfig(ctx, consumer, bProviderID, bConsumerID, serial)
		expectOnlyLiqoCSRs(ctx, provider, 1)
		tenant := &authv1beta1.Tenant{}
		Expect(provider.k8s.Get(ctx, tenantKey, tenant)).To(Succeed())
		Expect(tenant.Spec.PublicKey).To(Equal(must(crypto.MarshalPublicKeyPEM(double.Key.Public()))))
		Expect(liqodouble.CheckResourceSliceCSR(tenant, "slice-1", must(liqodouble.ResourceSliceCSR(double.Key, "slice-1", bConsumerID)))).To(Succeed(),
			"the consumer's Liqo signs ResourceSlice CSRs with the key the provider's Tenant carries")
	})

	It("carries a renewal by the provider's Liqo to the consumer in one identity.yaml", func(ctx SpecContext) {
		clock.renew(ctx, provider, tenantKey)

		id := waitIdentity(dir, serial)
		renewed := must(crypto.ParseCertificatePEM(id.Spec.AuthParams.SignedCRT)).SerialNumber.Text(16)
		Consistently(func() []string { return identityCommits(dir) }).WithTimeout(5*time.Second).Should(HaveLen(2),
			"one commit for the issued certificate, one for the renewed")
		Eventually(func(g Gomega) {
			identity := &authv1beta1.Identity{}
			g.Expect(consumer.k8s.Get(ctx, identityKey, identity)).To(Succeed())
			g.Expect(identity.Spec.AuthParams.SignedCRT).To(Equal(id.Spec.AuthParams.SignedCRT))
		}).WithTimeout(time.Minute).Should(Succeed())
		expectLiqoKubeconfig(ctx, consumer, bProviderID, bConsumerID, renewed)
	})
})

// expectLiqoKubeconfig waits until the consumer's peering is Ready on Liqo's
// kubeconfig Secret for the certificate serial, and checks that the Secret is
// Liqo's (built with the double's key, not labelled as gitpeer's) and works as
// the consumer.
func expectLiqoKubeconfig(ctx SpecContext, consumer *cluster, providerID, consumerID, serial string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		g.Expect(peeringRepository(ctx, g, consumer).Status.Peerings).To(ContainElement(And(
			HaveField("Phase", gitpeerv1alpha1.PhaseReady), HaveField("Message", ContainSubstring("Liqo's kubeconfig Secret")))))
		ns := authv1beta1.TenantNamespaceName(authv1beta1.ClusterID(providerID))
		secret := &corev1.Secret{}
		g.Expect(consumer.k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: authv1beta1.KubeconfigSecretName(authv1beta1.ControlPlaneIdentityName(authv1beta1.ClusterID(providerID)))}, secret)).To(Succeed())
		g.Expect(secret.Labels).NotTo(HaveKey(vocabulary.ManagedByLabel), "gitpeer wrote Liqo's kubeconfig Secret")
		cert, err := kubeconfigCert(consumer, providerID)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(cert.SerialNumber.Text(16)).To(Equal(serial))
		g.Expect(whoami.Kubeconfig(ctx, secret.Data[authv1beta1.KubeconfigSecretField])).To(Equal(consumerID))
	}).WithTimeout(2 * time.Minute).Should(Succeed())
}
