package e2e

import (
	"context"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/reconciler/liqo"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	liqoctl "github.com/gitpeer/gitpeer/test/liqo"
	"github.com/gitpeer/gitpeer/test/liqoreal"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// The provider in Liqo mode meets what a user's Liqo install holds before
// gitpeer: tenant namespaces Liqo itself created (`liqoctl create nonce`,
// `liqoctl peer`, `liqoctl network connect`) and Liqo's version, on Liqo's
// own authentication module (the liqo-auth-harness).
var _ = Describe("Liqo install on the real Liqo: its tenant namespaces and version", Ordered, func() {
	const providerID, consumerID, strayID, tolerantID, laterID = "inst-p", "inst-c", "inst-s", "inst-t", "inst-l"
	var provider *cluster

	BeforeAll(func(ctx SpecContext) {
		provider = startRealLiqoProvider(ctx, providerID)
	})

	It("adopts the tenant namespace `liqoctl create nonce` made before gitpeer, replaces Liqo's nonce, peers, and never deletes it", func(ctx SpecContext) {
		liqosNonce := must(liqoctl.CreateNonce(ctx, provider.k8s, consumerID))
		ns := authv1beta1.TenantNamespaceName(consumerID)

		dir := providerID + "/" + consumerID + "/"
		key := newClusterKey()
		commit("Request peering of "+consumerID, map[string][]byte{dir + "request.yaml": requestFor(providerID, consumerID, key)})
		nonce := waitNonceAt(dir, liqosNonce)
		Expect(nonce).NotTo(Equal(liqosNonce), "the nonce made before gitpeer is not trusted")

		nsObj := &corev1.Namespace{}
		Expect(provider.k8s.Get(ctx, client.ObjectKey{Name: ns}, nsObj)).To(Succeed())
		Expect(nsObj.Labels).To(HaveKeyWithValue(vocabulary.OwnerLabel, string(provider.object.UID)))
		Expect(nsObj.Labels).NotTo(HaveKey(vocabulary.ManagedByLabel), "a namespace Liqo made is never deleted by gitpeer")
		Expect(nsObj.Annotations).To(HaveKeyWithValue(vocabulary.ModeAnnotation, gitpeerv1alpha1.PeeringModeLiqo))

		tenant := must(protocol.NewTenant(consumerID, key, nonce))
		commit("Merge pull request: Tenant of "+consumerID, map[string][]byte{dir + "tenant.yaml": tenantDoc(tenant)})
		id := waitIdentity(dir, "")
		Expect(id.Spec.ClusterID).To(Equal(authv1beta1.ClusterID(providerID)))

		By("the provider warns when it publishes another API server than Liqo advertises")
		setProvider := func(mutate func(*gitpeerv1alpha1.ProviderSpec)) {
			obj := peeringRepository(ctx, Default, provider)
			patch := client.MergeFrom(obj.DeepCopy())
			mutate(obj.Spec.Provider)
			Expect(provider.k8s.Patch(ctx, obj, patch)).To(Succeed())
		}
		const elsewhere = "https://gitpeer.example:6443"
		setProvider(func(p *gitpeerv1alpha1.ProviderSpec) { p.APIServer = elsewhere })
		Eventually(func(g Gomega) {
			g.Expect(peeringRepository(ctx, g, provider).Status.Peerings).To(ContainElement(And(
				HaveField("PeerID", authv1beta1.ClusterID(consumerID)), HaveField("Reason", vocabulary.ReasonLiqoAPIServerMismatch))))
		}).WithTimeout(time.Minute).Should(Succeed())
		expectEvent(ctx, provider, vocabulary.ReasonLiqoAPIServerMismatch, `Liqo advertises API server "`+provider.cp.URL+`"`, `publishes "`+elsewhere+`"`)
		setProvider(func(p *gitpeerv1alpha1.ProviderSpec) { p.APIServer = provider.cp.URL })

		By("a revocation, even with deleteNamespaceOnRevoke, leaves the namespace Liqo made")
		setProvider(func(p *gitpeerv1alpha1.ProviderSpec) { p.DeleteNamespaceOnRevoke = true })
		w := clone()
		gitCLI(w, "rm", "-q", dir+"tenant.yaml")
		gitCLI(w, "commit", "-q", "-m", "Revoke "+consumerID)
		pushMain(w)
		Eventually(func() bool {
			return apierrors.IsNotFound(provider.k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: consumerID}, &authv1beta1.Tenant{}))
		}).WithTimeout(time.Minute).Should(BeTrue())
		Consistently(func(g Gomega) {
			g.Expect(provider.k8s.Get(ctx, client.ObjectKey{Name: ns}, nsObj)).To(Succeed())
			g.Expect(nsObj.DeletionTimestamp).To(BeNil())
		}).WithTimeout(3 * time.Second).Should(Succeed())
	})

	It("refuses a Liqo tenant namespace that grants access already, saying so, until it is cleared", func(ctx SpecContext) {
		must(liqoctl.CreateNonce(ctx, provider.k8s, strayID))
		ns := authv1beta1.TenantNamespaceName(strayID)
		binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "left-over"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "admin"},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: strayID}}}
		Expect(provider.k8s.Create(ctx, binding)).To(Succeed())

		dir := providerID + "/" + strayID + "/"
		commit("Request peering of "+strayID, map[string][]byte{dir + "request.yaml": requestFor(providerID, strayID, newClusterKey())})
		Eventually(func(g Gomega) {
			obj := peeringRepository(ctx, g, provider)
			var got *gitpeerv1alpha1.PeeringStatus
			for i := range obj.Status.Peerings {
				if obj.Status.Peerings[i].PeerID == strayID {
					got = &obj.Status.Peerings[i]
				}
			}
			g.Expect(got).NotTo(BeNil())
			g.Expect(got.Phase).To(Equal(gitpeerv1alpha1.PhaseFailed))
			g.Expect(got.Reason).To(Equal(vocabulary.ReasonLiqoNamespaceRefused))
			g.Expect(got.Message).To(ContainSubstring("would have to trust: RoleBinding left-over"))
		}).WithTimeout(time.Minute).Should(Succeed())
		expectEvent(ctx, provider, vocabulary.ReasonLiqoNamespaceRefused, "namespace "+ns+" was created by Liqo", "RoleBinding left-over")
		Expect(show("main", dir+"nonce.yaml")).To(BeEmpty())

		By("an admin removes the binding: the namespace is adopted")
		Expect(provider.k8s.Delete(ctx, binding)).To(Succeed())
		waitNonceAt(dir, "")
	})

	It("refuses a TolerateNoHandshake Tenant, which Liqo would take without the handshake: it is never applied", func(ctx SpecContext) {
		dir := providerID + "/" + tolerantID + "/"
		key := newClusterKey()
		commit("Request peering of "+tolerantID, map[string][]byte{dir + "request.yaml": requestFor(providerID, tolerantID, key)})
		tenant := must(protocol.NewTenant(tolerantID, key, waitNonceAt(dir, "")))
		tenant.Spec.AuthzPolicy = ptr.To(authv1beta1.TolerateNoHandshake)
		commit("Merge pull request: Tenant of "+tolerantID, map[string][]byte{dir + "tenant.yaml": tenantDoc(tenant)})
		expectReported(ctx, provider, dir+"tenant.yaml", `spec.authzPolicy is "TolerateNoHandshake"`)
		expectNothingIssuedIn(ctx, provider, dir, tolerantID)
	})

	It("reports Liqo's version and refuses one that cannot work", func(ctx SpecContext) {
		liqoReady := func(g Gomega) *metav1.Condition {
			c := conditionOf(peeringRepository(ctx, g, provider), gitpeerv1alpha1.LiqoReadyCondition)
			g.Expect(c).NotTo(BeNil())
			return c
		}
		Eventually(func(g Gomega) {
			c := liqoReady(g)
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Message).To(HaveSuffix(", Liqo " + liqo.TestedVersion))
		}).WithTimeout(time.Minute).Should(Succeed())

		setLiqoVersion := func(v string) {
			cm := &corev1.ConfigMap{}
			Expect(provider.k8s.Get(ctx, client.ObjectKey{Namespace: gitpeerv1alpha1.DefaultLiqoNamespace, Name: liqo.ClusterIDConfigMap}, cm)).To(Succeed())
			patch := client.MergeFrom(cm.DeepCopy())
			metav1.SetMetaDataLabel(&cm.ObjectMeta, liqo.VersionLabel, v)
			Expect(provider.k8s.Patch(ctx, cm, patch)).To(Succeed())
		}
		setLiqoVersion("v1.1.2")
		Eventually(func(g Gomega) {
			c := liqoReady(g)
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(gitpeerv1alpha1.LiqoVersionUnsupportedReason))
			g.Expect(c.Message).To(ContainSubstring("never renews the control-plane certificates"))
		}).WithTimeout(time.Minute).Should(Succeed())

		setLiqoVersion(liqo.TestedVersion)
		Eventually(func(g Gomega) metav1.ConditionStatus { return liqoReady(g).Status }).WithTimeout(time.Minute).Should(Equal(metav1.ConditionTrue))
	})

	It("refuses to run while Liqo's cluster ID is not spec.clusterID, and runs again once it is", func(ctx SpecContext) {
		setLiqoClusterID := func(id string) {
			cm := &corev1.ConfigMap{}
			Expect(provider.k8s.Get(ctx, client.ObjectKey{Namespace: gitpeerv1alpha1.DefaultLiqoNamespace, Name: liqo.ClusterIDConfigMap}, cm)).To(Succeed())
			patch := client.MergeFrom(cm.DeepCopy())
			cm.Data[liqo.ClusterIDKey] = id
			Expect(provider.k8s.Patch(ctx, cm, patch)).To(Succeed())
		}
		// As a Liqo installed with another discovery.config.clusterID has it.
		setLiqoClusterID("someone-else")
		Eventually(func(g Gomega) {
			obj := peeringRepository(ctx, g, provider)
			for _, t := range []string{meta.StalledCondition, gitpeerv1alpha1.LiqoReadyCondition} {
				g.Expect(conditionOf(obj, t)).To(And(HaveField("Reason", gitpeerv1alpha1.LiqoClusterIDMismatchReason),
					HaveField("Message", ContainSubstring(`Liqo's cluster ID is "someone-else"`))), t)
			}
			g.Expect(conditionOf(obj, meta.ReadyCondition)).To(HaveField("Status", metav1.ConditionFalse))
		}).WithTimeout(time.Minute).Should(Succeed())
		expectEvent(ctx, provider, gitpeerv1alpha1.LiqoClusterIDMismatchReason, "refuses to run")
		dir := providerID + "/" + laterID + "/"
		commit("Request peering of "+laterID, map[string][]byte{dir + "request.yaml": requestFor(providerID, laterID, newClusterKey())})
		Consistently(func() string { return show("main", dir+"nonce.yaml") }).WithTimeout(3*time.Second).Should(BeEmpty(), "the agent ran")

		setLiqoClusterID(providerID)
		waitNonceAt(dir, "")
	})
})

// startRealLiqoProvider starts cluster id with Liqo's own authentication
// module (the liqo-auth-harness, advertising the cluster's API server) and
// its agent, a provider in Liqo mode, until the end of the node.
func startRealLiqoProvider(ctx context.Context, id string) *cluster {
	GinkgoHelper()
	c := newCluster(id)
	h := must(liqoreal.Start(ctx, c.cp, GinkgoT().TempDir(), liqoreal.Options{ClusterID: id, APIServer: c.cp.URL}))
	DeferCleanup(h.Stop)
	applyLiqoProvider(c)
	c.startAgent()
	return c
}
