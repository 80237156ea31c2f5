package e2e

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1/documents"
	"github.com/gitpeer/gitpeer/vocabulary"
)

const (
	rvProviderID = "revoke-p"
	rvConsumerID = "revoke-c"
)

// A revoked certificate stays dead: no automatic re-request, no re-binding while
// it is unexpired, unless an admin accepts the risk; and bindings to a previous
// clusterRoleName do not outlive the revocation.
var _ = Describe("Revocation", Ordered, func() {
	var provider, consumer *cluster
	dir := rvProviderID + "/" + rvConsumerID + "/"
	tenantNS := authv1beta1.TenantNamespaceName(rvConsumerID)
	var notAfter time.Time
	var serial string

	BeforeAll(func() {
		provider, consumer = newCluster(rvProviderID), newCluster(rvConsumerID)
		provider.apply(func(s *gitpeerv1alpha1.PeeringRepositorySpec) {
			s.Provider = &gitpeerv1alpha1.ProviderSpec{Enabled: true, APIServer: provider.cp.URL,
				CertificateTTL: &metav1.Duration{Duration: gitpeerv1alpha1.MinCertificateTTL}}
		})
		consumer.apply(func(s *gitpeerv1alpha1.PeeringRepositorySpec) {
			s.Consumer = &gitpeerv1alpha1.ConsumerSpec{Providers: []authv1beta1.ClusterID{rvProviderID}, Direct: true, TrustedCAs: anchors(provider)}
		})
		provider.startAgent()
		consumer.startAgent()
	})

	It("peers, and moves the binding when clusterRoleName changes", func(ctx SpecContext) {
		Eventually(func(g Gomega) {
			cert, err := kubeconfigCert(consumer, rvProviderID)
			g.Expect(err).NotTo(HaveOccurred())
			notAfter, serial = cert.NotAfter, cert.SerialNumber.Text(16)
		}).WithTimeout(2 * time.Minute).Should(Succeed())
		Expect(roleBindings(ctx, provider, tenantNS)).To(ConsistOf(authv1beta1.RoleBindingName(gitpeerv1alpha1.DefaultClusterRoleName)))

		setProviderSpec(ctx, provider, func(p *gitpeerv1alpha1.ProviderSpec) { p.ClusterRoleName = "gitpeer-other-role" })
		Eventually(func() []string { return roleBindings(ctx, provider, tenantNS) }).WithTimeout(time.Minute).
			Should(ConsistOf(authv1beta1.RoleBindingName("gitpeer-other-role")))
	})

	It("revokes: every binding, the request and the nonce go, the key pin stays, and the consumer does not request again", func(ctx SpecContext) {
		w := clone()
		gitCLI(w, "rm", "-q", dir+"tenant.yaml")
		gitCLI(w, "commit", "-q", "-m", "Revoke "+rvConsumerID)
		pushMain(w)
		Eventually(func() string { return show("main", dir+"identity.yaml") }).WithTimeout(time.Minute).Should(BeEmpty())
		Expect(show("main", dir+"request.yaml")).To(BeEmpty())
		Expect(show("main", dir+"nonce.yaml")).To(BeEmpty())
		Expect(roleBindings(ctx, provider, tenantNS)).To(BeEmpty())
		ns := &corev1.Namespace{}
		Expect(provider.k8s.Get(ctx, client.ObjectKey{Name: tenantNS}, ns)).To(Succeed())
		Expect(ns.Annotations).NotTo(HaveKey(vocabulary.PinnedKeyAnnotation), "the pin lives in the records alone")
		Expect(issuedRecords(ctx, provider, rvConsumerID)).To(And(ContainSubstring(`"revokedAt"`), ContainSubstring(`"pinnedKey"`)))

		// Direct mode: nothing brings the peering back without a person.
		Consistently(func() string {
			return show("main", dir+"request.yaml") + show("main", dir+"tenant.yaml") + show("main", dir+"identity.yaml")
		}).WithTimeout(15 * time.Second).Should(BeEmpty())
		Eventually(func(g Gomega) {
			obj := peeringRepository(ctx, g, consumer)
			g.Expect(obj.Status.Peerings).To(ContainElement(And(
				HaveField("Phase", gitpeerv1alpha1.PhaseRevoked), HaveField("Message", ContainSubstring(gitpeerv1alpha1.RequestAgainAnnotation)))))
		}).WithTimeout(30 * time.Second).Should(Succeed())
	})

	It("refuses to bind the consumer again while its revoked certificate is unexpired, saying until when", func(ctx SpecContext) {
		annotateRepository(ctx, consumer, gitpeerv1alpha1.RequestAgainAnnotation, rvProviderID)
		Eventually(func() string { return show("main", dir+"tenant.yaml") }).WithTimeout(time.Minute).ShouldNot(BeEmpty())
		expectReported(ctx, provider, dir+"tenant.yaml", "revoked certificate "+serial, "valid until "+notAfter.UTC().Format(time.RFC3339),
			gitpeerv1alpha1.RevivalAnnotationPrefix+rvConsumerID)
		Consistently(func(g Gomega) {
			g.Expect(apierrors.IsNotFound(provider.k8s.Get(ctx, client.ObjectKey{Namespace: tenantNS, Name: rvConsumerID}, &authv1beta1.Tenant{}))).To(BeTrue())
			g.Expect(roleBindings(ctx, provider, tenantNS)).To(BeEmpty())
			g.Expect(show("main", dir+"identity.yaml")).To(BeEmpty())
		}).WithTimeout(5 * time.Second).Should(Succeed())
		Expect(peeringRepository(ctx, Default, consumer).Annotations).NotTo(HaveKey(gitpeerv1alpha1.RequestAgainAnnotation), "the request-again annotation is used once")
	})

	var revived string // the serial of the certificate issued under the revival override

	It("binds it again when an admin accepts the unexpired revoked certificates", func(ctx SpecContext) {
		annotateRepository(ctx, provider, gitpeerv1alpha1.RevivalAnnotationPrefix+rvConsumerID, gitpeerv1alpha1.AcceptRevivalValue)
		Eventually(func(g Gomega) {
			cert, err := kubeconfigCert(consumer, rvProviderID)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(cert.SerialNumber.Text(16)).NotTo(Equal(serial))
			revived = cert.SerialNumber.Text(16)
		}).WithTimeout(2 * time.Minute).Should(Succeed())
		Expect(time.Now()).To(BeTemporally("<", notAfter), "re-bound while the revoked certificate was still valid")
	})

	It("uses the revival override once: removed, recorded, and a second revocation is final again", func(ctx SpecContext) {
		override := gitpeerv1alpha1.RevivalAnnotationPrefix + rvConsumerID + "=" + gitpeerv1alpha1.AcceptRevivalValue
		Eventually(func(g Gomega) {
			g.Expect(peeringRepository(ctx, g, provider).Annotations).NotTo(HaveKey(gitpeerv1alpha1.RevivalAnnotationPrefix + rvConsumerID))
		}).WithTimeout(time.Minute).Should(Succeed(), "the revival override is used once")
		tenant := &authv1beta1.Tenant{}
		Expect(provider.k8s.Get(ctx, client.ObjectKey{Namespace: tenantNS, Name: rvConsumerID}, tenant)).To(Succeed())
		Expect(tenant.Annotations).To(HaveKeyWithValue(vocabulary.OverridesAnnotation, override))
		Expect(gitCLI(repo.Dir, "log", "--format=%B", "main", "--", dir+"identity.yaml")).To(ContainSubstring("Gitpeer-Override: "+override),
			"the commit of the revived identity names the override")

		w := clone()
		gitCLI(w, "rm", "-q", dir+"tenant.yaml")
		gitCLI(w, "commit", "-q", "-m", "Revoke "+rvConsumerID+" again")
		pushMain(w)
		Eventually(func() string { return show("main", dir+"identity.yaml") }).WithTimeout(time.Minute).Should(BeEmpty())
		annotateRepository(ctx, consumer, gitpeerv1alpha1.RequestAgainAnnotation, rvProviderID)
		Eventually(func() string { return show("main", dir+"tenant.yaml") }).WithTimeout(time.Minute).ShouldNot(BeEmpty())
		// Refused again, naming the revived certificate, revoked now: no annotation accepts it any more.
		expectReported(ctx, provider, dir+"tenant.yaml", "revoked certificate "+revived, gitpeerv1alpha1.RevivalAnnotationPrefix+rvConsumerID)
		Consistently(func(g Gomega) {
			g.Expect(apierrors.IsNotFound(provider.k8s.Get(ctx, client.ObjectKey{Namespace: tenantNS, Name: rvConsumerID}, &authv1beta1.Tenant{}))).To(BeTrue())
			g.Expect(roleBindings(ctx, provider, tenantNS)).To(BeEmpty())
			g.Expect(show("main", dir+"identity.yaml")).To(BeEmpty())
		}).WithTimeout(5 * time.Second).Should(Succeed())
	})
})

