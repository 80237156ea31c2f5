package e2e

import (
	"bytes"
	"context"
	gocrypto "crypto"
	"crypto/rsa"
	"encoding/base64"
	"errors"
	"io"
	"net"
	"net/url"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/reconciler/whoami"
	"github.com/gitpeer/gitpeer/test/liqoreal"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// Liqo's authentication settings a user sets in its Helm chart, on Liqo's own
// controllers (the liqo-auth-harness) on both sides, gitpeer in Liqo mode on
// both: one peering, the provider's Liqo restarted with each setting. Liqo's
// tenant controller recomputes the Tenant's authParams at start (liqotech/liqo
// v1.2.0 tenant_controller.go, ForgeAuthParams), the provider commits them as
// identity.yaml, and the consumer's Liqo builds its kubeconfig from them.
var _ = Describe("Liqo settings on the real Liqo", Ordered, func() {
	const providerID, consumerID = "set-p", "set-c"
	dir := providerID + "/" + consumerID + "/"
	consumerNS := authv1beta1.TenantNamespaceName(providerID)
	identityKey := client.ObjectKey{Namespace: consumerNS, Name: authv1beta1.ControlPlaneIdentityName(providerID)}
	var provider, consumer *cluster
	var harness *liqoreal.Harness // the provider's Liqo
	// bundle is an apiServer.ca of two CAs: the provider's serving CA and another.
	var bundle []byte

	// restartLiqo restarts the provider's Liqo with o (its cluster ID added).
	restartLiqo := func(ctx context.Context, o liqoreal.Options) {
		harness.Stop()
		o.ClusterID = providerID
		harness = must(liqoreal.Start(ctx, provider.cp, GinkgoT().TempDir(), o))
	}

	BeforeAll(func(ctx SpecContext) {
		provider, consumer = newCluster(providerID), newCluster(consumerID)
		// TLS compatibility mode from the start on both sides: Liqo creates RSA keys once.
		harness = must(liqoreal.Start(ctx, provider.cp, GinkgoT().TempDir(), liqoreal.Options{ClusterID: providerID, APIServer: provider.cp.URL, TLSCompatibilityMode: true}))
		DeferCleanup(func() { harness.Stop() })
		consumerLiqo := must(liqoreal.Start(ctx, consumer.cp, GinkgoT().TempDir(), liqoreal.Options{ClusterID: consumerID, TLSCompatibilityMode: true}))
		DeferCleanup(consumerLiqo.Stop)
		bundle = append(append([]byte{}, provider.cp.ServingCAPEM...), consumer.cp.ServingCAPEM...)
		if len(bundle)%3 == 0 {
			// Padded base64, always: Liqo then advertises it with NUL bytes (liqoAdvertisedCA).
			bundle = append(bundle, '\n')
		}
		applyLiqoProvider(provider)
		consumer.apply(func(s *gitpeerv1alpha1.PeeringRepositorySpec) {
			s.Consumer = &gitpeerv1alpha1.ConsumerSpec{Providers: []authv1beta1.ClusterID{providerID}, Direct: true,
				TrustedCAs: []gitpeerv1alpha1.TrustedCA{{Provider: providerID, CACertHashes: must(crypto.CACertHashes(bundle))}}}
			enableLiqo(s)
		})
		provider.startAgent()
		consumer.startAgent()
	})

	// expectAdvertised waits until identity.yaml on the branch carries what
	// the provider's Liqo advertises (apiServer, ca), byte for byte as in
	// the Tenant's status; then, when the consumer can trust it, until the
	// consumer's Identity and Liqo's kubeconfig carry the same and the
	// kubeconfig authenticates as the consumer.
	expectAdvertised := func(ctx context.Context, apiServer string, ca []byte) *authv1beta1.Identity {
		GinkgoHelper()
		var id *authv1beta1.Identity
		Eventually(func(g Gomega) {
			id = &authv1beta1.Identity{} // fresh: a field the file omits must not keep an earlier value
			g.Expect(yaml.UnmarshalStrict([]byte(show("main", dir+"identity.yaml")), id)).To(Succeed())
			g.Expect(id.Spec.AuthParams.APIServer).To(Equal(apiServer))
			g.Expect(bytes.Equal(id.Spec.AuthParams.CA, ca)).To(BeTrue(), "identity.yaml's CA")
		}).WithTimeout(2 * time.Minute).Should(Succeed())
		tenant := &authv1beta1.Tenant{}
		Expect(provider.k8s.Get(ctx, client.ObjectKey{Namespace: authv1beta1.TenantNamespaceName(consumerID), Name: consumerID}, tenant)).To(Succeed())
		Expect(tenant.Status.AuthParams.APIServer).To(Equal(apiServer))
		Expect(bytes.Equal(tenant.Status.AuthParams.CA, ca)).To(BeTrue(), "the Tenant's CA")
		return id
	}
	expectConsumerUses := func(ctx SpecContext, id *authv1beta1.Identity) {
		GinkgoHelper()
		Eventually(func(g Gomega) {
			identity := &authv1beta1.Identity{}
			g.Expect(consumer.k8s.Get(ctx, identityKey, identity)).To(Succeed())
			g.Expect(identity.Spec).To(Equal(id.Spec))
			cfg := must(clientcmd.Load(liqoKubeconfig(ctx, g, consumer, providerID)))
			for _, c := range cfg.Clusters {
				g.Expect(c.Server).To(Equal(id.Spec.AuthParams.APIServer))
				g.Expect(bytes.Equal(c.CertificateAuthorityData, id.Spec.AuthParams.CA)).To(BeTrue(), "the kubeconfig's CA")
			}
		}).WithTimeout(2 * time.Minute).Should(Succeed())
		expectLiqoKubeconfig(ctx, consumer, providerID, consumerID, must(crypto.ParseCertificatePEM(id.Spec.AuthParams.SignedCRT)).SerialNumber.Text(16))
	}

	It("tlsCompatibilityMode: RSA keys on both sides, through the whole handshake", func(ctx SpecContext) {
		id := expectAdvertised(ctx, provider.cp.URL, provider.cp.ServingCAPEM)
		expectConsumerUses(ctx, id)
		for _, c := range []*cluster{provider, consumer} {
			Expect(liqoKey(ctx, c)).To(BeAssignableToTypeOf(&rsa.PrivateKey{}), "Liqo's key on %s", c.id)
		}
		var tenant authv1beta1.Tenant
		Expect(yaml.Unmarshal([]byte(show("main", dir+"tenant.yaml")), &tenant)).To(Succeed())
		Expect(must(crypto.ParsePublicKey(tenant.Spec.PublicKey))).To(BeAssignableToTypeOf(&rsa.PublicKey{}))
		Expect(must(crypto.ParseCertificatePEM(id.Spec.AuthParams.SignedCRT)).PublicKey).To(BeAssignableToTypeOf(&rsa.PublicKey{}))
	})

	It("apiServer.ca: a CA bundle reaches the consumer byte for byte as Liqo advertises it, NUL bytes of its base64 decoding included", func(ctx SpecContext) {
		restartLiqo(ctx, liqoreal.Options{APIServer: provider.cp.URL, CA: bundle})
		expectConsumerUses(ctx, expectAdvertised(ctx, provider.cp.URL, liqoAdvertisedCA(bundle)))
	})

	It("apiServer.trustedCA: no CA; a consumer anchored by CA hashes refuses it and keeps the kubeconfig in use", func(ctx SpecContext) {
		before := liqoKubeconfig(ctx, Default, consumer, providerID)
		restartLiqo(ctx, liqoreal.Options{APIServer: provider.cp.URL, TrustedCA: true})
		expectAdvertised(ctx, provider.cp.URL, nil)
		Eventually(func(g Gomega) []gitpeerv1alpha1.PeeringStatus {
			return peeringRepository(ctx, g, consumer).Status.Peerings
		}).WithTimeout(time.Minute).Should(ContainElement(And(HaveField("Phase", gitpeerv1alpha1.PhaseFailed),
			HaveField("Message", ContainSubstring("offers no CA (system roots), but spec.consumer.trustedCAs pins the CA hashes")))))
		Expect(liqoKubeconfig(ctx, Default, consumer, providerID)).To(Equal(before))
		Expect(whoami.Kubeconfig(ctx, before)).To(Equal(consumerID))
	})

	It("default: the control-plane node's address, port 6443, and the API server's CA", func(ctx SpecContext) {
		// What Liqo reads without apiServer.address (pkg/utils/apiserver, GetAddressFromMasterNode).
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "control-plane", Labels: map[string]string{"node-role.kubernetes.io/control-plane": ""}}}
		Expect(provider.k8s.Create(ctx, node)).To(Succeed())
		node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}}
		Expect(provider.k8s.Status().Update(ctx, node)).To(Succeed())
		const advertised = "https://127.0.0.1:6443"
		forward("127.0.0.1:6443", must(url.Parse(provider.cp.URL)).Host)
		setProviderSpec(ctx, provider, func(s *gitpeerv1alpha1.ProviderSpec) { s.APIServer = advertised })
		restartLiqo(ctx, liqoreal.Options{})
		expectConsumerUses(ctx, expectAdvertised(ctx, advertised, provider.cp.ServingCAPEM))
	})

	It("apiServer.address: the address set, and the API server's CA", func(ctx SpecContext) {
		setProviderSpec(ctx, provider, func(s *gitpeerv1alpha1.ProviderSpec) { s.APIServer = provider.cp.URL })
		restartLiqo(ctx, liqoreal.Options{APIServer: provider.cp.URL})
		expectConsumerUses(ctx, expectAdvertised(ctx, provider.cp.URL, provider.cp.ServingCAPEM))
	})

	It("restores identity.yaml's API server, CA and proxy when Liqo's renewal rewrites them, keeping Liqo's newer certificate", func(ctx SpecContext) {
		expectConsumerUses(ctx, expectAdvertised(ctx, provider.cp.URL, provider.cp.ServingCAPEM))
		identity := &authv1beta1.Identity{}
		Expect(consumer.k8s.Get(ctx, identityKey, identity)).To(Succeed())
		reviewed := identity.Spec.AuthParams
		time.Sleep(time.Second) // certificates count NotBefore in seconds
		renewed := issueClientCertificate(ctx, provider, liqoKey(ctx, consumer), consumerID)

		By("Liqo's local renewer copying a renewal's whole authParams into Identity.spec: another API server, CA and proxy")
		identity.Spec.AuthParams.SignedCRT = renewed
		identity.Spec.AuthParams.APIServer = "https://127.0.0.1:1"
		identity.Spec.AuthParams.CA = consumer.cp.ServingCAPEM
		identity.Spec.AuthParams.ProxyURL = ptr.To("http://127.0.0.1:1")
		Expect(consumer.k8s.Update(ctx, identity)).To(Succeed())

		expectEvent(ctx, consumer, vocabulary.ReasonAuthParamsDrifted, "spec.authParams.apiServer", "spec.authParams.ca", "spec.authParams.proxyURL")
		want := reviewed.DeepCopy()
		want.SignedCRT = renewed
		Eventually(func(g Gomega) authv1beta1.AuthParams {
			g.Expect(consumer.k8s.Get(ctx, identityKey, identity)).To(Succeed())
			return identity.Spec.AuthParams
		}).WithTimeout(time.Minute).Should(Equal(*want))
		expectLiqoKubeconfig(ctx, consumer, providerID, consumerID, must(crypto.ParseCertificatePEM(renewed)).SerialNumber.Text(16))
	})

	It("reports a stray Tenant in the tenant namespace, which Liqo's webhook lets no second Tenant join, and goes on once it is gone", func(ctx SpecContext) {
		const strayID = "set-s"
		sdir := providerID + "/" + strayID + "/"
		ns := authv1beta1.TenantNamespaceName(strayID)
		key := newClusterKey()
		commit("Request peering of "+strayID, map[string][]byte{sdir + "request.yaml": requestFor(providerID, strayID, key)})
		nonce := waitNonceAt(sdir, "")

		By("a Tenant for the same cluster under another name, as an earlier `liqoctl peer` or an admin left it")
		stray := &authv1beta1.Tenant{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: strayID + "-liqoctl",
			Labels: map[string]string{authv1beta1.RemoteClusterIDLabel: strayID}}, Spec: authv1beta1.TenantSpec{ClusterID: strayID}}
		Expect(provider.k8s.Create(ctx, stray)).To(Succeed())
		commit("Merge pull request: Tenant of "+strayID, map[string][]byte{sdir + "tenant.yaml": tenantDoc(must(protocol.NewTenant(strayID, key, nonce)))})

		Eventually(func(g Gomega) []gitpeerv1alpha1.PeeringStatus {
			return peeringRepository(ctx, g, provider).Status.Peerings
		}).WithTimeout(time.Minute).Should(ContainElement(And(HaveField("PeerID", authv1beta1.ClusterID(strayID)),
			HaveField("Phase", gitpeerv1alpha1.PhaseFailed), HaveField("Reason", vocabulary.ReasonStrayTenant),
			HaveField("Message", ContainSubstring(ns+"/"+stray.Name)))))
		expectEvent(ctx, provider, vocabulary.ReasonStrayTenant, ns+"/"+stray.Name)

		By("the admin deletes it, as the condition says")
		Expect(provider.k8s.Delete(ctx, stray)).To(Succeed())
		Eventually(func() string { return show("main", sdir+"identity.yaml") }).WithTimeout(time.Minute).ShouldNot(BeEmpty())
	})
})

