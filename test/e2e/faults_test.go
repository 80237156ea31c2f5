package e2e

import (
	"context"
	"strings"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/test/gitserver"
)

// Each agent reaches the Git server over HTTP through a proxy of its own that
// the specs cut; the provider's also triggers the API server restart.
var _ = Describe("Faults", Ordered, func() {
	const providerID, consumerID = "provider-f", "consumer-f"
	dir := providerID + "/" + consumerID + "/"
	review := "gitpeer/" + providerID + "/" + consumerID
	var provider, consumer *cluster
	var providerProxy, consumerProxy *gitserver.Proxy
	restarted := make(chan error, 1)

	BeforeAll(func(ctx SpecContext) {
		provider, consumer = newCluster(providerID), newCluster(consumerID)
		providerProxy, consumerProxy = gitSrv.NewProxy(GinkgoT()), gitSrv.NewProxy(GinkgoT())
		applyOverHTTP(ctx, provider, providerProxy, func(s *gitpeerv1alpha1.PeeringRepositorySpec) {
			s.Provider = &gitpeerv1alpha1.ProviderSpec{Enabled: true, APIServer: provider.cp.URL}
		})
		applyOverHTTP(ctx, consumer, consumerProxy, func(s *gitpeerv1alpha1.PeeringRepositorySpec) {
			s.Consumer = &gitpeerv1alpha1.ConsumerSpec{Providers: []authv1beta1.ClusterID{providerID}, TrustedCAs: anchors(provider)}
		})
		// The provider's first push is its nonce: the round has created the tenant namespace and
		// the nonce Secret, and its status and events are still to be written.
		providerProxy.OnPush(func() {
			provider.cp.StopAPIServer()
			go func() {
				time.Sleep(5 * time.Second)
				restarted <- provider.cp.StartAPIServer(context.Background())
			}()
		})
		provider.startAgent()
		consumer.startAgent()
	})

	It("survive the API server restarted in the middle of the provider's round", func(ctx SpecContext) {
		mergeRequest(repo, review, dir)
		Eventually(restarted).WithTimeout(2 * time.Minute).Should(Receive(BeNil()))

		expectEvent(ctx, provider, gitpeerv1alpha1.KubernetesAPIUnavailableReason, "retrying with backoff")
		Eventually(func() string { return show(review, dir+"tenant.yaml") }).WithTimeout(time.Minute).ShouldNot(BeEmpty())
		expectReady(ctx, provider)
	})

	It("survive the Git server unreachable for a minute in the middle of the handshake", func(ctx SpecContext) {
		// The provider's next push is the identity: the round has created the Tenant and had its
		// certificate signed, and the commit does not land.
		const outage = time.Minute
		var cutAt time.Time
		providerProxy.OnPush(func() {
			cutAt = time.Now()
			providerProxy.Cut()
			consumerProxy.Cut()
		})
		w := clone()
		gitCLI(w, "merge", "-q", "--no-ff", "origin/"+review, "-m", "Merge pull request #3 from "+review)
		pushMain(w)

		for _, c := range []*cluster{provider, consumer} {
			Eventually(func(g Gomega) {
				obj := peeringRepository(ctx, g, c)
				g.Expect(conditionOf(obj, meta.ReadyCondition)).To(And(HaveField("Status", metav1.ConditionFalse),
					HaveField("Reason", gitpeerv1alpha1.GitServerUnreachableReason)))
				g.Expect(conditionOf(obj, meta.ReconcilingCondition)).To(HaveField("Reason", meta.ProgressingWithRetryReason))
				GinkgoWriter.Println(c.id, "Ready:", conditionOf(obj, meta.ReadyCondition).Message)
			}).WithTimeout(time.Minute).Should(Succeed())
			expectEvent(ctx, c, gitpeerv1alpha1.GitServerUnreachableReason, "retrying with backoff")
		}
		Expect(show("main", dir+"identity.yaml")).To(BeEmpty())
		Expect(csrsOf(ctx, provider, consumerID)).To(HaveLen(1), "the certificate was issued before the push")

		time.Sleep(time.Until(cutAt.Add(outage)))
		// Each agent kept trying, backing off: not once per 1 s interval (60 tries).
		for _, p := range []*gitserver.Proxy{providerProxy, consumerProxy} {
			GinkgoWriter.Printf("connections refused during the outage: %d\n", p.Refused.Load())
			Expect(p.Refused.Load()).To(And(BeNumerically(">=", 5), BeNumerically("<", 30)))
		}
		providerProxy.Restore()
		consumerProxy.Restore()

		Eventually(func(g Gomega) {
			g.Expect(consumer.k8s.Get(ctx, client.ObjectKey{
				Namespace: authv1beta1.TenantNamespaceName(providerID),
				Name:      authv1beta1.KubeconfigSecretName(authv1beta1.ControlPlaneIdentityName(providerID)),
			}, &corev1.Secret{})).To(Succeed())
		}).WithTimeout(time.Minute).Should(Succeed())
		expectReady(ctx, provider)
		expectReady(ctx, consumer)
	})

	It("lose nothing and do nothing twice", func(ctx SpecContext) {
		Expect(csrsOf(ctx, provider, consumerID)).To(HaveLen(1), "one certificate for one consumer")
		actions, serials := recordedSteps(consumerID)
		Expect(actions).To(Equal(map[string]int{"request": 1, "issue-nonce": 1, "propose-tenant": 1, "issue-identity": 1}))
		Expect(serials).To(HaveLen(1))
	})
})

