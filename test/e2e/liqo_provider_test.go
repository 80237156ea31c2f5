package e2e

import (
	"context"
	gocrypto "crypto"
	"strings"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/test/liqo"
	"github.com/gitpeer/gitpeer/vocabulary"
)

const (
	lpProviderID = "liqo-p"
	lpConsumerID = "liqo-c"
	lpTolerantID = "liqo-t"
)

func lpDir(consumer string) string { return lpProviderID + "/" + consumer + "/" }

// The provider in Liqo mode, beside the Liqo double (test/liqo) on its real
// control plane: gitpeer moves the files and gates approval, Liqo's tenant
// controller does the crypto. The consumer is simulated as `liqoctl generate
// tenant` would act with its Liqo key, committing to main as a merged pull
// request.
//
// Re-peering after a revocation runs on Liqo's own controllers instead ("Liqo
// mode on the real Liqo", liqo_real_consumer_test.go); the revocation stays
// here for the serials Liqo's renewal and the rekey issued, which need the
// double's clock.
var _ = Describe("Liqo provider", Ordered, func() {
	var provider *cluster
	var liqoKey gocrypto.Signer // the consumer's Liqo key (its authentication-keys)
	var clock liqoClock
	var nonce string
	var serials []string
	dir := lpDir(lpConsumerID)
	tenantNS := authv1beta1.TenantNamespaceName(lpConsumerID)
	tenantKey := client.ObjectKey{Namespace: tenantNS, Name: lpConsumerID}

	BeforeAll(func(ctx SpecContext) {
		provider = newCluster(lpProviderID)
		startLiqoDouble(ctx, provider, &clock)
		applyLiqoProvider(provider)
		provider.startAgent()
		liqoKey = newClusterKey()
	})

	It("creates the nonce the Liqo way and lets Liqo's nonce creator fill it", func(ctx SpecContext) {
		commit("Request peering of "+lpConsumerID, map[string][]byte{dir + "request.yaml": requestFor(lpProviderID, lpConsumerID, liqoKey)})
		nonce = waitNonceAt(dir, "")
		secret := &corev1.Secret{}
		Expect(provider.k8s.Get(ctx, client.ObjectKey{Namespace: tenantNS, Name: authv1beta1.NonceSecretName}, secret)).To(Succeed())
		Expect(secret.Labels).To(HaveKeyWithValue(authv1beta1.NonceSecretLabel, authv1beta1.TrueValue))
		Expect(secret.Labels).To(HaveKeyWithValue(authv1beta1.RemoteClusterIDLabel, lpConsumerID))
		Expect(string(secret.Data[authv1beta1.NonceSecretField])).To(Equal(nonce), "nonce.yaml carries the nonce Liqo's nonce creator wrote")
		expectLiqoNonceCreated(ctx, provider, secret)
	})

	It("verifies the merged Tenant, applies it, and publishes the identity Liqo issued, with no gitpeer CSR", func(ctx SpecContext) {
		tenant := must(protocol.NewTenant(lpConsumerID, liqoKey, nonce))
		commit("Merge pull request: Tenant of "+lpConsumerID, map[string][]byte{dir + "tenant.yaml": tenantDoc(tenant)})

		id := waitIdentity(dir, "")
		applied := &authv1beta1.Tenant{}
		Expect(provider.k8s.Get(ctx, tenantKey, applied)).To(Succeed())
		Expect(applied.Labels).To(HaveKeyWithValue(vocabulary.OwnerLabel, string(provider.object.UID)))
		Expect(applied.Finalizers).To(ContainElement(liqo.TenantFinalizer), "Liqo's tenant controller reconciled it")
		want := must(liqo.GenerateIdentity(applied, lpProviderID))
		Expect(id.Name).To(Equal(want.Name))
		Expect(id.Spec).To(Equal(want.Spec), "identity.yaml is what liqoctl generate identity makes of the Tenant")
		cert := must(crypto.ParseCertificatePEM(id.Spec.AuthParams.SignedCRT))
		serials = append(serials, cert.SerialNumber.Text(16))

		By("no CSR and no RoleBinding of gitpeer's: Liqo issued and bound")
		expectOnlyLiqoCSRs(ctx, provider, 1)
		Expect(roleBindings(ctx, provider, tenantNS)).To(ConsistOf(liqo.TenantRoleBinding))

		By("the consumer's Liqo key works: a kubeconfig built with it is the consumer, and its ResourceSlices pass")
		kubeconfig := must(crypto.BuildKubeconfig(crypto.KubeconfigParams{ProviderClusterID: lpProviderID, IdentityName: id.Name,
			Namespace: *id.Spec.Namespace, APIServer: id.Spec.AuthParams.APIServer, CA: id.Spec.AuthParams.CA,
			Certificate: id.Spec.AuthParams.SignedCRT, Key: liqoKey}))
		cs := clientFor(kubeconfig)
		review := must(cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{}))
		Expect(review.Status.UserInfo.Username).To(Equal(lpConsumerID))
		Expect(can(ctx, cs, "create", "authentication.liqo.io", "resourceslices", tenantNS)).To(BeTrue())
		Expect(liqo.CheckResourceSliceCSR(applied, "slice-1", must(liqo.ResourceSliceCSR(liqoKey, "slice-1", lpConsumerID)))).To(Succeed())
		Expect(liqo.CheckResourceSliceCSR(applied, "slice-1", must(liqo.ResourceSliceCSR(newClusterKey(), "slice-1", lpConsumerID)))).To(MatchError(liqo.ErrInvalidSliceCSR))
		Expect(issuedRecords(ctx, provider, lpConsumerID)).To(ContainSubstring(serials[0]))
	})

	It("commits exactly one new identity.yaml when Liqo renews the certificate", func(ctx SpecContext) {
		clock.renew(ctx, provider, tenantKey)

		id := waitIdentity(dir, serials[0])
		renewed := must(crypto.ParseCertificatePEM(id.Spec.AuthParams.SignedCRT))
		serials = append(serials, renewed.SerialNumber.Text(16))
		tenant := &authv1beta1.Tenant{}
		Expect(provider.k8s.Get(ctx, tenantKey, tenant)).To(Succeed())
		Expect(id.Spec.AuthParams).To(Equal(*tenant.Status.AuthParams))
		Consistently(func() []string { return identityCommits(dir) }).WithTimeout(5*time.Second).Should(HaveLen(2),
			"one commit for the issued certificate, one for the renewed")
		Expect(identityCommits(dir)[0]).To(ContainSubstring("Gitpeer-Action: renew-identity"))
		Expect(issuedRecords(ctx, provider, lpConsumerID)).To(ContainSubstring(serials[1]))
		expectOnlyLiqoCSRs(ctx, provider, 2)
		Expect(show("main", dir+"nonce.yaml")).To(ContainSubstring(nonce), "the nonce is never changed while the Tenant exists")
	})

	It("re-keys a peered consumer after the explicit rekey: Liqo's cache is dropped and Liqo issues for the new key", func(ctx SpecContext) {
		newKey := newClusterKey()
		commit("Merge pull request: new key of "+lpConsumerID, map[string][]byte{
			dir + "request.yaml": requestFor(lpProviderID, lpConsumerID, newKey),
			dir + "tenant.yaml":  tenantDoc(must(protocol.NewTenant(lpConsumerID, newKey, nonce))),
		})
		expectReported(ctx, provider, dir+"tenant.yaml", "not the key pinned")
		annotateRepository(ctx, provider, gitpeerv1alpha1.RekeyAnnotationPrefix+lpConsumerID, must(crypto.KeyPin(newKey.Public())))

		id := waitIdentity(dir, serials[1])
		cert := must(crypto.ParseCertificatePEM(id.Spec.AuthParams.SignedCRT))
		Expect(must(crypto.KeyPin(cert.PublicKey))).To(Equal(must(crypto.KeyPin(newKey.Public()))), "Liqo issued for the new key")
		serials = append(serials, cert.SerialNumber.Text(16))
		Expect(issuedRecords(ctx, provider, lpConsumerID)).To(And(ContainSubstring(serials[1]), ContainSubstring(serials[2])))
		expectOnlyLiqoCSRs(ctx, provider, 3)
		liqoKey = newKey
	})

	It("refuses a TolerateNoHandshake Tenant: it is never applied", func(ctx SpecContext) {
		tdir := lpDir(lpTolerantID)
		key := newClusterKey()
		commit("Request peering of "+lpTolerantID, map[string][]byte{tdir + "request.yaml": requestFor(lpProviderID, lpTolerantID, key)})
		tenant := must(protocol.NewTenant(lpTolerantID, key, waitNonceAt(tdir, "")))
		tenant.Spec.AuthzPolicy = ptr.To(authv1beta1.TolerateNoHandshake)
		commit("Merge pull request: Tenant of "+lpTolerantID, map[string][]byte{tdir + "tenant.yaml": tenantDoc(tenant)})
		expectReported(ctx, provider, tdir+"tenant.yaml", `spec.authzPolicy is "TolerateNoHandshake"`)
		expectNothingIssuedIn(ctx, provider, tdir, lpTolerantID)
	})

	It("revokes: the Tenant, Liqo's certificate cache and the nonce go, every serial seen is revoked", func(ctx SpecContext) {
		w := clone()
		gitCLI(w, "rm", "-q", dir+"tenant.yaml")
		gitCLI(w, "commit", "-q", "-m", "Revoke "+lpConsumerID)
		pushMain(w)
		Eventually(func() string { return show("main", dir+"identity.yaml") }).WithTimeout(time.Minute).Should(BeEmpty())
		for _, obj := range []client.Object{
			&authv1beta1.Tenant{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: lpConsumerID}},
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: liqo.CertificateCacheSecret}},
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: authv1beta1.NonceSecretName}},
		} {
			Eventually(func() bool { return apierrors.IsNotFound(provider.k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj)) }).
				WithTimeout(time.Minute).Should(BeTrue(), "%T %s", obj, obj.GetName())
		}
		Eventually(func() []string { return roleBindings(ctx, provider, tenantNS) }).WithTimeout(time.Minute).Should(BeEmpty())
		rec := issuedRecords(ctx, provider, lpConsumerID)
		Expect(strings.Count(rec, "revokedAt")).To(Equal(len(serials)), rec)
	})
})