// liqoAdvertisedCA is what Liqo v1.2.0 advertises for apiServer.ca = ca:
// the chart's base64 decoded into a buffer of DecodedLen bytes, all kept
// (cmd/liqo-controller-manager/modules/authentication.go), so one or two NUL
// bytes follow a CA whose base64 is padded.
func liqoAdvertisedCA(ca []byte) []byte {
	return append(append([]byte{}, ca...), make([]byte, base64.StdEncoding.DecodedLen(base64.StdEncoding.EncodedLen(len(ca)))-len(ca))...)
}

// liqoKey is the private key of Liqo's authentication-keys on c.
func liqoKey(ctx context.Context, c *cluster) gocrypto.Signer {
	GinkgoHelper()
	secret := &corev1.Secret{}
	Expect(c.k8s.Get(ctx, client.ObjectKey{Namespace: "liqo", Name: "authentication-keys"}, secret)).To(Succeed())
	return must(crypto.ParsePrivateKeyPEM(secret.Data[crypto.PrivateKeyField]))
}

// liqoKubeconfig is the kubeconfig in the Secret Liqo's identity controller
// wrote on consumer for provider.
func liqoKubeconfig(ctx context.Context, g Gomega, consumer *cluster, providerID string) []byte {
	secret := &corev1.Secret{}
	id := authv1beta1.ClusterID(providerID)
	g.Expect(consumer.k8s.Get(ctx, client.ObjectKey{Namespace: authv1beta1.TenantNamespaceName(id),
		Name: authv1beta1.KubeconfigSecretName(authv1beta1.ControlPlaneIdentityName(id))}, secret)).To(Succeed())
	return secret.Data[authv1beta1.KubeconfigSecretField]
}

// forward relays TCP connections from listen to target until the end of the
// node: the provider's API server at the address Liqo advertises by default.
func forward(listen, target string) {
	GinkgoHelper()
	l, err := net.Listen("tcp", listen)
	Expect(err).NotTo(HaveOccurred(), "this spec needs %s free: Liqo's default advertises port 6443", listen)
	DeferCleanup(l.Close)
	go func() {
		for {
			in, err := l.Accept()
			if errors.Is(err, net.ErrClosed) {
				return
			} else if err != nil {
				continue
			}
			go func() {
				defer in.Close()
				out, err := net.Dial("tcp", target)
				if err != nil {
					return
				}
				defer out.Close()
				go func() { _, _ = io.Copy(out, in) }()
				_, _ = io.Copy(in, out)
			}()
		}
	}()
}