const (
	owProviderID = "own-p"
	secondNS     = "second"
)

// Two PeeringRepositories of one provider cluster: each acts only on what it created.
var _ = Describe("Ownership", Ordered, func() {
	var provider *cluster
	var second *gitpeerv1alpha1.PeeringRepository
	firstDir := func(id string) string { return owProviderID + "/" + id + "/" }
	secondDir := func(id string) string { return "other/" + owProviderID + "/" + id + "/" }

	BeforeAll(func(ctx SpecContext) {
		provider = newCluster(owProviderID)
		provider.apply(func(s *gitpeerv1alpha1.PeeringRepositorySpec) {
			s.Provider = &gitpeerv1alpha1.ProviderSpec{Enabled: true, APIServer: provider.cp.URL,
				AllowedConsumers: []string{"c*"}, MaxPendingRequests: new(int32(2))}
		})
		// The second one serves another path of the same repository, from another namespace.
		git := &corev1.Secret{}
		Expect(provider.k8s.Get(ctx, client.ObjectKey{Namespace: agentNamespace, Name: "git"}, git)).To(Succeed())
		Expect(provider.k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: secondNS}})).To(Succeed())
		Expect(provider.k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: secondNS, Name: "git"}, Data: git.Data})).To(Succeed())
		second = provider.object.DeepCopy()
		second.ObjectMeta = metav1.ObjectMeta{Namespace: secondNS, Name: "second"}
		second.Spec.Path = "other"
		second.Spec.Provider = &gitpeerv1alpha1.ProviderSpec{Enabled: true, APIServer: provider.cp.URL}
		Expect(provider.k8s.Create(ctx, second)).To(Succeed())
		// A tenant namespace someone else made, before any request.
		Expect(provider.k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: authv1beta1.TenantNamespaceName("c3")}})).To(Succeed())
		// A tenant namespace of an earlier gitpeer version, without the owner label.
		Expect(provider.k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: authv1beta1.TenantNamespaceName("c8"), Labels: map[string]string{
			vocabulary.ManagedByLabel: "gitpeer", authv1beta1.RemoteClusterIDLabel: "c8", authv1beta1.TenantNamespaceLabel: "true"}}})).To(Succeed())
		provider.startAgent()
	})

	It("issues c1 for the first and c2 for the second, and neither ever revokes the other's", func(ctx SpecContext) {
		for id, d := range map[string]string{"c1": firstDir("c1"), "c2": secondDir("c2")} {
			k := newClusterKey()
			commit("Request "+id, map[string][]byte{d + "request.yaml": requestFor(owProviderID, id, k)})
			nonce := waitNonceAt(d, "")
			commit("Tenant "+id, map[string][]byte{d + "tenant.yaml": tenantDoc(signedTenant(k, id, nonce))})
		}
		for _, d := range []string{firstDir("c1"), secondDir("c2")} {
			Eventually(func() string { return show("main", d+"identity.yaml") }).WithTimeout(time.Minute).ShouldNot(BeEmpty(), d)
		}
		Consistently(func(g Gomega) {
			for _, id := range []string{"c1", "c2"} {
				g.Expect(provider.k8s.Get(ctx, client.ObjectKey{Namespace: authv1beta1.TenantNamespaceName(authv1beta1.ClusterID(id)), Name: id}, &authv1beta1.Tenant{})).To(Succeed(), id)
			}
			g.Expect(show("main", firstDir("c1")+"identity.yaml")).NotTo(BeEmpty())
			g.Expect(show("main", secondDir("c2")+"identity.yaml")).NotTo(BeEmpty())
		}).WithTimeout(10 * time.Second).Should(Succeed())
		t := &authv1beta1.Tenant{}
		Expect(provider.k8s.Get(ctx, client.ObjectKey{Namespace: authv1beta1.TenantNamespaceName("c2"), Name: "c2"}, t)).To(Succeed())
		Expect(t.Labels).To(HaveKeyWithValue(vocabulary.OwnerLabel, string(second.UID)))
	})

	It("refuses a consumer whose tenant namespace belongs to the other PeeringRepository", func(ctx SpecContext) {
		commit("Request c1 on the second", map[string][]byte{secondDir("c1") + "request.yaml": requestFor(owProviderID, "c1", newClusterKey())})
		Eventually(func(g Gomega) {
			obj := &gitpeerv1alpha1.PeeringRepository{}
			g.Expect(provider.k8s.Get(ctx, client.ObjectKeyFromObject(second), obj)).To(Succeed())
			g.Expect(obj.Status.Peerings).To(ContainElement(And(HaveField("PeerID", authv1beta1.ClusterID("c1")),
				HaveField("Phase", gitpeerv1alpha1.PhaseFailed), HaveField("Message", ContainSubstring("not created by this PeeringRepository")))))
		}).WithTimeout(time.Minute).Should(Succeed())
		Expect(show("main", secondDir("c1")+"nonce.yaml")).To(BeEmpty())
	})

	It("does not hijack a tenant namespace it did not create", func(ctx SpecContext) {
		commit("Request c3", map[string][]byte{firstDir("c3") + "request.yaml": requestFor(owProviderID, "c3", newClusterKey())})
		expectEvent(ctx, provider, gitpeerv1alpha1.RejectedReason, "liqo-tenant-c3", "not created by this PeeringRepository")
		Consistently(func(g Gomega) {
			ns := &corev1.Namespace{}
			g.Expect(provider.k8s.Get(ctx, client.ObjectKey{Name: "liqo-tenant-c3"}, ns)).To(Succeed())
			g.Expect(ns.Labels).NotTo(HaveKey(vocabulary.ManagedByLabel))
			g.Expect(ns.Labels).NotTo(HaveKey(vocabulary.OwnerLabel))
			g.Expect(apierrors.IsNotFound(provider.k8s.Get(ctx, client.ObjectKey{Namespace: "liqo-tenant-c3", Name: authv1beta1.NonceSecretName}, &corev1.Secret{}))).To(BeTrue())
			g.Expect(show("main", firstDir("c3")+"nonce.yaml")).To(BeEmpty())
		}).WithTimeout(5 * time.Second).Should(Succeed())
	})

	It("does not adopt an earlier version's namespace while another provider PeeringRepository exists", func(ctx SpecContext) {
		commit("Request c8", map[string][]byte{firstDir("c8") + "request.yaml": requestFor(owProviderID, "c8", newClusterKey())})
		expectEvent(ctx, provider, gitpeerv1alpha1.RejectedReason, "liqo-tenant-c8", "adopted only by the only PeeringRepository")
		ns := &corev1.Namespace{}
		Expect(provider.k8s.Get(ctx, client.ObjectKey{Name: "liqo-tenant-c8"}, ns)).To(Succeed())
		Expect(ns.Labels).NotTo(HaveKey(vocabulary.OwnerLabel))
		Expect(show("main", firstDir("c8")+"nonce.yaml")).To(BeEmpty())
	})

	It("creates nothing for a consumer outside allowedConsumers", func(ctx SpecContext) {
		commit("Request x-bad", map[string][]byte{firstDir("x-bad") + "request.yaml": requestFor(owProviderID, "x-bad", newClusterKey())})
		expectEvent(ctx, provider, vocabulary.ReasonRequestsDeferred, "x-bad", "not in allowedConsumers")
		expectNoTenantNamespace(ctx, provider, "x-bad", firstDir("x-bad"))
	})

	It("answers at most maxPendingRequests requests and creates nothing for the rest", func(ctx SpecContext) {
		ids := []string{"c4", "c5", "c6", "c7"}
		files := map[string][]byte{}
		for _, id := range ids {
			files[firstDir(id)+"request.yaml"] = requestFor(owProviderID, id, newClusterKey())
		}
		commit("Flood", files)
		expectEvent(ctx, provider, vocabulary.ReasonRequestsDeferred, "2 request(s) deferred")
		Eventually(func() int {
			answered := 0
			for _, id := range ids {
				if show("main", firstDir(id)+"nonce.yaml") != "" {
					answered++
				}
			}
			return answered
		}).WithTimeout(30 * time.Second).Should(Equal(2))
		// Admitted in the round's order, whatever order its peerings then run in.
		Eventually(func() []string { return deferredPeers(ctx, provider, "deferred: 2 pending requests") }).WithTimeout(30 * time.Second).Should(ConsistOf("c6", "c7"))
		for _, id := range deferredPeers(ctx, provider, "deferred: 2 pending requests") {
			expectNoTenantNamespace(ctx, provider, id, firstDir(id))
		}
	})

	It("fails closed while a tenant.yaml with another key replaces c1's bound one, and recovers when a valid one is merged", func(ctx SpecContext) {
		dir, ns := firstDir("c1"), authv1beta1.TenantNamespaceName("c1")
		bound := map[string][]byte{dir + "tenant.yaml": []byte(show("main", dir+"tenant.yaml")), dir + "request.yaml": []byte(show("main", dir+"request.yaml"))}
		identity, csrs := show("main", dir+"identity.yaml"), csrCount(ctx, provider, "c1")
		Expect(roleBindings(ctx, provider, ns)).NotTo(BeEmpty())
		applied := &authv1beta1.Tenant{}
		Expect(provider.k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "c1"}, applied)).To(Succeed())

		// Signed over the current nonce, with request.yaml to match: only the pin stands in the way.
		k := newClusterKey()
		nonce := waitNonceAt(dir, "")
		commit("Tenant c1 with another key", map[string][]byte{dir + "tenant.yaml": tenantDoc(signedTenant(k, "c1", nonce)), dir + "request.yaml": requestFor(owProviderID, "c1", k)})
		Eventually(func() []string { return roleBindings(ctx, provider, ns) }).WithTimeout(time.Minute).Should(BeEmpty(), "the replaced peering is drained")
		expectReported(ctx, provider, dir+"tenant.yaml", "rejected, nothing issued", "is not the key pinned for c1", "failing closed")
		Eventually(func(g Gomega) {
			obj := peeringRepository(ctx, g, provider)
			g.Expect(obj.Status.Peerings).To(ContainElement(And(HaveField("PeerID", authv1beta1.ClusterID("c1")),
				HaveField("Phase", gitpeerv1alpha1.PhaseFailed), HaveField("Message", ContainSubstring("tenant drained: RBAC removed")))))
		}).WithTimeout(time.Minute).Should(Succeed())
		Consistently(func(g Gomega) {
			t := &authv1beta1.Tenant{}
			g.Expect(provider.k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "c1"}, t)).To(Succeed())
			g.Expect(t.Spec.TenantCondition).To(Equal(authv1beta1.TenantConditionDrained))
			g.Expect(t.Spec.Signature).To(Equal(applied.Spec.Signature), "the refused Tenant is not applied")
			g.Expect(roleBindings(ctx, provider, ns)).To(BeEmpty())
			// Nothing renewed or issued, nothing revoked or deleted.
			g.Expect(csrCount(ctx, provider, "c1")).To(Equal(csrs))
			g.Expect(show("main", dir+"identity.yaml")).To(Equal(identity))
			g.Expect(show("main", dir+"nonce.yaml")).NotTo(BeEmpty())
			g.Expect(issuedRecords(ctx, provider, "c1")).NotTo(ContainSubstring(`"revokedAt"`))
		}).WithTimeout(5 * time.Second).Should(Succeed())

		commit("Restore c1's bound tenant.yaml", bound)
		Eventually(func() []string { return roleBindings(ctx, provider, ns) }).WithTimeout(time.Minute).ShouldNot(BeEmpty())
		t := &authv1beta1.Tenant{}
		Expect(provider.k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "c1"}, t)).To(Succeed())
		Expect(t.Spec.TenantCondition).NotTo(Equal(authv1beta1.TenantConditionDrained))
	})

	It("keeps c1's key pinned across revocation and accepts a new key only with the rekey annotation", func(ctx SpecContext) {
		w := clone()
		gitCLI(w, "rm", "-q", firstDir("c1")+"tenant.yaml")
		gitCLI(w, "commit", "-q", "-m", "Revoke c1")
		pushMain(w)
		Eventually(func() string { return show("main", firstDir("c1")+"request.yaml") }).WithTimeout(time.Minute).Should(BeEmpty())
		annotateRepository(ctx, provider, gitpeerv1alpha1.RevivalAnnotationPrefix+"c1", gitpeerv1alpha1.AcceptRevivalValue)

		k := newClusterKey()
		commit("Request c1 with a new key", map[string][]byte{firstDir("c1") + "request.yaml": requestFor(owProviderID, "c1", k)})
		nonce := waitNonceAt(firstDir("c1"), "")
		commit("Tenant c1 with a new key", map[string][]byte{firstDir("c1") + "tenant.yaml": tenantDoc(signedTenant(k, "c1", nonce))})
		sum := sha256.Sum256(must(x509.MarshalPKIXPublicKey(k.Public())))
		pin := hex.EncodeToString(sum[:])
		expectReported(ctx, provider, firstDir("c1")+"tenant.yaml", "is not the key pinned for c1", gitpeerv1alpha1.RekeyAnnotationPrefix+"c1="+pin)
		Expect(show("main", firstDir("c1")+"identity.yaml")).To(BeEmpty())

		// Someone who may annotate namespaces, not the provider's admin, writes the new key's pin
		// where gitpeer 0.1.0 kept it: the records alone hold the pin, so nothing changes.
		recorded := issuedRecords(ctx, provider, "c1")
		Expect(recorded).NotTo(ContainSubstring(pin))
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: authv1beta1.TenantNamespaceName("c1")}}
		Expect(provider.k8s.Patch(ctx, ns, client.RawPatch(types.MergePatchType,
			[]byte(`{"metadata":{"annotations":{"`+vocabulary.PinnedKeyAnnotation+`":"`+pin+`"}}}`)))).To(Succeed())
		Consistently(func() string { return show("main", firstDir("c1")+"identity.yaml") }).WithTimeout(8*time.Second).Should(BeEmpty(),
			"a pin annotated on the tenant namespace must not let the new key in")
		Expect(issuedRecords(ctx, provider, "c1")).To(Equal(recorded))

		annotateRepository(ctx, provider, gitpeerv1alpha1.RekeyAnnotationPrefix+"c1", pin)
		Eventually(func() string { return show("main", firstDir("c1")+"identity.yaml") }).WithTimeout(time.Minute).ShouldNot(BeEmpty())

		// Both overrides are used once: removed, and named by the commit of the new identity.
		obj := peeringRepository(ctx, Default, provider)
		Expect(obj.Annotations).NotTo(HaveKey(gitpeerv1alpha1.RekeyAnnotationPrefix + "c1"))
		Expect(obj.Annotations).NotTo(HaveKey(gitpeerv1alpha1.RevivalAnnotationPrefix + "c1"))
		Expect(gitCLI(repo.Dir, "log", "-1", "--format=%B", "main", "--", firstDir("c1")+"identity.yaml")).To(ContainSubstring(
			"Gitpeer-Override: " + gitpeerv1alpha1.RevivalAnnotationPrefix + "c1=" + gitpeerv1alpha1.AcceptRevivalValue + ", " + gitpeerv1alpha1.RekeyAnnotationPrefix + "c1=" + pin))
	})

	It("revokes the peerings of a deleted PeeringRepository with deletionPolicy Revoke, and only those", func(ctx SpecContext) {
		Expect(provider.k8s.Delete(ctx, second)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(provider.k8s.Get(ctx, client.ObjectKeyFromObject(second), &gitpeerv1alpha1.PeeringRepository{}))
		}).WithTimeout(time.Minute).Should(BeTrue())
		Expect(apierrors.IsNotFound(provider.k8s.Get(ctx, client.ObjectKey{Namespace: "liqo-tenant-c2", Name: "c2"}, &authv1beta1.Tenant{}))).To(BeTrue())
		Expect(roleBindings(ctx, provider, "liqo-tenant-c2")).To(BeEmpty())
		Expect(provider.k8s.Get(ctx, client.ObjectKey{Namespace: "liqo-tenant-c1", Name: "c1"}, &authv1beta1.Tenant{})).To(Succeed())
		Expect(roleBindings(ctx, provider, "liqo-tenant-c1")).NotTo(BeEmpty())
	})

	It("adopts the earlier version's namespace once it is the only provider and an admin asks", func(ctx SpecContext) {
		Consistently(func(g Gomega) {
			ns := &corev1.Namespace{}
			g.Expect(provider.k8s.Get(ctx, client.ObjectKey{Name: "liqo-tenant-c8"}, ns)).To(Succeed())
			g.Expect(ns.Labels).NotTo(HaveKey(vocabulary.OwnerLabel))
		}).WithTimeout(3 * time.Second).Should(Succeed())
		Expect(provider.k8s.Patch(ctx, provider.object, client.RawPatch(types.MergePatchType,
			[]byte(`{"metadata":{"annotations":{"`+gitpeerv1alpha1.AdoptUnownedAnnotation+`":"true"}}}`)))).To(Succeed())
		Eventually(func(g Gomega) {
			ns := &corev1.Namespace{}
			g.Expect(provider.k8s.Get(ctx, client.ObjectKey{Name: "liqo-tenant-c8"}, ns)).To(Succeed())
			g.Expect(ns.Labels).To(HaveKeyWithValue(vocabulary.OwnerLabel, string(provider.object.UID)))
		}).WithTimeout(time.Minute).Should(Succeed())
		waitNonceAt(firstDir("c8"), "")
	})

	It("leaves the peerings in place with deletionPolicy Orphan", func(ctx SpecContext) {
		setProviderSpec(ctx, provider, func(p *gitpeerv1alpha1.ProviderSpec) { p.DeletionPolicy = gitpeerv1alpha1.DeletionOrphan })
		Expect(provider.k8s.Delete(ctx, provider.object)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(provider.k8s.Get(ctx, client.ObjectKeyFromObject(provider.object), &gitpeerv1alpha1.PeeringRepository{}))
		}).WithTimeout(time.Minute).Should(BeTrue())
		Expect(provider.k8s.Get(ctx, client.ObjectKey{Namespace: "liqo-tenant-c1", Name: "c1"}, &authv1beta1.Tenant{})).To(Succeed())
		Expect(roleBindings(ctx, provider, "liqo-tenant-c1")).NotTo(BeEmpty())
	})
})