// enableLiqo requires Liqo mode in a PeeringRepository spec.
func enableLiqo(s *gitpeerv1alpha1.PeeringRepositorySpec) {
	s.Liqo = &gitpeerv1alpha1.LiqoSpec{Mode: gitpeerv1alpha1.LiqoEnabled}
}

// applyLiqoProvider makes c's PeeringRepository a provider in Liqo mode
// publishing c's API server.
func applyLiqoProvider(c *cluster) {
	GinkgoHelper()
	c.apply(func(s *gitpeerv1alpha1.PeeringRepositorySpec) {
		s.Provider = &gitpeerv1alpha1.ProviderSpec{Enabled: true, APIServer: c.cp.URL}
		enableLiqo(s)
	})
}

// startLiqoDouble installs the Liqo double on c (cluster ID c.id, its
// ClusterRoles) and runs its controllers, the tenant controller with clock,
// until the end of the node.
func startLiqoDouble(ctx context.Context, c *cluster, clock *liqoClock) {
	GinkgoHelper()
	Expect(liqo.AdoptRemoteControlPlaneRole(ctx, c.k8s)).To(Succeed())
	d := must(liqo.New(ctx, c.k8s, liqo.Options{ClusterID: c.id, APIServer: c.cp.URL}))
	DeferCleanup(startDouble(d, c.cp.Config, liqo.RunOptions{Now: clock.now}))
}

