package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/yaml"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/reconciler/plan/consumer"
	"github.com/gitpeer/gitpeer/reconciler/whoami"
	"github.com/gitpeer/gitpeer/test/controlplane"
	"github.com/gitpeer/gitpeer/test/liqoreal"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// Liqo on both sides, each cluster running Liqo's authentication module and
// Liqo's own CRD replicator (liqotech/liqo v1.2.0 cmd/crd-replicator), the
// provider with short-lived certificates: Liqo's consumer-side renewal, which
// carries Renew objects between the clusters, runs for real. The consumer's
// Liqo keeps a Renew per Identity, the replicator creates it on the provider,
// the provider's Liqo copies the renewed Tenant status into it, the replicator
// brings that back and the consumer's Liqo rewrites the Identity; gitpeer on
// the provider commits the renewal, and the consumer's gitpeer keeps Liqo's
// newer certificate while identity.yaml is behind. Then a revocation, which
// the replicator's finalizers must not hold up.
var _ = Describe("Liqo on both sides with Liqo's CRD replicator", Ordered, func() {
	const pID, cID = "repl-p", "repl-c"
	dir := pID + "/" + cID + "/"
	cNS := authv1beta1.TenantNamespaceName(pID) // the consumer's tenant namespace for the provider
	pNS := authv1beta1.TenantNamespaceName(cID) // the provider's tenant namespace for the consumer
	identityKey := client.ObjectKey{Namespace: cNS, Name: authv1beta1.ControlPlaneIdentityName(pID)}
	secretKey := client.ObjectKey{Namespace: cNS, Name: authv1beta1.KubeconfigSecretName(identityKey.Name)}
	var p, c *cluster
	var first, renewed string // serials of the first and the renewed certificate
	var firstNonce string     // the nonce of the first handshake

	// renewSerial is the serial of the certificate in status.authParams of
	// the Renew named after the Identity in ns of cl ("" while it has none).
	renewSerial := func(g Gomega, cl *cluster, ns string) string {
		renew := &unstructured.Unstructured{}
		renew.SetGroupVersionKind(renewGVK)
		g.Expect(cl.k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: identityKey.Name}, renew)).To(Succeed())
		crt, _, err := unstructured.NestedString(renew.Object, "status", "authParams", "signedCRT")
		g.Expect(err).NotTo(HaveOccurred())
		if crt == "" {
			return ""
		}
		pem, err := base64.StdEncoding.DecodeString(crt)
		g.Expect(err).NotTo(HaveOccurred())
		cert, err := crypto.ParseCertificatePEM(pem)
		g.Expect(err).NotTo(HaveOccurred())
		return cert.SerialNumber.Text(16)
	}
	// identitySerial is the serial of the consumer's Identity.spec certificate.
	identitySerial := func(g Gomega) string {
		identity := &authv1beta1.Identity{}
		g.Expect(c.k8s.Get(context.Background(), identityKey, identity)).To(Succeed())
		cert, err := crypto.ParseCertificatePEM(identity.Spec.AuthParams.SignedCRT)
		g.Expect(err).NotTo(HaveOccurred())
		return cert.SerialNumber.Text(16)
	}

	BeforeAll(func(ctx SpecContext) {
		p = newClusterWith(pID, controlplane.Options{ClusterSigningDuration: liqoSigningDuration})
		c = newCluster(cID)
		for _, cl := range []*cluster{p, c} {
			h := must(liqoreal.Start(ctx, cl.cp, GinkgoT().TempDir(), liqoreal.Options{ClusterID: cl.id, APIServer: cl.cp.URL, Replicator: true}))
			DeferCleanup(h.Stop)
		}
		applyLiqoProvider(p)
		c.apply(func(s *gitpeerv1alpha1.PeeringRepositorySpec) {
			s.Consumer = &gitpeerv1alpha1.ConsumerSpec{Providers: []authv1beta1.ClusterID{pID}, Direct: true, TrustedCAs: anchors(p)}
			enableLiqo(s)
		})
		p.startAgent()
		c.startAgent()
	})

	It("peers, and the replicator carries the consumer's Renew to the provider and Liqo's answer back", func(ctx SpecContext) {
		id := waitIdentity(dir, "")
		first = must(crypto.ParseCertificatePEM(id.Spec.AuthParams.SignedCRT)).SerialNumber.Text(16)
		firstNonce = waitNonceAt(dir, "")
		expectLiqoKubeconfig(ctx, c, pID, cID, first)
		Eventually(func(g Gomega) {
			g.Expect(renewSerial(g, p, pNS)).To(Equal(first), "the provider's Liqo answered the replicated Renew")
			g.Expect(renewSerial(g, c, cNS)).To(Equal(first), "the replicator brought the answer back")
			secret := &corev1.Secret{}
			g.Expect(c.k8s.Get(ctx, secretKey, secret)).To(Succeed())
			g.Expect(secret.Finalizers).To(ContainElement(consumer.ReplicatorFinalizer), "the replicator replicates with Liqo's kubeconfig Secret")
		}).WithTimeout(time.Minute).Should(Succeed())
	})

	It("renews through the replicator: the consumer keeps Liqo's newer certificate over identity.yaml, then follows the provider's commit", func(ctx SpecContext) {
		By("with the provider's gitpeer stopped, the renewal reaches the consumer only through Liqo's Renew")
		p.stopAgent()
		Eventually(func(g Gomega) {
			renewed = identitySerial(g)
			g.Expect(renewed).NotTo(Equal(first))
			g.Expect(renewSerial(g, c, cNS)).To(Equal(renewed))
		}).WithTimeout(3*time.Minute).WithPolling(2*time.Second).Should(Succeed(), "Liqo renews about a minute after issuing")
		for range 3 {
			requestRound(ctx, c)
		}
		Expect(identitySerial(Default)).To(Equal(renewed), "gitpeer did not undo Liqo's renewal with the older identity.yaml")
		Expect(must(crypto.ParseCertificatePEM(waitIdentity(dir, "").Spec.AuthParams.SignedCRT)).SerialNumber.Text(16)).To(Equal(first),
			"identity.yaml is still behind")
		expectLiqoKubeconfig(ctx, c, pID, cID, renewed)

		By("the provider's gitpeer commits the renewal; the consumer stays on it")
		// Not p.startAgent: its DeferCleanup would stop the agent at the end of this spec; BeforeAll's stops it.
		Expect(p.sb.StartAgent(zap.New(zap.WriteTo(GinkgoWriter)))).To(Succeed())
		id := waitIdentity(dir, first)
		Expect(must(crypto.ParseCertificatePEM(id.Spec.AuthParams.SignedCRT)).SerialNumber.Text(16)).To(Equal(renewed))
		Expect(identityCommits(dir)[0]).To(ContainSubstring("Gitpeer-Action: renew-identity"))
		requestRound(ctx, c)
		expectLiqoKubeconfig(ctx, c, pID, cID, renewed)
	})

	It("revokes with the replicator running: its finalizers on the kubeconfig Secret and the Renews hold nothing up", func(ctx SpecContext) {
		revokeByGit(dir, cID)
		Eventually(func() []string { return bindingsNaming(ctx, p, cID) }).WithTimeout(time.Minute).Should(BeEmpty())
		Eventually(func(g Gomega) {
			g.Expect(revokedSerials(ctx, p, cID)).To(ContainElements(first, renewed), "the serials Liqo issued and renewed are revoked")
		}).WithTimeout(time.Minute).Should(Succeed())
		expectGone(ctx, c, identityObjects(cNS, identityKey.Name)...)
		Eventually(func(g Gomega) {
			g.Expect(peeringRepository(ctx, g, c).Status.Peerings).To(ContainElement(And(HaveField("PeerID", authv1beta1.ClusterID(pID)), HaveField("Phase", gitpeerv1alpha1.PhaseRevoked))))
		}).WithTimeout(time.Minute).Should(Succeed())
		By("the provider's replicated Renew goes too")
		expectGone(ctx, p, identityObjects(pNS, identityKey.Name)[0])
	})

	It("re-peers with the replicator running: tenant.yaml on a new nonce, a new certificate in a working kubeconfig, none of the old serials", func(ctx SpecContext) {
		old := append(revokedSerials(ctx, p, cID), first, renewed)
		annotateRepository(ctx, p, gitpeerv1alpha1.RevivalAnnotationPrefix+cID, gitpeerv1alpha1.AcceptRevivalValue)
		annotateRepository(ctx, c, gitpeerv1alpha1.RequestAgainAnnotation, pID)
		nonce := waitNonceAt(dir, firstNonce)
		Eventually(func(g Gomega) {
			var tenant authv1beta1.Tenant
			g.Expect(yaml.Unmarshal([]byte(show("main", dir+"tenant.yaml")), &tenant)).To(Succeed())
			key, err := crypto.ParsePublicKey(tenant.Spec.PublicKey)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(crypto.VerifyNonceSignature(key, nonce, tenant.Spec.Signature)).To(Succeed())
		}).WithTimeout(time.Minute).Should(Succeed(), "tenant.yaml signs the new nonce")

		id := waitIdentity(dir, "")
		serial := must(crypto.ParseCertificatePEM(id.Spec.AuthParams.SignedCRT)).SerialNumber.Text(16)
		Expect(old).NotTo(ContainElement(serial), "Liqo issued a new certificate")
		expectLiqoKubeconfig(ctx, c, pID, cID, serial)
		By("the replicator carries the new Identity's Renew to the provider again")
		Eventually(func(g Gomega) string { return renewSerial(g, p, pNS) }).WithTimeout(time.Minute).ShouldNot(BeElementOf(append(old, "")))
	})
})

