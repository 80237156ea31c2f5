package e2e

import (
	gocrypto "crypto"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1/documents"
	"github.com/gitpeer/gitpeer/crypto"
	liqodouble "github.com/gitpeer/gitpeer/test/liqo"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// Where Liqo is installed (its cluster-ID ConfigMap and authentication-keys
// Secret, as test/liqo's Install creates them), spec.liqo.mode Auto runs in
// Liqo mode: the agent signs with Liqo's key, creates no key of its own, and
// refuses to run as another cluster than Liqo's.
var _ = Describe("Liqo mode detection", func() {
	const providerID = "liqo-base-p"

	// consumerOf installs Liqo with the given cluster ID on a new cluster id,
	// and runs an agent there consuming from providerID in Auto mode.
	consumerOf := func(ctx SpecContext, id, liqoID string) (*cluster, gocrypto.Signer) {
		c := newCluster(id)
		key := must(liqodouble.Install(ctx, c.k8s, liqodouble.Options{ClusterID: liqoID, Algorithm: crypto.RSA2048}))
		c.apply(func(s *gitpeerv1alpha1.PeeringRepositorySpec) {
			s.Consumer = &gitpeerv1alpha1.ConsumerSpec{Providers: []authv1beta1.ClusterID{providerID}, Direct: true}
		})
		c.startAgent()
		return c, key
	}

	It("signs with Liqo's key and creates no key of its own", func(ctx SpecContext) {
		c, key := consumerOf(ctx, "liqo-base-c", "liqo-base-c")
		liqoKeys := &corev1.Secret{}
		Expect(c.k8s.Get(ctx, client.ObjectKey{Namespace: liqodouble.DefaultNamespace, Name: liqodouble.KeysSecret}, liqoKeys)).To(Succeed())

		Eventually(func(g Gomega) {
			g.Expect(conditionOf(peeringRepository(ctx, g, c), gitpeerv1alpha1.LiqoReadyCondition)).To(And(
				HaveField("Status", metav1.ConditionTrue), HaveField("Reason", gitpeerv1alpha1.LiqoModeReason),
				HaveField("Message", "Liqo mode: cluster ID liqo-base-c, key type RSA-2048, Liqo "+liqodouble.Version)))
		}).WithTimeout(time.Minute).Should(Succeed())
		var request documents.PeeringRequest
		Eventually(func(g Gomega) {
			g.Expect(yaml.Unmarshal([]byte(show("main", providerID+"/liqo-base-c/request.yaml")), &request)).To(Succeed())
			g.Expect(request.Spec.PublicKey).NotTo(BeEmpty())
		}).WithTimeout(time.Minute).Should(Succeed())
		pub := must(crypto.ParsePublicKey(request.Spec.PublicKey))
		Expect(key.Public().(interface{ Equal(gocrypto.PublicKey) bool }).Equal(pub)).To(BeTrue(), "request.yaml carries Liqo's public key")

		err := c.k8s.Get(ctx, client.ObjectKey{Namespace: agentNamespace, Name: crypto.KeySecretName}, &corev1.Secret{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the agent created a key of its own in Liqo mode: %v", err)
		after := &corev1.Secret{}
		Expect(c.k8s.Get(ctx, client.ObjectKeyFromObject(liqoKeys), after)).To(Succeed())
		Expect(after.ResourceVersion).To(Equal(liqoKeys.ResourceVersion), "Liqo's key Secret changed")
	})

	It("refuses to run when Liqo's cluster ID is not spec.clusterID", func(ctx SpecContext) {
		c, _ := consumerOf(ctx, "liqo-base-m", "someone-else")
		Eventually(func(g Gomega) {
			obj := peeringRepository(ctx, g, c)
			for _, t := range []string{meta.StalledCondition, gitpeerv1alpha1.LiqoReadyCondition} {
				g.Expect(conditionOf(obj, t)).To(And(HaveField("Reason", gitpeerv1alpha1.LiqoClusterIDMismatchReason),
					HaveField("Message", ContainSubstring(`Liqo's cluster ID is "someone-else"`))), t)
			}
			g.Expect(conditionOf(obj, meta.ReadyCondition)).To(HaveField("Status", metav1.ConditionFalse))
		}).WithTimeout(time.Minute).Should(Succeed())
		expectEvent(ctx, c, gitpeerv1alpha1.LiqoClusterIDMismatchReason, "refuses to run")
		Consistently(func() string {
			return show("main", providerID+"/liqo-base-m/request.yaml")
		}).WithTimeout(3 * time.Second).Should(BeEmpty())
	})
})

// A peering made in standalone mode is left alone when Liqo is installed
// later (Auto then means Liqo mode: another key, another issuance) until a
// person accepts the switch.
var _ = Describe("Mode switch", Ordered, func() {
	const providerID, consumerID = "mode-p", "mode-c"
	var provider, consumer *cluster
	// namespaceOf is the tenant namespace of peer on c.
	namespaceOf := func(ctx SpecContext, g Gomega, c *cluster, peer string) *corev1.Namespace {
		ns := &corev1.Namespace{}
		g.Expect(c.k8s.Get(ctx, client.ObjectKey{Name: authv1beta1.TenantNamespaceName(authv1beta1.ClusterID(peer))}, ns)).To(Succeed())
		return ns
	}
	peeringsOf := func(ctx SpecContext, g Gomega, c *cluster) map[string]gitpeerv1alpha1.PeeringStatus {
		out := map[string]gitpeerv1alpha1.PeeringStatus{}
		for _, p := range peeringRepository(ctx, g, c).Status.Peerings {
			out[string(p.PeerID)] = p
		}
		return out
	}

	BeforeAll(func() { provider, consumer = peerDirect(providerID, consumerID) })

	It("records the mode of the peering on both tenant namespaces", func(ctx SpecContext) {
		Expect(namespaceOf(ctx, Default, provider, consumerID).Annotations).To(HaveKeyWithValue(vocabulary.ModeAnnotation, gitpeerv1alpha1.PeeringModeStandalone))
		Expect(namespaceOf(ctx, Default, consumer, providerID).Annotations).To(HaveKeyWithValue(vocabulary.ModeAnnotation, gitpeerv1alpha1.PeeringModeStandalone))
	})

	It("leaves the peering alone on both sides when Liqo is installed later, and says so", func(ctx SpecContext) {
		kubeconfig, tenantYAML := kubeconfigOf(ctx, consumer, providerID), show("main", providerID+"/"+consumerID+"/tenant.yaml")
		for _, c := range []*cluster{provider, consumer} {
			must(liqodouble.Install(ctx, c.k8s, liqodouble.Options{ClusterID: c.id}))
		}
		for _, side := range []struct {
			c    *cluster
			peer string
		}{{provider, consumerID}, {consumer, providerID}} {
			Eventually(func(g Gomega) {
				g.Expect(peeringsOf(ctx, g, side.c)).To(HaveKeyWithValue(side.peer, And(
					HaveField("Phase", gitpeerv1alpha1.PhaseFailed), HaveField("Reason", vocabulary.ReasonModeChanged),
					HaveField("Message", ContainSubstring("was made in standalone mode but this cluster now runs in liqo mode")))))
				g.Expect(conditionOf(peeringRepository(ctx, g, side.c), gitpeerv1alpha1.PeeringsHealthyCondition)).To(HaveField("Status", metav1.ConditionFalse))
			}).WithTimeout(time.Minute).Should(Succeed(), side.c.id)
			expectEvent(ctx, side.c, vocabulary.ReasonModeChanged, gitpeerv1alpha1.SwitchModeAnnotationPrefix+side.peer+"="+gitpeerv1alpha1.PeeringModeLiqo)
		}
		Consistently(func(g Gomega) {
			g.Expect(kubeconfigOf(ctx, consumer, providerID)).To(Equal(kubeconfig))
			g.Expect(show("main", providerID+"/"+consumerID+"/tenant.yaml")).To(Equal(tenantYAML))
		}).WithTimeout(5*time.Second).Should(Succeed(), "nothing is done for the peering")
	})

	It("records the new mode once a person accepts the switch", func(ctx SpecContext) {
		for _, side := range []struct {
			c    *cluster
			peer string
		}{{provider, consumerID}, {consumer, providerID}} {
			annotateRepository(ctx, side.c, gitpeerv1alpha1.SwitchModeAnnotationPrefix+side.peer, gitpeerv1alpha1.PeeringModeLiqo)
			Eventually(func(g Gomega) {
				g.Expect(namespaceOf(ctx, g, side.c, side.peer).Annotations).To(HaveKeyWithValue(vocabulary.ModeAnnotation, gitpeerv1alpha1.PeeringModeLiqo))
				g.Expect(peeringRepository(ctx, g, side.c).Annotations).NotTo(HaveKey(gitpeerv1alpha1.SwitchModeAnnotationPrefix + side.peer))
				g.Expect(peeringsOf(ctx, g, side.c)).To(HaveKeyWithValue(side.peer, HaveField("Reason", Not(Equal(vocabulary.ReasonModeChanged)))))
			}).WithTimeout(time.Minute).Should(Succeed(), side.c.id)
		}
	})
})