// expectLiqoNonceCreated checks that the nonce Secret was created as `liqoctl
// create nonce` creates it and filled by Liqo's nonce creator (its event).
func expectLiqoNonceCreated(ctx context.Context, c *cluster, secret *corev1.Secret) {
	GinkgoHelper()
	Eventually(func(g Gomega) []string {
		var events corev1.EventList
		g.Expect(c.k8s.List(ctx, &events, client.InNamespace(secret.Namespace))).To(Succeed())
		var reasons []string
		for _, e := range events.Items {
			if e.InvolvedObject.UID == secret.UID {
				reasons = append(reasons, e.Reason)
			}
		}
		return reasons
	}).WithTimeout(30 * time.Second).Should(ContainElement("NonceGenerated"))
}

// waitIdentity waits for dir/identity.yaml to hold a certificate whose serial
// is not notSerial, and returns it.
func waitIdentity(dir, notSerial string) *authv1beta1.Identity {
	GinkgoHelper()
	id := &authv1beta1.Identity{}
	Eventually(func(g Gomega) {
		data := show("main", dir+"identity.yaml")
		g.Expect(data).NotTo(BeEmpty())
		g.Expect(yaml.UnmarshalStrict([]byte(data), id)).To(Succeed())
		cert, err := crypto.ParseCertificatePEM(id.Spec.AuthParams.SignedCRT)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(cert.SerialNumber.Text(16)).NotTo(Equal(notSerial))
	}).WithTimeout(time.Minute).Should(Succeed())
	return id
}

