package e2e

import (
	"context"
	gocrypto "crypto"
	"crypto/x509"
	"encoding/base64"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/reconciler/plan/provider"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/test/controlplane"
	"github.com/gitpeer/gitpeer/test/liqo"
	"github.com/gitpeer/gitpeer/test/liqoreal"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// liqoSigningDuration is the provider's --cluster-signing-duration in
// "Renewal on the real Liqo": Liqo's CSRs ask for no lifetime, so it is its
// certificates'. The signer backdates NotBefore by 5 minutes and not NotAfter
// (a short certificate), so a certificate lives 9 minutes, and Liqo's tenant
// controller renews it at 2/3 of that, about a minute after issuing it
// (liqotech/liqo v1.2.0 pkg/liqo-controller-manager/authentication/utils,
// ShouldRenewCertificate); gitpeer finds it overdue 45 s (1/12 of 9 min) later.
const liqoSigningDuration = 4 * time.Minute

// The provider in Liqo mode on Liqo's own authentication module with
// short-lived certificates, and a standalone gitpeer consumer: Liqo's tenant
// controller renews, the provider commits each renewal, the consumer's
// kubeconfig follows, and a renewal Liqo stalls on is reported as in
// standalone mode. Liqo's Renew objects and the CRD replicator that carries
// them are not involved: the renewed certificate reaches the consumer through
// Git (docs/liqo.md, "Renewal").
var _ = Describe("Renewal on the real Liqo", Ordered, func() {
	const providerID, consumerID = "lrenew-p", "lrenew-c"
	dir := providerID + "/" + consumerID + "/"
	var prov, consumer *cluster
	var harness *liqoreal.Harness
	var serials []string // of the certificates Liqo issued, oldest first

	// consumerCertificate is the certificate of the consumer's kubeconfig for the provider.
	consumerCertificate := func(g Gomega) *x509.Certificate {
		cfg, err := clientcmd.Load(kubeconfigOf(context.Background(), consumer, providerID))
		g.Expect(err).NotTo(HaveOccurred())
		for _, auth := range cfg.AuthInfos {
			return must(crypto.ParseCertificatePEM(auth.ClientCertificateData))
		}
		g.Expect(cfg.AuthInfos).NotTo(BeEmpty())
		return nil
	}
	// published is the certificate of identity.yaml on the branch.
	published := func(g Gomega) *x509.Certificate {
		id := &authv1beta1.Identity{}
		g.Expect(yaml.UnmarshalStrict([]byte(show("main", dir+"identity.yaml")), id)).To(Succeed())
		cert, err := crypto.ParseCertificatePEM(id.Spec.AuthParams.SignedCRT)
		g.Expect(err).NotTo(HaveOccurred())
		return cert
	}
	// overdue returns the provider's CertificatesRenewed condition reason and its gitpeer_certificate_renewal_overdue of the consumer.
	overdue := func(g Gomega) (string, float64) {
		cond := conditionOf(peeringRepository(context.Background(), g, prov), gitpeerv1alpha1.CertificatesRenewedCondition)
		g.Expect(cond).NotTo(BeNil())
		for _, m := range gathered("gitpeer_certificate_renewal_overdue") {
			if m.labels["role"] == string(gitpeerv1alpha1.ProviderRole) && m.labels["peer"] == consumerID {
				return cond.Reason, m.GetGauge().GetValue()
			}
		}
		g.Expect("gitpeer_certificate_renewal_overdue of "+consumerID).To(BeEmpty(), "no such series")
		return "", 0
	}

	BeforeAll(func(ctx SpecContext) {
		prov = newClusterWith(providerID, controlplane.Options{ClusterSigningDuration: liqoSigningDuration})
		harness = startRealLiqo(ctx, prov, false)
		DeferCleanup(func() {
			if harness != nil {
				harness.Stop()
			}
		})
		applyLiqoProvider(prov)
		consumer = newCluster(consumerID)
		consumer.apply(func(s *gitpeerv1alpha1.PeeringRepositorySpec) {
			s.Consumer = &gitpeerv1alpha1.ConsumerSpec{Providers: []authv1beta1.ClusterID{providerID}, Direct: true, TrustedCAs: anchors(prov)}
		})
		prov.startAgent()
		consumer.startAgent()
	})

	It("commits each certificate Liqo renews, records the old serial, and the consumer's kubeconfig follows", func(ctx SpecContext) {
		first := must(crypto.ParseCertificatePEM(waitIdentity(dir, "").Spec.AuthParams.SignedCRT))
		nonceYAML := show("main", dir+"nonce.yaml")
		Expect(first.NotAfter.Sub(first.NotBefore)).To(BeNumerically("<", 10*time.Minute), "Liqo's certificate has the short lifetime")
		serials = append(serials, first.SerialNumber.Text(16))

		var renewed *x509.Certificate
		Eventually(func(g Gomega) {
			renewed = published(g)
			g.Expect(renewed.SerialNumber.Text(16)).NotTo(Equal(serials[0]))
		}).WithTimeout(3*time.Minute).Should(Succeed(), "Liqo renews about a minute after issuing")
		Expect(renewed.NotBefore).To(BeTemporally(">", first.NotBefore), "Liqo renewed")
		Expect(identityCommits(dir)[0]).To(ContainSubstring("Gitpeer-Action: renew-identity"))
		serials = append(serials, renewed.SerialNumber.Text(16))
		// Liqo renews again only about a minute after this renewal.
		Consistently(func() []string { return identityCommits(dir) }).WithTimeout(5*time.Second).Should(HaveLen(2),
			"exactly one commit for the issued certificate and one for the renewed")
		tenant := &authv1beta1.Tenant{}
		Expect(prov.k8s.Get(ctx, client.ObjectKey{Namespace: authv1beta1.TenantNamespaceName(consumerID), Name: consumerID}, tenant)).To(Succeed())
		Expect(waitIdentity(dir, serials[0]).Spec.AuthParams).To(Equal(*tenant.Status.AuthParams), "identity.yaml is the renewed Tenant status")
		expectOnlyLiqoCSRs(ctx, prov, 2)
		Expect(show("main", dir+"nonce.yaml")).To(Equal(nonceYAML), "the nonce is never changed while the Tenant exists")
		Eventually(func(g Gomega) {
			g.Expect(consumerCertificate(g).NotBefore).NotTo(BeTemporally("<", renewed.NotBefore), "the consumer's kubeconfig holds the renewed certificate")
		}).WithTimeout(time.Minute).Should(Succeed())
		Eventually(func() string { return issuedRecords(ctx, prov, consumerID) }).
			Should(And(ContainSubstring(serials[0]), ContainSubstring(serials[1])), "the old serial stays recorded")
		Eventually(func(g Gomega) string { reason, _ := overdue(g); return reason }).WithTimeout(30 * time.Second).Should(Equal(meta.SucceededReason))
	})

	It("reports RenewalOverdue (condition, event, metric) while Liqo's renewal stalls, and clears it once Liqo renews", func(ctx SpecContext) {
		harness.Stop()
		harness = nil
		tenant := &authv1beta1.Tenant{}
		Expect(prov.k8s.Get(ctx, client.ObjectKey{Namespace: authv1beta1.TenantNamespaceName(consumerID), Name: consumerID}, tenant)).To(Succeed())
		stalled := must(crypto.ParseCertificatePEM(tenant.Status.AuthParams.SignedCRT))
		Eventually(func(g Gomega) {
			reason, value := overdue(g)
			g.Expect(reason).To(Equal(gitpeerv1alpha1.RenewalOverdueReason))
			g.Expect(value).To(Equal(1.0))
		}).WithTimeout(3*time.Minute).WithPolling(2*time.Second).Should(Succeed(), "Liqo stalled on certificate %s", stalled.SerialNumber.Text(16))
		expectEvent(ctx, prov, gitpeerv1alpha1.RenewalOverdueReason, consumerID, stalled.SerialNumber.Text(16))
		Expect(peeringMessages(prov)["Provider/"+consumerID]).To(ContainSubstring("Liqo"))

		By("Liqo runs again and renews at once: the renewal is no longer overdue")
		harness = startRealLiqo(ctx, prov, false)
		waitIdentity(dir, stalled.SerialNumber.Text(16))
		Eventually(func(g Gomega) {
			reason, value := overdue(g)
			g.Expect(reason).To(Equal(meta.SucceededReason))
			g.Expect(value).To(Equal(0.0))
		}).WithTimeout(time.Minute).Should(Succeed())
	})
})

// A rekey on Liqo's own authentication module, the consumer simulated as in
// "Liqo provider on the real Liqo": every certificate cache of Liqo's goes,
// the ResourceSlices' too, or the consumer's Liqo, signing its slices anew
// with the new key, would be refused on the cached CSR forever. Then an
// admin's `liqoctl unauthenticate`: reported, and undone, since tenant.yaml
// is still on the branch.
var _ = Describe("Rekey and liqoctl unauthenticate on the real Liqo", Ordered, func() {
	const providerID, consumerID, sliceName = "rekey-p", "rekey-c", "slice-1"
	dir := providerID + "/" + consumerID + "/"
	tenantNS := authv1beta1.TenantNamespaceName(consumerID)
	var prov *cluster
	var current gocrypto.Signer // the consumer's key

	BeforeAll(func(ctx SpecContext) {
		prov = newCluster(providerID)
		DeferCleanup(startRealLiqo(ctx, prov, false).Stop)
		applyLiqoProvider(prov)
		prov.startAgent()
	})

	// sliceCertificate creates the consumer's ResourceSlice signed by key with
	// its kubeconfig, as its Liqo's CRD replicator does, and returns the
	// certificate Liqo's remote ResourceSlice controller issues for it.
	sliceCertificate := func(ctx context.Context, kubeconfig []byte, key gocrypto.Signer) *x509.Certificate {
		GinkgoHelper()
		dyn := must(dynamic.NewForConfig(must(clientcmd.RESTConfigFromKubeConfig(kubeconfig))))
		must(dyn.Resource(resourceSliceGVR).Namespace(tenantNS).Create(ctx, replicated(resourceSliceGVR, consumerID, providerID, tenantNS, sliceName, map[string]any{
			"consumerClusterID": consumerID, "providerClusterID": providerID, "class": "default",
			"csr": base64.StdEncoding.EncodeToString(must(liqo.ResourceSliceCSR(key, sliceName, consumerID))),
		}), metav1.CreateOptions{}))
		var cert *x509.Certificate
		Eventually(func(g Gomega) {
			got, err := dyn.Resource(resourceSliceGVR).Namespace(tenantNS).Get(ctx, sliceName, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			pem, err := provider.SliceCertificate(got)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(pem).NotTo(BeEmpty(), "Liqo issued no certificate for the slice")
			cert = must(crypto.ParseCertificatePEM(pem))
		}).WithTimeout(time.Minute).Should(Succeed())
		return cert
	}
	// identityKubeconfig is the consumer's kubeconfig for identity.yaml on the branch other than notSerial, with key.
	identityKubeconfig := func(notSerial string, key gocrypto.Signer) ([]byte, *x509.Certificate) {
		GinkgoHelper()
		id := waitIdentity(dir, notSerial)
		return must(crypto.BuildKubeconfig(crypto.KubeconfigParams{ProviderClusterID: providerID, IdentityName: id.Name,
			Namespace: *id.Spec.Namespace, APIServer: id.Spec.AuthParams.APIServer, CA: id.Spec.AuthParams.CA,
			Certificate: id.Spec.AuthParams.SignedCRT, Key: key})), must(crypto.ParseCertificatePEM(id.Spec.AuthParams.SignedCRT))
	}

	It("drops the control plane's certificate cache, Liqo issues for the new key, and every old serial stays recorded", func(ctx SpecContext) {
		oldKey := newClusterKey()
		commit("Request peering of "+consumerID, map[string][]byte{dir + "request.yaml": requestFor(providerID, consumerID, oldKey)})
		nonce := waitNonceAt(dir, "")
		commit("Merge pull request: Tenant of "+consumerID, map[string][]byte{dir + "tenant.yaml": tenantDoc(must(protocol.NewTenant(consumerID, oldKey, nonce)))})
		kubeconfig, first := identityKubeconfig("", oldKey)
		oldSlice := sliceCertificate(ctx, kubeconfig, oldKey)
		Expect(liqoCaches(ctx, prov, tenantNS, sliceName)).To(HaveLen(2), "Liqo cached both certificates")

		By("the reviewed rekey: a new key in request.yaml and tenant.yaml, and its pin on the PeeringRepository")
		newKey := newClusterKey()
		commit("Merge pull request: new key of "+consumerID, map[string][]byte{
			dir + "request.yaml": requestFor(providerID, consumerID, newKey),
			dir + "tenant.yaml":  tenantDoc(must(protocol.NewTenant(consumerID, newKey, nonce))),
		})
		expectReported(ctx, prov, dir+"tenant.yaml", "not the key pinned")
		By("until the rekey is approved the peering fails closed: the Tenant is Drained and Liqo's Drained deletes the consumer's ResourceSlices")
		sliceKey := client.ObjectKey{Namespace: tenantNS, Name: sliceName}
		Eventually(func() bool {
			return apierrors.IsNotFound(prov.k8s.Get(ctx, sliceKey, replicated(resourceSliceGVR, consumerID, providerID, tenantNS, sliceName, nil)))
		}).WithTimeout(30 * time.Second).Should(BeTrue())
		annotateRepository(ctx, prov, gitpeerv1alpha1.RekeyAnnotationPrefix+consumerID, must(crypto.KeyPin(newKey.Public())))
		kubeconfig, rekeyed := identityKubeconfig(first.SerialNumber.Text(16), newKey)
		Expect(must(crypto.KeyPin(rekeyed.PublicKey))).To(Equal(must(crypto.KeyPin(newKey.Public()))), "Liqo issued for the new key")
		// Liqo's Drained deleted the slice while the rekey waited for its
		// approval; the agent, which may not list Secrets, deletes its cache,
		// for the old key, by the slice's name recorded before the drain, or
		// Liqo would refuse the slice signed anew with the new key.
		Expect(liqoCaches(ctx, prov, tenantNS, sliceName)).NotTo(ContainElement(provider.LiqoCertificateCache+"-"+sliceName),
			"the drained slice's cache is gone after the rekey")
		Expect(issuedRecords(ctx, prov, consumerID)).To(And(ContainSubstring(first.SerialNumber.Text(16)), ContainSubstring(oldSlice.SerialNumber.Text(16))),
			"the old key's certificates, the slice's recorded before the drain, stay recorded for a later revocation")
		current = newKey
	})

	It("reports a Tenant deleted as liqoctl unauthenticate does and applies it again: tenant.yaml decides", func(ctx SpecContext) {
		before := show("main", dir+"identity.yaml")
		tenantKey := client.ObjectKey{Namespace: tenantNS, Name: consumerID}
		tenant := &authv1beta1.Tenant{}
		Expect(prov.k8s.Get(ctx, tenantKey, tenant)).To(Succeed())
		By("the admin runs liqoctl unauthenticate: on the provider it deletes the Tenant, nothing else")
		Expect(prov.k8s.Delete(ctx, tenant)).To(Succeed())

		expectEvent(ctx, prov, vocabulary.ReasonTenantDeletedOutsideGit, consumerID, "delete tenant.yaml")
		Eventually(func(g Gomega) {
			again := &authv1beta1.Tenant{}
			g.Expect(prov.k8s.Get(ctx, tenantKey, again)).To(Succeed())
			g.Expect(again.UID).NotTo(Equal(tenant.UID))
			g.Expect(again.Status.AuthParams).NotTo(BeNil())
		}).WithTimeout(time.Minute).Should(Succeed(), "the Tenant is applied again and Liqo issues")
		kubeconfig, _ := identityKubeconfig("", current)
		Expect(can(ctx, clientFor(kubeconfig), "create", "authentication.liqo.io", "resourceslices", tenantNS)).To(BeTrue(), "the consumer's access is back")
		Consistently(func() string { return show("main", dir+"identity.yaml") }).WithTimeout(5*time.Second).Should(Equal(before),
			"Liqo gave its cached certificate back: identity.yaml is unchanged")
	})
})
