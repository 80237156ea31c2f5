package liqo_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	"github.com/gitpeer/gitpeer/test/liqo"
)

// Liqo v1.2.0's Tenant admission webhook (pkg/webhooks/tenant): label =
// spec.clusterID = namespace label; one Tenant per namespace.
var _ = Describe("Tenant admission webhook", func() {
	BeforeEach(func(ctx SpecContext) {
		Expect(liqo.WaitForTenantWebhook(ctx, provider.client)).To(Succeed())
	})

	// tenant returns a Tenant for id in namespace ns labelled label.
	tenant := func(ns, id, label string) *authv1beta1.Tenant {
		return &authv1beta1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: id, Namespace: ns,
			Labels: map[string]string{authv1beta1.RemoteClusterIDLabel: label}},
			Spec: authv1beta1.TenantSpec{ClusterID: authv1beta1.ClusterID(id)}}
	}
	namespace := func(ctx SpecContext, name, label string) string {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels: map[string]string{authv1beta1.RemoteClusterIDLabel: label}}}
		Expect(provider.client.Create(ctx, ns)).To(Succeed())
		return name
	}

	It("admits the Tenant liqoctl generate tenant builds, in its tenant namespace", func(ctx SpecContext) {
		t := applyTenant(ctx, "hook-ok", nil)
		// Merge patches: the tenant controller updates the Tenant meanwhile.
		By("admitting an update that keeps the labels")
		patch := client.MergeFrom(t.DeepCopy())
		t.Spec.TenantCondition = authv1beta1.TenantConditionActive
		Expect(provider.client.Patch(ctx, t, patch)).To(Succeed())
		By("denying an update that changes the label")
		patch = client.MergeFrom(t.DeepCopy())
		t.Labels[authv1beta1.RemoteClusterIDLabel] = "someone-else"
		Expect(provider.client.Patch(ctx, t, patch)).To(MatchError(ContainSubstring("is not spec.clusterID")))
	})

	It("denies a Tenant whose label is not spec.clusterID", func(ctx SpecContext) {
		ns := namespace(ctx, "hook-label", "hook-label")
		Expect(provider.client.Create(ctx, tenant(ns, "hook-label", "other"))).To(
			MatchError(ContainSubstring(liqo.TenantWebhookName + `: label liqo.io/remote-cluster-id="other" is not spec.clusterID "hook-label"`)))
	})

	It("denies a Tenant whose namespace belongs to another cluster ID", func(ctx SpecContext) {
		ns := namespace(ctx, "hook-ns", "another-cluster")
		Expect(provider.client.Create(ctx, tenant(ns, "hook-ns", "hook-ns"))).To(
			MatchError(ContainSubstring(`has label liqo.io/remote-cluster-id="another-cluster", not spec.clusterID "hook-ns"`)))
	})

	It("denies a second Tenant in a namespace", func(ctx SpecContext) {
		ns := namespace(ctx, "hook-two", "hook-two")
		Expect(provider.client.Create(ctx, tenant(ns, "hook-two", "hook-two"))).To(Succeed())
		second := tenant(ns, "hook-two", "hook-two")
		second.Name = "hook-two-again"
		Expect(provider.client.Create(ctx, second)).To(MatchError(ContainSubstring("one Tenant per namespace")))
		Expect(provider.client.Get(ctx, client.ObjectKeyFromObject(second), second)).NotTo(Succeed())
	})
})
