package e2e

import (
	gocrypto "crypto"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/vocabulary"
)

const limProviderID = "provider-lim"

// A provider's round acts on at most its limit of peerings (here 2 of 5):
// the others wait for the next rounds, which take them first, in order, and
// act on each once.
var _ = Describe("Round limit", Ordered, func() {
	const limit = 2
	var provider *cluster
	consumers := []string{"lim-1", "lim-2", "lim-3", "lim-4", "lim-5"}
	dir := func(id string) string { return limProviderID + "/" + id + "/" }
	keys := map[string]gocrypto.Signer{}

	BeforeAll(func() {
		provider = newCluster(limProviderID)
		provider.apply(func(s *gitpeerv1alpha1.PeeringRepositorySpec) {
			s.Provider = &gitpeerv1alpha1.ProviderSpec{Enabled: true, APIServer: provider.cp.URL}
		})
		provider.sb.RoundLimit = limit
		provider.startAgent()
	})

	It("answers the requests merged together in rounds of at most the limit, in order, each once", func() {
		requests := map[string][]byte{}
		for _, id := range consumers {
			keys[id] = newClusterKey()
			requests[dir(id)+"request.yaml"] = requestFor(limProviderID, id, keys[id])
		}
		commit("Requests", requests)
		for _, id := range consumers {
			waitNonceAt(dir(id), "")
		}
		Expect(recordedInRounds(limit, vocabulary.ActionIssueNonce)).To(Equal(consumers), "one nonce each, in order")
	})

	It("issues the Tenants merged together in rounds of at most the limit, in order, each once", func(ctx SpecContext) {
		tenants := map[string][]byte{}
		for _, id := range consumers {
			tenants[dir(id)+"tenant.yaml"] = tenantDoc(signedTenant(keys[id], id, waitNonceAt(dir(id), "")))
		}
		commit("Tenants", tenants)
		for _, id := range consumers {
			Eventually(func() string { return show("main", dir(id)+"identity.yaml") }).WithTimeout(2*time.Minute).ShouldNot(BeEmpty(), id)
		}
		// Their certificates are signed when the cluster's signer gets to them: in any order.
		Expect(recordedInRounds(limit, vocabulary.ActionIssueIdentity)).To(ConsistOf(consumers), "one identity each")
		for _, id := range consumers {
			Expect(csrsOf(ctx, provider, id)).To(HaveLen(1), "one certificate for %s", id)
		}
		expectQuiet(provider)
		expectReady(ctx, provider)
	})
})

// recordedInRounds returns the consumers for which the commits of main
// record action for limProviderID, in the order of the commits, and checks
// that none records it for more than limit consumers, and that it took
// several commits when more than limit consumers are recorded.
func recordedInRounds(limit int, action string) []string {
	GinkgoHelper()
	var order []string
	rounds := 0
	for _, msg := range strings.Split(gitOut("--git-dir", repo.Dir, "log", "--reverse", "main", "--format=%B%x00"), "\x00") {
		var took []string
		for _, step := range protocol.Records(msg) {
			if step.Provider == limProviderID && step.Action == action {
				took = append(took, step.Consumer)
			}
		}
		Expect(len(took)).To(BeNumerically("<=", limit), "one commit records %s for %v", action, took)
		if len(took) > 0 {
			rounds++
		}
		order = append(order, took...)
	}
	Expect(rounds).To(BeNumerically(">=", (len(order)+limit-1)/limit))
	return order
}