// recordedSteps counts the steps for consumer that the commits of every branch
// record, by action, as the agent and `gitpeer audit` read them
// (protocol.Records: a round's commit may record several steps, e.g. the terms
// published with the first nonce), and collects their serials.
func recordedSteps(consumer string) (actions map[string]int, serials map[string]bool) {
	GinkgoHelper()
	actions, serials = map[string]int{}, map[string]bool{}
	for _, msg := range strings.Split(gitOut("--git-dir", repo.Dir, "log", "--all", "--format=%B%x00"), "\x00") {
		for _, step := range protocol.Records(msg) {
			if step.Consumer != consumer {
				continue
			}
			actions[step.Action]++
			if step.Serial != "" {
				serials[step.Serial] = true
			}
		}
	}
	return actions, serials
}

// applyOverHTTP creates c's PeeringRepository for the suite's repository
// through proxy, with HTTP credentials, and starts nothing.
func applyOverHTTP(ctx context.Context, c *cluster, proxy *gitserver.Proxy, mutate func(*gitpeerv1alpha1.PeeringRepositorySpec)) {
	GinkgoHelper()
	Expect(c.k8s.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: agentNamespace, Name: "git-http"},
		Data:       map[string][]byte{"username": []byte(gitSrv.Username), "password": []byte(gitSrv.Password)},
	})).To(Succeed())
	obj, err := c.sb.Apply(ctx, proxy.URL(repo), time.Second, func(s *gitpeerv1alpha1.PeeringRepositorySpec) {
		s.SecretRef = &meta.LocalObjectReference{Name: "git-http"}
		mutate(s)
	})
	Expect(err).NotTo(HaveOccurred())
	c.object = obj
}

// expectReady waits until c's PeeringRepository is Ready and no longer stalled or retrying.
func expectReady(ctx context.Context, c *cluster) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		obj := peeringRepository(ctx, g, c)
		g.Expect(conditionOf(obj, meta.ReadyCondition)).To(HaveField("Status", metav1.ConditionTrue))
		g.Expect(conditionOf(obj, meta.ReconcilingCondition)).To(BeNil())
	}).WithTimeout(time.Minute).Should(Succeed())
}

// csrsOf lists the CSRs of c labelled for consumer.
func csrsOf(ctx context.Context, c *cluster, consumer string) []certificatesv1.CertificateSigningRequest {
	GinkgoHelper()
	var csrs certificatesv1.CertificateSigningRequestList
	Expect(c.k8s.List(ctx, &csrs, client.MatchingLabels{"gitpeer.io/consumer": consumer})).To(Succeed())
	return csrs.Items
}
