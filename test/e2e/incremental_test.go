package e2e

import (
	gocrypto "crypto"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/vocabulary"
)

const incProviderID = "provider-inc"

// A provider's rounds visit only the peerings that changed: the test reads
// gitpeer_round_peerings, the histogram of the peerings each round visited,
// from the agent running in this process.
var _ = Describe("Incremental rounds", Ordered, func() {
	var provider *cluster
	dir := func(id string) string { return incProviderID + "/" + id + "/" }
	keys := map[string]gocrypto.Signer{}
	issued := []string{"i1", "i2", "i3"}

	BeforeAll(func() {
		provider = newCluster(incProviderID)
		provider.apply(func(s *gitpeerv1alpha1.PeeringRepositorySpec) {
			s.Provider = &gitpeerv1alpha1.ProviderSpec{Enabled: true, APIServer: provider.cp.URL}
		})
		provider.startAgent()
	})

	It("visits no peering in quiet rounds once its consumers are issued or wait for tenant.yaml", func() {
		requests := map[string][]byte{}
		for _, id := range append(issued, "w1", "w2") {
			k := newClusterKey()
			keys[id] = k
			requests[dir(id)+"request.yaml"] = requestFor(incProviderID, id, k)
		}
		commit("Requests", requests)
		tenants := map[string][]byte{}
		for _, id := range issued {
			tenants[dir(id)+"tenant.yaml"] = tenantDoc(signedTenant(keys[id], id, waitNonceAt(dir(id), "")))
		}
		waitNonceAt(dir("w1"), "")
		waitNonceAt(dir("w2"), "")
		commit("Tenants", tenants)
		for _, id := range issued {
			Eventually(func() string { return show("main", dir(id)+"identity.yaml") }).WithTimeout(time.Minute).ShouldNot(BeEmpty(), id)
		}
		expectQuiet(provider)
	})

	It("restores a RoleBinding it created, deleted behind its back, within a round or two", func(ctx SpecContext) {
		ns := authv1beta1.TenantNamespaceName("i1")
		bindings := &rbacv1.RoleBindingList{}
		Expect(provider.k8s.List(ctx, bindings, client.InNamespace(ns), client.MatchingLabels{vocabulary.OwnerLabel: string(provider.object.UID)})).To(Succeed())
		Expect(bindings.Items).To(HaveLen(1))
		gone := bindings.Items[0]
		Expect(provider.k8s.Delete(ctx, &gone)).To(Succeed())
		Eventually(func(g Gomega) {
			rb := &rbacv1.RoleBinding{}
			g.Expect(provider.k8s.Get(ctx, client.ObjectKeyFromObject(&gone), rb)).To(Succeed())
			g.Expect(rb.UID).NotTo(Equal(gone.UID))
			g.Expect(rb.Subjects).To(Equal(gone.Subjects))
		}).WithTimeout(15 * time.Second).Should(Succeed())
		expectQuiet(provider)
	})

	It("reports and skips a foreign Tenant planted for a consumer waiting for tenant.yaml", func(ctx SpecContext) {
		// w1 is settled (nonce issued, waiting for tenant.yaml): only the planted object can make the round look at it.
		planted := signedTenant(keys["w1"], "w1", "not the nonce")
		planted.TypeMeta = metav1.TypeMeta{}
		planted.Namespace = authv1beta1.TenantNamespaceName("w1")
		Expect(provider.k8s.Create(ctx, planted)).To(Succeed())
		Eventually(func(g Gomega) {
			obj := peeringRepository(ctx, g, provider)
			g.Expect(obj.Status.Peerings).To(ContainElement(And(HaveField("PeerID", authv1beta1.ClusterID("w1")),
				HaveField("Phase", gitpeerv1alpha1.PhaseFailed), HaveField("Message", ContainSubstring("not created by this PeeringRepository")))))
		}).WithTimeout(30 * time.Second).Should(Succeed())
		expectEvent(ctx, provider, gitpeerv1alpha1.RejectedReason, "w1", "not created by this PeeringRepository")
		Expect(show("main", dir("w1")+"identity.yaml")).To(BeEmpty())
		Expect(provider.k8s.Delete(ctx, planted)).To(Succeed())
		expectQuiet(provider)
	})

	It("visits only the peering whose tenant.yaml was merged", func() {
		before := roundPeerings(provider)
		commit("Tenant w2", map[string][]byte{dir("w2") + "tenant.yaml": tenantDoc(signedTenant(keys["w2"], "w2", waitNonceAt(dir("w2"), "")))})
		Eventually(func() string { return show("main", dir("w2")+"identity.yaml") }).WithTimeout(time.Minute).ShouldNot(BeEmpty())
		expectQuiet(provider)
		after := roundPeerings(provider)
		Expect(after.visitedSome-before.visitedSome).To(BeNumerically(">", 0), "no round visited w2")
		Expect(after.visitedMany-before.visitedMany).To(BeZero(), "a round visited more than the peering that changed")
	})
})

// rounds counts a provider's rounds from gitpeer_round_peerings{state="visited"}.
type rounds struct {
	all         uint64 // rounds
	visitedSome uint64 // rounds that visited at least one peering
	visitedMany uint64 // rounds that visited more than one
}

func roundPeerings(c *cluster) rounds {
	GinkgoHelper()
	for _, m := range gathered("gitpeer_round_peerings") {
		if m.labels["namespace"] != c.object.Namespace || m.labels["name"] != c.object.Name || m.labels["state"] != "visited" {
			continue
		}
		h := m.GetHistogram()
		r := rounds{all: h.GetSampleCount()}
		for _, b := range h.GetBucket() {
			switch b.GetUpperBound() {
			case 0:
				r.visitedSome = r.all - b.GetCumulativeCount()
			case 1:
				r.visitedMany = r.all - b.GetCumulativeCount()
			}
		}
		return r
	}
	return rounds{}
}

// labelledMetric is a metric gathered, with its labels by name.
type labelledMetric struct {
	*dto.Metric
	labels map[string]string
}

// gathered returns the metrics of the family name registered in this process (the agents'), with their labels.
func gathered(name string) []labelledMetric {
	GinkgoHelper()
	families, err := ctrlmetrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	var out []labelledMetric
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			out = append(out, labelledMetric{m, labels})
		}
	}
	return out
}

// expectQuiet waits for the provider's rounds to settle: three rounds in a
// row that visit no peering.
func expectQuiet(c *cluster) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		start := roundPeerings(c)
		g.Eventually(func() uint64 { return roundPeerings(c).all }).WithTimeout(20*time.Second).Should(BeNumerically(">=", start.all+3), "no rounds")
		g.Expect(roundPeerings(c).visitedSome).To(Equal(start.visitedSome), "a round visited a peering")
	}).WithTimeout(time.Minute).Should(Succeed(), "rounds keep visiting peerings")
}