// roleBindings lists the names of the RoleBindings in ns.
func roleBindings(ctx context.Context, c *cluster, ns string) []string {
	GinkgoHelper()
	var list rbacv1.RoleBindingList
	Expect(c.k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
	var out []string
	for _, rb := range list.Items {
		out = append(out, rb.Name)
	}
	return out
}

// setProviderSpec changes the cluster's PeeringRepository's provider spec.
func setProviderSpec(ctx context.Context, c *cluster, mutate func(*gitpeerv1alpha1.ProviderSpec)) {
	GinkgoHelper()
	obj := peeringRepository(ctx, Default, c)
	patch := client.MergeFrom(obj.DeepCopy())
	mutate(obj.Spec.Provider)
	Expect(c.k8s.Patch(ctx, obj, patch)).To(Succeed())
}

// annotateRepository sets an annotation on the cluster's PeeringRepository.
func annotateRepository(ctx context.Context, c *cluster, key, value string) {
	GinkgoHelper()
	obj := peeringRepository(ctx, Default, c)
	patch := client.MergeFrom(obj.DeepCopy())
	metav1.SetMetaDataAnnotation(&obj.ObjectMeta, key, value)
	Expect(c.k8s.Patch(ctx, obj, patch)).To(Succeed())
}

// issuedRecords returns the provider's records of consumer's certificates.
func issuedRecords(ctx context.Context, c *cluster, consumer string) string {
	GinkgoHelper()
	secret := &corev1.Secret{}
	Expect(c.k8s.Get(ctx, client.ObjectKey{Namespace: agentNamespace, Name: vocabulary.RecordsSecretName("peering", consumer)}, secret)).To(Succeed())
	Expect(json.Valid(secret.Data[consumer])).To(BeTrue())
	return string(secret.Data[consumer])
}

// waitNonceAt waits for dir/nonce.yaml to hold a nonce other than not.
func waitNonceAt(dir, not string) string {
	GinkgoHelper()
	var nonce string
	Eventually(func(g Gomega) {
		var n documents.Nonce
		g.Expect(yaml.Unmarshal([]byte(show("main", dir+"nonce.yaml")), &n)).To(Succeed())
		g.Expect(n.Spec.Nonce).NotTo(BeEmpty())
		g.Expect(n.Spec.Nonce).NotTo(Equal(not))
		nonce = n.Spec.Nonce
	}).WithTimeout(time.Minute).Should(Succeed())
	return nonce
}

// expectNoTenantNamespace checks, for a few seconds, that nothing was created for id.
func expectNoTenantNamespace(ctx context.Context, c *cluster, id, dir string) {
	GinkgoHelper()
	Consistently(func(g Gomega) {
		err := c.k8s.Get(ctx, client.ObjectKey{Name: authv1beta1.TenantNamespaceName(authv1beta1.ClusterID(id))}, &corev1.Namespace{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "namespace of %s: %v", id, err)
		g.Expect(show("main", dir+"nonce.yaml")).To(BeEmpty())
	}).WithTimeout(3 * time.Second).Should(Succeed())
}

// deferredPeers lists the peers whose peering message contains want.
func deferredPeers(ctx context.Context, c *cluster, want string) []string {
	GinkgoHelper()
	var out []string
	for _, p := range peeringRepository(ctx, Default, c).Status.Peerings {
		if strings.Contains(p.Message, want) {
			out = append(out, string(p.PeerID))
		}
	}
	return out
}
