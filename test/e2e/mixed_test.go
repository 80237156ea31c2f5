package e2e

import (
	"context"
	"crypto/x509"
	"os"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/reconciler/whoami"
	"github.com/gitpeer/gitpeer/test/controlplane"
	"github.com/gitpeer/gitpeer/test/liqo"
	"github.com/gitpeer/gitpeer/test/liqoreal"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// Mixed peers: the provider runs a plain Liqo (Liqo's own authentication
// module, test/liqoreal; no gitpeer agent), its admin answers with liqoctl and
// commits by hand; the consumer runs gitpeer in standalone mode. The provider's API server has a serving CA of its own, as k3s and
// managed clusters do, so Liqo's identity.yaml names a CA its client
// certificate does not chain to.
var _ = Describe("Mixed peers", Ordered, func() {
	const mProviderID, mConsumerID = "plain-liqo", "consumer-mixed"
	dir := mProviderID + "/" + mConsumerID + "/"
	tenantNS := authv1beta1.TenantNamespaceName(mConsumerID)
	consumerNS := authv1beta1.TenantNamespaceName(mProviderID)
	identityName := authv1beta1.ControlPlaneIdentityName(mProviderID)
	var cp *controlplane.ControlPlane
	var providerClient client.Client
	var consumer *cluster
	var harness *liqoreal.Harness // the provider's Liqo
	var proxyURL string
	var tunnels *atomic.Int64

	// startLiqo runs Liqo's authentication module on the provider with o.
	startLiqo := func(ctx context.Context, o liqoreal.Options) *liqoreal.Harness {
		o.ClusterID, o.APIServer = mProviderID, cp.URL
		return must(liqoreal.Start(ctx, cp, GinkgoT().TempDir(), o))
	}
	// generateIdentity waits for the Tenant's status to satisfy ok, then
	// commits `liqoctl generate identity`'s output as identity.yaml.
	generateIdentity := func(ctx context.Context, ok func(*authv1beta1.AuthParams) bool) *authv1beta1.Identity {
		tenant := &authv1beta1.Tenant{}
		Eventually(func(g Gomega) {
			g.Expect(providerClient.Get(ctx, client.ObjectKey{Namespace: tenantNS, Name: mConsumerID}, tenant)).To(Succeed())
			g.Expect(tenant.Status.AuthParams).NotTo(BeNil())
			g.Expect(ok(tenant.Status.AuthParams)).To(BeTrue())
		}).WithTimeout(time.Minute).Should(Succeed())
		id, err := liqo.GenerateIdentity(tenant, mProviderID)
		Expect(err).NotTo(HaveOccurred())
		doc, err := yaml.Marshal(id)
		Expect(err).NotTo(HaveOccurred())
		commit("liqoctl generate identity for "+mConsumerID, map[string][]byte{dir + "identity.yaml": doc})
		return id
	}
	// kubeconfig waits for the consumer's kubeconfig Secret to satisfy ok and returns it.
	kubeconfig := func(ctx context.Context, ok func([]byte) bool) []byte {
		var data []byte
		Eventually(func(g Gomega) {
			secret := &corev1.Secret{}
			g.Expect(consumer.k8s.Get(ctx, client.ObjectKey{Namespace: consumerNS, Name: authv1beta1.KubeconfigSecretName(identityName)}, secret)).To(Succeed())
			data = secret.Data[authv1beta1.KubeconfigSecretField]
			g.Expect(ok(data)).To(BeTrue())
		}).WithTimeout(time.Minute).Should(Succeed())
		return data
	}
	peering := func(ctx context.Context, g Gomega) gitpeerv1alpha1.PeeringStatus {
		for _, p := range peeringRepository(ctx, g, consumer).Status.Peerings {
			if p.PeerID == mProviderID {
				return p
			}
		}
		return gitpeerv1alpha1.PeeringStatus{}
	}

	BeforeAll(func(ctx SpecContext) {
		cp = controlplane.StartWith(GinkgoT(), controlplane.Options{SeparateServingCA: true})
		var err error
		providerClient, err = client.New(cp.Config, client.Options{Scheme: scheme})
		Expect(err).NotTo(HaveOccurred())
		proxyURL, tunnels = startConnectProxy()
		harness = startLiqo(ctx, liqoreal.Options{})
		DeferCleanup(func() { harness.Stop() })

		consumer = newCluster(mConsumerID)
		consumer.apply(func(s *gitpeerv1alpha1.PeeringRepositorySpec) {
			// These specs are about the first-use pin (a plain Liqo provider switching to an
			// empty CA): the consumer opts in to trust on first use.
			s.Consumer = &gitpeerv1alpha1.ConsumerSpec{Providers: []authv1beta1.ClusterID{mProviderID}, TrustOnFirstUse: true}
		})
		consumer.startAgent()
	})

	It("accepts liqoctl generate identity's output, whose certificate does not chain to its CA, and gets a working kubeconfig", func(ctx SpecContext) {
		mergeRequest(repo, "gitpeer/"+mProviderID+"/"+mConsumerID, dir)
		// The provider's admin: liqoctl create nonce, committed as nonce.yaml.
		nonce, err := liqo.CreateNonce(ctx, providerClient, mConsumerID)
		Expect(err).NotTo(HaveOccurred())
		doc, err := protocol.NonceDocument(mProviderID, mConsumerID, nonce)
		Expect(err).NotTo(HaveOccurred())
		commit("liqoctl create nonce for "+mConsumerID, map[string][]byte{dir + "nonce.yaml": doc})

		// A reviewer merges the consumer's Tenant, with the consumer's proxy; the provider's admin
		// applies it, Liqo issues and copies the proxyURL into the status.
		review := "gitpeer/" + mProviderID + "/" + mConsumerID
		Eventually(func() string { return show(review, dir+"tenant.yaml") }).WithTimeout(time.Minute).ShouldNot(BeEmpty())
		mergeWithProxy(review, dir, proxyURL)
		tenant := &authv1beta1.Tenant{}
		Expect(yaml.UnmarshalStrict([]byte(show("main", dir+"tenant.yaml")), tenant)).To(Succeed())
		tenant.Namespace = tenantNS
		Expect(providerClient.Create(ctx, tenant)).To(Succeed(), "Liqo's webhooks admit the Tenant")

		id := generateIdentity(ctx, func(ap *authv1beta1.AuthParams) bool { return len(ap.SignedCRT) > 0 })
		ap := id.Spec.AuthParams
		Expect(ap.CA).To(Equal(cp.ServingCAPEM), "Liqo names the API server's serving CA")
		key, err := crypto.ParsePublicKey(tenant.Spec.PublicKey)
		Expect(err).NotTo(HaveOccurred())
		_, err = crypto.VerifyClientCertificate(ap.SignedCRT, ap.CA, key, time.Now())
		Expect(err).To(MatchError(ContainSubstring("does not chain to the CA")), "the scenario: a certificate that does not chain to the Identity's CA")

		data := kubeconfig(ctx, func([]byte) bool { return true })
		Expect(whoami.Kubeconfig(ctx, data)).To(Equal(mConsumerID))
		applied := &authv1beta1.Identity{}
		Expect(consumer.k8s.Get(ctx, client.ObjectKey{Namespace: consumerNS, Name: identityName}, applied)).To(Succeed())
		Expect(applied.Spec).To(Equal(id.Spec), "the Identity applied is liqoctl's, unchanged")
		Expect(applied.Spec.AuthParams.ProxyURL).To(HaveValue(Equal(proxyURL)))
		Expect(tunnels.Load()).To(BeNumerically(">", 0), "the consumer proved its kubeconfig through the proxy")
		Eventually(func(g Gomega) gitpeerv1alpha1.PeeringPhase { return peering(ctx, g).Phase }).WithTimeout(30 * time.Second).Should(Equal(gitpeerv1alpha1.PhaseReady))
		ns := &corev1.Namespace{}
		Expect(consumer.k8s.Get(ctx, client.ObjectKey{Name: consumerNS}, ns)).To(Succeed())
		Expect(ns.Annotations).To(HaveKey(vocabulary.PinnedProviderAnnotation))
		for _, l := range authv1beta1.PodSecurityLabels {
			Expect(ns.Labels).To(HaveKeyWithValue(l, authv1beta1.PodSecurityPrivileged))
		}
	})

	It("takes an empty CA (a system-trusted API server) only after an explicit re-pin, and then verifies the server with the system roots", func(ctx SpecContext) {
		trustAsSystemRoot(cp.ServingCAPEM)
		before := kubeconfig(ctx, func([]byte) bool { return true })
		// Liqo restarted with --advertise-api-server-trusted-ca: the Tenant status loses its CA.
		harness.Stop()
		harness = startLiqo(ctx, liqoreal.Options{TrustedCA: true})
		id := generateIdentity(ctx, func(ap *authv1beta1.AuthParams) bool { return len(ap.CA) == 0 })
		Expect(id.Spec.AuthParams.CA).To(BeEmpty())

		Eventually(func(g Gomega) string { return peering(ctx, g).Message }).WithTimeout(time.Minute).
			Should(ContainSubstring("CA (none: system roots) is not the API server and CA pinned"))
		Expect(kubeconfig(ctx, func([]byte) bool { return true })).To(Equal(before), "the kubeconfig in use is kept")

		// The admin re-pins, as the message says.
		ns := &corev1.Namespace{}
		Expect(consumer.k8s.Get(ctx, client.ObjectKey{Name: consumerNS}, ns)).To(Succeed())
		patch := client.MergeFrom(ns.DeepCopy())
		delete(ns.Annotations, vocabulary.PinnedProviderAnnotation)
		Expect(consumer.k8s.Patch(ctx, ns, patch)).To(Succeed())

		data := kubeconfig(ctx, func(data []byte) bool {
			kc, err := clientcmd.Load(data)
			return err == nil && kc.Clusters[mProviderID] != nil && len(kc.Clusters[mProviderID].CertificateAuthorityData) == 0
		})
		Expect(whoami.Kubeconfig(ctx, data)).To(Equal(mConsumerID))
		Eventually(func(g Gomega) gitpeerv1alpha1.PeeringPhase { return peering(ctx, g).Phase }).WithTimeout(30 * time.Second).Should(Equal(gitpeerv1alpha1.PhaseReady))
	})
})

var fallbackRoots sync.Once

// trustAsSystemRoot makes caPEM this process's system roots, as a publicly
// trusted CA is on a real consumer: Go's fallback roots, forced over the
// machine's bundle (GODEBUG x509usefallbackroots=1). Only TLS clients without
// their own CA (an empty Identity CA) use them. Once per process.
func trustAsSystemRoot(caPEM []byte) {
	GinkgoHelper()
	pool := x509.NewCertPool()
	Expect(pool.AppendCertsFromPEM(caPEM)).To(BeTrue())
	fallbackRoots.Do(func() {
		old, had := os.LookupEnv("GODEBUG")
		Expect(os.Setenv("GODEBUG", "x509usefallbackroots=1")).To(Succeed())
		x509.SetFallbackRoots(pool)
		if had {
			Expect(os.Setenv("GODEBUG", old)).To(Succeed())
		} else {
			Expect(os.Unsetenv("GODEBUG")).To(Succeed())
		}
	})
}