// identityCommits lists the commits of main that changed dir/identity.yaml,
// newest first, as "subject|trailers".
func identityCommits(dir string) []string {
	GinkgoHelper()
	out := strings.TrimSpace(gitOut("--git-dir", repo.Dir, "log", "main", "--format=%s|%(trailers:unfold,separator=%x2C)", "--", dir+"identity.yaml"))
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}

// expectOnlyLiqoCSRs checks that every CSR of c is one of Liqo's tenant
// controller, n of them, and none of gitpeer's.
func expectOnlyLiqoCSRs(ctx context.Context, c *cluster, n int) {
	GinkgoHelper()
	var csrs certificatesv1.CertificateSigningRequestList
	Expect(c.k8s.List(ctx, &csrs)).To(Succeed())
	for _, csr := range csrs.Items {
		Expect(csr.Labels).To(HaveKey(liqo.TenantCSRLabel), "CSR %s is not Liqo's", csr.Name)
		Expect(csr.Labels).NotTo(HaveKey(csrConsumerLabel), "CSR %s is gitpeer's", csr.Name)
		Expect(csr.Name).To(HavePrefix(liqo.TenantCSRPrefix))
	}
	Expect(csrs.Items).To(HaveLen(n))
}

// liqoClock is the clock of a provider's Liqo double, which a spec moves once
// to have Liqo renew a certificate (renew).
type liqoClock struct{ shift atomic.Int64 }

// now is the double's time: now, or once moved by renew.
func (l *liqoClock) now() time.Time { return time.Now().Add(time.Duration(l.shift.Swap(0))) }

// renew has the Liqo double on c renew the certificate of the Tenant key: its
// next reconcile, which changing an annotation of the Tenant triggers, runs a
// minute before the certificate expires, past 2/3 of its life.
func (l *liqoClock) renew(ctx context.Context, c *cluster, key client.ObjectKey) {
	GinkgoHelper()
	tenant := &authv1beta1.Tenant{}
	Expect(c.k8s.Get(ctx, key, tenant)).To(Succeed())
	cert := must(crypto.ParseCertificatePEM(tenant.Status.AuthParams.SignedCRT))
	l.shift.Store(int64(time.Until(cert.NotAfter) - time.Minute))
	patch := client.MergeFrom(tenant.DeepCopy())
	metav1.SetMetaDataAnnotation(&tenant.ObjectMeta, "test.gitpeer.io/poke", time.Now().Format(time.RFC3339Nano))
	Expect(c.k8s.Patch(ctx, tenant, patch)).To(Succeed())
}
