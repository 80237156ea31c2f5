package e2e

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
)

// An admin drains and reactivates a tenant with a kustomization.yaml beside
// the consumer's signed tenant.yaml, without touching the signed file.
var _ = Describe("Kustomization", Ordered, func() {
	const kProviderID, kConsumerID = "provider-k", "consumer-k"
	dir := kProviderID + "/" + kConsumerID + "/"
	tenantNS := authv1beta1.TenantNamespaceName(kConsumerID)
	var provider, consumer *cluster
	var kubeconfig []byte

	BeforeAll(func(ctx SpecContext) {
		provider, consumer = peerDirect(kProviderID, kConsumerID)
		kubeconfig = kubeconfigOf(ctx, consumer, kProviderID)
		Expect(can(ctx, clientFor(kubeconfig), "create", "authentication.liqo.io", "resourceslices", tenantNS)).To(BeTrue())
	})

	// setCondition commits a kustomization.yaml that patches the Tenant's condition.
	setCondition := func(condition authv1beta1.TenantCondition) {
		commit("Set "+kConsumerID+" "+string(condition), map[string][]byte{dir + "kustomization.yaml": []byte(`resources:
- tenant.yaml
patches:
- target:
    kind: Tenant
  patch: |-
    - op: add
      path: /spec/tenantCondition
      value: ` + string(condition) + "\n")})
	}

	// reactivate sets the Tenant Active again and waits until access is back.
	reactivate := func(ctx context.Context) {
		GinkgoHelper()
		setCondition(authv1beta1.TenantConditionActive)
		Eventually(func() bool {
			return can(ctx, clientFor(kubeconfig), "create", "authentication.liqo.io", "resourceslices", tenantNS)
		}).WithTimeout(time.Minute).Should(BeTrue())
		Eventually(func(g Gomega) {
			g.Expect(peeringPhases(ctx, provider)).To(HaveKeyWithValue("Provider/"+kConsumerID, gitpeerv1alpha1.PhaseIssued))
		}).WithTimeout(time.Minute).Should(Succeed())
	}

	It("drains the tenant: its RoleBinding goes, nothing is revoked", func(ctx SpecContext) {
		identity, tenant := show("main", dir+"identity.yaml"), show("main", dir+"tenant.yaml")
		setCondition(authv1beta1.TenantConditionDrained)

		Eventually(func(g Gomega) {
			t := &authv1beta1.Tenant{}
			g.Expect(provider.k8s.Get(ctx, client.ObjectKey{Namespace: tenantNS, Name: kConsumerID}, t)).To(Succeed())
			g.Expect(t.Spec.TenantCondition).To(Equal(authv1beta1.TenantConditionDrained))
			g.Expect(peeringPhases(ctx, provider)).To(HaveKeyWithValue("Provider/"+kConsumerID, gitpeerv1alpha1.PhaseDrained))
		}).WithTimeout(time.Minute).Should(Succeed())
		Eventually(func() bool {
			return can(ctx, clientFor(kubeconfig), "create", "authentication.liqo.io", "resourceslices", tenantNS)
		}).WithTimeout(time.Minute).Should(BeFalse())

		Consistently(func(g Gomega) {
			g.Expect(show("main", dir+"identity.yaml")).To(Equal(identity))
			g.Expect(show("main", dir+"tenant.yaml")).To(Equal(tenant), "the signed file is untouched")
			g.Expect(kubeconfigOf(ctx, consumer, kProviderID)).To(Equal(kubeconfig))
			g.Expect(conditionOf(peeringRepository(ctx, g, provider), gitpeerv1alpha1.FilesValidCondition)).To(HaveField("Status", BeEquivalentTo("True")))
		}).WithTimeout(5 * time.Second).Should(Succeed())
	})

	It("reactivates the tenant: access is restored", func(ctx SpecContext) {
		reactivate(ctx)
	})

	// expectDrained waits until the consumer has lost access while its Tenant
	// is kept, drained, and then checks that this lasts and that identity.yaml
	// is untouched.
	expectDrained := func(ctx context.Context) {
		GinkgoHelper()
		identity := show("main", dir+"identity.yaml")
		Eventually(func(g Gomega) {
			t := &authv1beta1.Tenant{}
			g.Expect(provider.k8s.Get(ctx, client.ObjectKey{Namespace: tenantNS, Name: kConsumerID}, t)).To(Succeed())
			g.Expect(t.Spec.TenantCondition).To(Equal(authv1beta1.TenantConditionDrained))
			g.Expect(can(ctx, clientFor(kubeconfig), "create", "authentication.liqo.io", "resourceslices", tenantNS)).To(BeFalse())
		}).WithTimeout(time.Minute).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(can(ctx, clientFor(kubeconfig), "create", "authentication.liqo.io", "resourceslices", tenantNS)).To(BeFalse())
			g.Expect(show("main", dir+"identity.yaml")).To(Equal(identity))
		}).WithTimeout(5 * time.Second).Should(Succeed())
	}

	It("never lets a case-variant key in tenant.yaml undo the admin's drain", func(ctx SpecContext) {
		tenant := show("main", dir+"tenant.yaml")
		sneaky := strings.Replace(tenant, "spec:\n", "spec:\n  tenantcondition: Active\n", 1)
		Expect(sneaky).NotTo(Equal(tenant))
		commit("Drain "+kConsumerID+", with a case-variant key", map[string][]byte{dir + "tenant.yaml": []byte(sneaky)})
		setCondition(authv1beta1.TenantConditionDrained)
		expectDrained(ctx)
		expectReported(ctx, provider, dir+"kustomization.yaml", "in tenant.yaml", "differ only in case")

		commit("Restore "+kConsumerID, map[string][]byte{dir + "tenant.yaml": []byte(tenant)})
		reactivate(ctx)
	})

	It("fails closed while the directory does not build, and recovers once it does", func(ctx SpecContext) {
		commit("Break "+kConsumerID+"'s kustomization", map[string][]byte{dir + "kustomization.yaml": []byte("resources: [tenant.yaml, missing.yaml]\n")})
		expectDrained(ctx)
		Eventually(func(g Gomega) {
			g.Expect(peeringPhases(ctx, provider)).To(HaveKeyWithValue("Provider/"+kConsumerID, gitpeerv1alpha1.PhaseFailed))
		}).WithTimeout(time.Minute).Should(Succeed())

		reactivate(ctx)
	})

	It("revokes when tenant.yaml is deleted, though kustomization.yaml still lists it", func(ctx SpecContext) {
		setCondition(authv1beta1.TenantConditionDrained)
		w := clone()
		gitCLI(w, "rm", "-q", dir+"tenant.yaml")
		gitCLI(w, "commit", "-q", "-m", "Revoke "+kConsumerID)
		pushMain(w)
		Eventually(func(g Gomega) {
			g.Expect(show("main", dir+"identity.yaml")).To(BeEmpty())
			err := provider.k8s.Get(ctx, client.ObjectKey{Namespace: tenantNS, Name: kConsumerID}, &authv1beta1.Tenant{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "tenant still there: %v", err)
		}).WithTimeout(time.Minute).Should(Succeed())
		Expect(can(ctx, clientFor(kubeconfig), "create", "authentication.liqo.io", "resourceslices", tenantNS)).To(BeFalse())
		Expect(show("main", dir+"kustomization.yaml")).NotTo(BeEmpty())
	})
})