// identityObjects are the objects of the control-plane Identity named
// identity in the tenant namespace ns of a consumer: Liqo's Renew for it
// (first), the Identity, and Liqo's kubeconfig Secret.
func identityObjects(ns, identity string) []client.Object {
	renew := &unstructured.Unstructured{}
	renew.SetGroupVersionKind(renewGVK)
	renew.SetNamespace(ns)
	renew.SetName(identity)
	return []client.Object{renew,
		&authv1beta1.Identity{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: identity}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: authv1beta1.KubeconfigSecretName(identity)}},
	}
}

// expectGone waits until each of objs is absent from cl.
func expectGone(ctx context.Context, cl *cluster, objs ...client.Object) {
	GinkgoHelper()
	for _, obj := range objs {
		Eventually(func() string { return presence(ctx, cl, obj) }).WithTimeout(time.Minute).Should(BeEmpty(), "%T %s", obj, obj.GetName())
	}
}

// presence is "" when obj is absent from cl, or else its deletion timestamp
// and finalizers: what holds it.
func presence(ctx context.Context, cl *cluster, obj client.Object) string {
	if err := cl.k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj); apierrors.IsNotFound(err) {
		return ""
	} else if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("present, deletionTimestamp %v, finalizers %v", obj.GetDeletionTimestamp(), obj.GetFinalizers())
}

// expectLiqoKubeconfig waits until the consumer's peering is Ready on Liqo's
// kubeconfig Secret for the certificate serial, and checks that the Secret is
// Liqo's (not labelled as gitpeer's) and works as the consumer.
func expectLiqoKubeconfig(ctx context.Context, consumer *cluster, providerID, consumerID, serial string) {
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
