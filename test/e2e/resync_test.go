package e2e

import (
	gocrypto "crypto"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/vocabulary"
)

const resyncProviderID = "provider-resync"

// A full resync of an idle provider compares the peering directories' Git
// trees instead of decoding them (issue #27), and still repairs what the
// agent does not watch: a records Secret deleted behind its back.
var _ = Describe("Full resyncs of an idle provider", Ordered, func() {
	var provider *cluster
	dir := func(id string) string { return resyncProviderID + "/" + id + "/" }
	consumers := []string{"rs1", "rs2"}

	BeforeAll(func() {
		provider = newCluster(resyncProviderID)
		provider.sb.FullResyncPeriod = 2 * time.Second
		provider.apply(func(s *gitpeerv1alpha1.PeeringRepositorySpec) {
			s.Provider = &gitpeerv1alpha1.ProviderSpec{Enabled: true, APIServer: provider.cp.URL}
		})
		provider.startAgent()
		keys := map[string]gocrypto.Signer{}
		requests, tenants := map[string][]byte{}, map[string][]byte{}
		for _, id := range consumers {
			keys[id] = newClusterKey()
			requests[dir(id)+"request.yaml"] = requestFor(resyncProviderID, id, keys[id])
		}
		commit("Requests (resync)", requests)
		for _, id := range consumers {
			tenants[dir(id)+"tenant.yaml"] = tenantDoc(signedTenant(keys[id], id, waitNonceAt(dir(id), "")))
		}
		commit("Tenants (resync)", tenants)
		for _, id := range consumers {
			Eventually(func() string { return show("main", dir(id)+"identity.yaml") }).WithTimeout(time.Minute).ShouldNot(BeEmpty(), id)
		}
	})

	It("visits no peering in resyncs once nothing changes", func() {
		// expectQuiet watches more than one resync period: a resync that decoded the directories again would visit them.
		expectQuiet(provider)
	})

	It("restores a records Secret deleted behind its back at the next resync, still visiting no peering", func(ctx SpecContext) {
		key := client.ObjectKey{Namespace: agentNamespace, Name: vocabulary.RecordsSecretName(provider.object.Name, "rs1")}
		secret := &corev1.Secret{}
		Expect(provider.k8s.Get(ctx, key, secret)).To(Succeed())
		before, err := vocabulary.DecodeRecords(secret, "rs1")
		Expect(err).NotTo(HaveOccurred())
		Expect(before.Certificates).NotTo(BeEmpty())
		visited := roundPeerings(provider).visitedSome
		Expect(provider.k8s.Delete(ctx, secret)).To(Succeed())
		Eventually(func(g Gomega) {
			restored := &corev1.Secret{}
			g.Expect(provider.k8s.Get(ctx, key, restored)).To(Succeed())
			g.Expect(restored.UID).NotTo(Equal(secret.UID))
			records, err := vocabulary.DecodeRecords(restored, "rs1")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(records.Certificates).To(ContainElement(HaveField("Serial", before.Certificates[0].Serial)))
		}).WithTimeout(30 * time.Second).Should(Succeed())
		Expect(roundPeerings(provider).visitedSome).To(Equal(visited), "a round visited a peering")
		obj := peeringRepository(ctx, Default, provider)
		Expect(obj.Status.Peerings).To(HaveEach(HaveField("Phase", gitpeerv1alpha1.PhaseIssued)))
	})
})