// peerDirect starts a provider and a consumer in direct mode and waits until
// the consumer's peering is Ready; the consumer warned of each of its pushes to the branch.
func peerDirect(providerID, consumerID string) (provider, consumer *cluster) {
	GinkgoHelper()
	provider, consumer = startPeers(providerID, consumerID, true)
	Eventually(func(g Gomega) {
		g.Expect(peeringPhases(context.Background(), consumer)).To(HaveKeyWithValue("Consumer/"+providerID, gitpeerv1alpha1.PhaseReady),
			"consumer: %v\nprovider: %v", peeringMessages(consumer), peeringMessages(provider))
	}).WithTimeout(2 * time.Minute).Should(Succeed())
	for _, file := range []string{"request.yaml", "tenant.yaml"} {
		expectEvent(context.Background(), consumer, gitpeerv1alpha1.DirectModeReason, file+" for provider "+providerID+" committed straight to the branch", "single-admin labs")
	}
	return provider, consumer
}

// startPeers starts a provider and a consumer of it (in direct mode, or
// proposing its Tenant for review) with their agents.
func startPeers(providerID, consumerID string, direct bool) (provider, consumer *cluster) {
	GinkgoHelper()
	provider, consumer = newCluster(providerID), newCluster(consumerID)
	provider.apply(func(s *gitpeerv1alpha1.PeeringRepositorySpec) {
		s.Provider = &gitpeerv1alpha1.ProviderSpec{Enabled: true, APIServer: provider.cp.URL}
	})
	consumer.apply(func(s *gitpeerv1alpha1.PeeringRepositorySpec) {
		s.Consumer = &gitpeerv1alpha1.ConsumerSpec{Providers: []authv1beta1.ClusterID{authv1beta1.ClusterID(providerID)}, Direct: direct, TrustedCAs: anchors(provider)}
	})
	provider.startAgent()
	consumer.startAgent()
	return provider, consumer
}

// kubeconfigOf returns the kubeconfig the consumer holds for providerID.
func kubeconfigOf(ctx context.Context, consumer *cluster, providerID string) []byte {
	GinkgoHelper()
	id := authv1beta1.ClusterID(providerID)
	secret := &corev1.Secret{}
	Expect(consumer.k8s.Get(ctx, client.ObjectKey{
		Namespace: authv1beta1.TenantNamespaceName(id),
		Name:      authv1beta1.KubeconfigSecretName(authv1beta1.ControlPlaneIdentityName(id)),
	}, secret)).To(Succeed())
	return secret.Data[authv1beta1.KubeconfigSecretField]
}
