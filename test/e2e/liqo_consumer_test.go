package e2e

import (
	"context"
	gocrypto "crypto"
	"strings"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	certv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/yaml"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1/documents"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/reconciler/whoami"
	liqodouble "github.com/gitpeer/gitpeer/test/liqo"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// A consumer in Liqo mode beside the Liqo double (test/liqo): Liqo's nonce
// signer signs the provider's nonce and Liqo's identity controller writes the
// kubeconfig, with Liqo's key; gitpeer moves the files, applies the Identity
// and proves Liqo's kubeconfig. The provider is a gitpeer provider in
// standalone mode: the files are the same in both modes.
//
// The same handshake, Liqo's restarts and the revocation run on Liqo's own
// controllers in "Liqo mode on the real Liqo" (liqo_real_consumer_test.go),
// which also checks that the double's identity controller writes the
// kubeconfig the real one writes. The double stays here for Liqo's renewer:
// on the real Liqo it needs the CRD replicator (Renew objects replicated
// between the clusters), which liqo-auth-harness does not run.
var _ = Describe("Consumer in Liqo mode", Ordered, func() {
	const lProviderID, lConsumerID = "liqoc-p", "liqoc-c"
	dir := lProviderID + "/" + lConsumerID + "/"
	consumerNS := authv1beta1.TenantNamespaceName(lProviderID)
	identityKey := client.ObjectKey{Namespace: consumerNS, Name: authv1beta1.ControlPlaneIdentityName(lProviderID)}
	kubeconfigKey := client.ObjectKey{Namespace: consumerNS, Name: authv1beta1.KubeconfigSecretName(identityKey.Name)}
	var provider, consumer *cluster
	var double *liqodouble.Double

	BeforeAll(func(ctx SpecContext) {
		provider, consumer = newCluster(lProviderID), newCluster(lConsumerID)
		double = must(liqodouble.New(ctx, consumer.k8s, liqodouble.Options{ClusterID: lConsumerID}))
		DeferCleanup(startDouble(double, consumer.cp.Config, liqodouble.RunOptions{}))
		provider.apply(func(s *gitpeerv1alpha1.PeeringRepositorySpec) {
			s.Provider = &gitpeerv1alpha1.ProviderSpec{Enabled: true, APIServer: provider.cp.URL}
		})
		consumer.apply(func(s *gitpeerv1alpha1.PeeringRepositorySpec) {
			s.Consumer = &gitpeerv1alpha1.ConsumerSpec{Providers: []authv1beta1.ClusterID{lProviderID}, Direct: true, TrustedCAs: anchors(provider)}
		})
		provider.startAgent()
		consumer.startAgent()
	})

	It("completes the handshake with Liqo's nonce signer and identity controller; the kubeconfig is Liqo's and works", func(ctx SpecContext) {
		Eventually(func() string { return show("main", dir+"identity.yaml") }).WithTimeout(2 * time.Minute).ShouldNot(BeEmpty())
		Eventually(func(g Gomega) {
			g.Expect(peeringRepository(ctx, g, consumer).Status.Peerings).To(ContainElement(And(
				HaveField("Phase", gitpeerv1alpha1.PhaseReady), HaveField("Message", ContainSubstring("Liqo's kubeconfig Secret")))))
		}).WithTimeout(time.Minute).Should(Succeed())

		By("tenant.yaml carrying Liqo's key and the signature Liqo's nonce signer wrote")
		// The nonce tenant.yaml answered: the provider rotates it once it issued (standalone mode).
		proposed := strings.TrimSpace(gitCLI(repo.Dir, "log", "-1", "--format=%H", "--diff-filter=A", "main", "--", dir+"tenant.yaml"))
		var nonce documents.Nonce
		Expect(yaml.Unmarshal([]byte(show(proposed, dir+"nonce.yaml")), &nonce)).To(Succeed())
		var tenant authv1beta1.Tenant
		Expect(yaml.Unmarshal([]byte(show("main", dir+"tenant.yaml")), &tenant)).To(Succeed())
		signed := &corev1.Secret{}
		Expect(consumer.k8s.Get(ctx, client.ObjectKey{Namespace: consumerNS, Name: authv1beta1.SignedNonceSecretName}, signed)).To(Succeed())
		Expect(string(signed.Data[authv1beta1.NonceSecretField])).To(Equal(nonce.Spec.Nonce))
		Expect(crypto.VerifyNonceSignature(double.Key.Public(), nonce.Spec.Nonce, signed.Data[authv1beta1.SignedNonceSecretField])).To(Succeed())
		Expect(tenant.Spec.Signature).To(Equal(signed.Data[authv1beta1.SignedNonceSecretField]))
		Expect(tenant.Spec.PublicKey).To(Equal(must(crypto.MarshalPublicKeyPEM(double.Key.Public()))))

		By("the kubeconfig Secret written by Liqo's identity controller, with Liqo's key, and working")
		identity := &authv1beta1.Identity{}
		Expect(consumer.k8s.Get(ctx, identityKey, identity)).To(Succeed())
		Expect(identity.Status.KubeconfigSecretRef).To(Equal(&corev1.LocalObjectReference{Name: kubeconfigKey.Name}))
		secret := &corev1.Secret{}
		Expect(consumer.k8s.Get(ctx, kubeconfigKey, secret)).To(Succeed())
		Expect(secret.Labels).NotTo(HaveKey(vocabulary.ManagedByLabel), "gitpeer wrote Liqo's kubeconfig Secret")
		cfg := must(clientcmd.Load(secret.Data[authv1beta1.KubeconfigSecretField]))
		liqoKey := must(crypto.MarshalPrivateKeyPEM(double.Key))
		for _, user := range cfg.AuthInfos {
			Expect(user.ClientKeyData).To(Equal(liqoKey))
		}
		Expect(must(whoami.Kubeconfig(ctx, secret.Data[authv1beta1.KubeconfigSecretField]))).To(Equal(lConsumerID))
	})

	It("does not undo a renewal by Liqo's renewer with the older identity.yaml", func(ctx SpecContext) {
		provider.stopAgent()
		tenantKey := client.ObjectKey{Namespace: authv1beta1.TenantNamespaceName(lConsumerID), Name: lConsumerID}
		tenant := &authv1beta1.Tenant{}
		Expect(provider.k8s.Get(ctx, tenantKey, tenant)).To(Succeed())
		old := tenant.Status.AuthParams.SignedCRT
		time.Sleep(time.Second) // certificates count NotBefore in seconds
		renewed := issueClientCertificate(ctx, provider, double.Key, lConsumerID)
		Expect(must(crypto.ParseCertificatePEM(renewed)).NotBefore).To(BeTemporally(">", must(crypto.ParseCertificatePEM(old)).NotBefore))
		tenant.Status.AuthParams.SignedCRT = renewed
		Expect(provider.k8s.Status().Update(ctx, tenant)).To(Succeed())

		By("Liqo's renewer copying the certificate of the provider's Tenant status into Identity.spec")
		renewal := &liqodouble.Renewal{Client: consumer.k8s, Provider: provider.k8s, ConsumerID: lConsumerID}
		_, err := renewal.Reconcile(ctx, reconcile.Request{NamespacedName: identityKey})
		Expect(err).NotTo(HaveOccurred())

		By("gitpeer rounds at the same identity.yaml keeping it, and proving Liqo's new kubeconfig")
		for range 5 {
			requestRound(ctx, consumer)
		}
		Eventually(func(g Gomega) {
			g.Expect(peeringRepository(ctx, g, consumer).Status.Peerings).To(ContainElement(And(HaveField("Phase", gitpeerv1alpha1.PhaseReady),
				HaveField("Message", And(ContainSubstring(must(crypto.ParseCertificatePEM(renewed)).SerialNumber.Text(16)), ContainSubstring("kept"))))))
		}).WithTimeout(time.Minute).Should(Succeed())
		identity := &authv1beta1.Identity{}
		Expect(consumer.k8s.Get(ctx, identityKey, identity)).To(Succeed())
		Expect(identity.Spec.AuthParams.SignedCRT).To(Equal(renewed))
		var onBranch authv1beta1.Identity
		Expect(yaml.Unmarshal([]byte(show("main", dir+"identity.yaml")), &onBranch)).To(Succeed())
		Expect(onBranch.Spec.AuthParams.SignedCRT).To(Equal(old), "identity.yaml still carries the older certificate")
		secret := &corev1.Secret{}
		Expect(consumer.k8s.Get(ctx, kubeconfigKey, secret)).To(Succeed())
		Expect(must(whoami.Kubeconfig(ctx, secret.Data[authv1beta1.KubeconfigSecretField]))).To(Equal(lConsumerID))
	})
})

// startDouble runs the Liqo double's controllers on the cluster at cfg (see liqo.Double.Start)
// until the returned function is called (it may be called more than once).
func startDouble(d *liqodouble.Double, cfg *rest.Config, o liqodouble.RunOptions) func() {
	GinkgoHelper()
	o.Scheme = scheme
	stop := must(d.Start(context.Background(), cfg, o))
	return func() { Expect(stop()).To(Succeed()) }
}

// requestRound asks the agent of c for a round and waits until it was handled.
func requestRound(ctx context.Context, c *cluster) {
	GinkgoHelper()
	at := time.Now().Format(time.RFC3339Nano)
	obj := &gitpeerv1alpha1.PeeringRepository{}
	Expect(c.k8s.Get(ctx, client.ObjectKey{Namespace: agentNamespace, Name: "peering"}, obj)).To(Succeed())
	patch := client.MergeFrom(obj.DeepCopy())
	metav1.SetMetaDataAnnotation(&obj.ObjectMeta, meta.ReconcileRequestAnnotation, at)
	Expect(c.k8s.Patch(ctx, obj, patch)).To(Succeed())
	Eventually(func(g Gomega) string {
		return peeringRepository(ctx, g, c).Status.LastHandledReconcileAt
	}).WithTimeout(time.Minute).Should(Equal(at))
}

// issueClientCertificate has the API server of c issue a client certificate
// for key with CN id and O liqo.io, as Liqo's tenant controller does at renewal.
func issueClientCertificate(ctx context.Context, c *cluster, key gocrypto.Signer, id string) []byte {
	csrs := must(kubernetes.NewForConfig(c.cp.Config)).CertificatesV1().CertificateSigningRequests()
	csr := must(csrs.Create(ctx, &certv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "renewal-"},
		Spec: certv1.CertificateSigningRequestSpec{SignerName: certv1.KubeAPIServerClientSignerName, Request: must(crypto.BuildCSR(key, id)),
			Usages: []certv1.KeyUsage{certv1.UsageDigitalSignature, certv1.UsageClientAuth}},
	}, metav1.CreateOptions{}))
	csr.Status.Conditions = []certv1.CertificateSigningRequestCondition{{Type: certv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "Renewal"}}
	_, err := csrs.UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{})
	Expect(err).NotTo(HaveOccurred())
	var cert []byte
	Eventually(func() []byte {
		cert = must(csrs.Get(ctx, csr.Name, metav1.GetOptions{})).Status.Certificate
		return cert
	}).WithTimeout(30 * time.Second).ShouldNot(BeEmpty())
	return cert
}
