package e2e

import (
	"context"
	gocrypto "crypto"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// kubeconfigCert returns the client certificate of the kubeconfig the consumer holds for provider.
func kubeconfigCert(consumer *cluster, providerID string) (*x509.Certificate, error) {
	secret := &corev1.Secret{}
	name := authv1beta1.KubeconfigSecretName(authv1beta1.ControlPlaneIdentityName(authv1beta1.ClusterID(providerID)))
	if err := consumer.k8s.Get(context.Background(), client.ObjectKey{Namespace: authv1beta1.TenantNamespaceName(authv1beta1.ClusterID(providerID)), Name: name}, secret); err != nil {
		return nil, err
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(secret.Data[authv1beta1.KubeconfigSecretField])
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(cfg.CertData)
	return x509.ParseCertificate(block.Bytes)
}

var _ = Describe("Several peerings at once", func() {
	It("serves two consumers while the provider is itself the consumer of another cluster, in direct mode", func() {
		a, b, c := newCluster("multi-a"), newCluster("multi-b"), newCluster("multi-c")
		a.apply(func(s *gitpeerv1alpha1.PeeringRepositorySpec) {
			s.Provider = &gitpeerv1alpha1.ProviderSpec{Enabled: true, APIServer: a.cp.URL}
			s.Consumer = &gitpeerv1alpha1.ConsumerSpec{Providers: []authv1beta1.ClusterID{"multi-c"}, Direct: true, TrustedCAs: anchors(c)}
		})
		b.apply(func(s *gitpeerv1alpha1.PeeringRepositorySpec) {
			s.Consumer = &gitpeerv1alpha1.ConsumerSpec{Providers: []authv1beta1.ClusterID{"multi-a"}, Direct: true, TrustedCAs: anchors(a)}
		})
		c.apply(func(s *gitpeerv1alpha1.PeeringRepositorySpec) {
			s.Provider = &gitpeerv1alpha1.ProviderSpec{Enabled: true, APIServer: c.cp.URL}
			s.Consumer = &gitpeerv1alpha1.ConsumerSpec{Providers: []authv1beta1.ClusterID{"multi-a"}, Direct: true, TrustedCAs: anchors(a)}
		})
		for _, cl := range []*cluster{a, b, c} {
			cl.startAgent()
		}
		for _, pair := range []struct {
			consumer *cluster
			provider string
		}{{b, "multi-a"}, {c, "multi-a"}, {a, "multi-c"}} {
			Eventually(func(g Gomega) {
				cert, err := kubeconfigCert(pair.consumer, pair.provider)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(cert.Subject.CommonName).To(Equal(pair.consumer.id))
			}).WithTimeout(2*time.Minute).Should(Succeed(), "%s consuming %s", pair.consumer.id, pair.provider)
		}
	})
})

var _ = Describe("Renewal", func() {
	It("rolls a new certificate to the consumer before the old one expires, without a new approval", func() {
		p, cons := newCluster("renew-p"), newCluster("renew-c")
		p.apply(func(s *gitpeerv1alpha1.PeeringRepositorySpec) {
			// The shortest lifetime Kubernetes signs; with the signer's 5-minute backdating, renewal comes ~5 minutes after issuance.
			s.Provider = &gitpeerv1alpha1.ProviderSpec{Enabled: true, APIServer: p.cp.URL,
				CertificateTTL: &metav1.Duration{Duration: gitpeerv1alpha1.MinCertificateTTL}}
		})
		cons.apply(func(s *gitpeerv1alpha1.PeeringRepositorySpec) {
			s.Consumer = &gitpeerv1alpha1.ConsumerSpec{Providers: []authv1beta1.ClusterID{"renew-p"}, Direct: true, TrustedCAs: anchors(p)}
		})
		p.startAgent()
		cons.startAgent()
		var first *x509.Certificate
		Eventually(func(g Gomega) {
			var err error
			first, err = kubeconfigCert(cons, "renew-p")
			g.Expect(err).NotTo(HaveOccurred())
		}).WithTimeout(2 * time.Minute).Should(Succeed())
		// kube-controller-manager backdates NotBefore by 5 minutes; the lifetime ahead is the TTL.
		Expect(time.Until(first.NotAfter)).To(BeNumerically("<=", gitpeerv1alpha1.MinCertificateTTL))

		Eventually(func(g Gomega) {
			cert, err := kubeconfigCert(cons, "renew-p")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(cert.SerialNumber).NotTo(Equal(first.SerialNumber))
		}).WithTimeout(time.Until(first.NotAfter)).WithPolling(5 * time.Second).Should(Succeed())
		Expect(time.Now()).To(BeTemporally("<", first.NotAfter))
		Expect(show("main", "renew-p/renew-c/tenant.yaml")).NotTo(BeEmpty(), "the same Tenant, no new approval")
	})
})

// The peerings of a provider's round take their steps at once; consumers whose
// records share a Secret (vocabulary.RecordsSecretName) write it in the same rounds.
var _ = Describe("Consumers sharing a records Secret", func() {
	It("issues them all, none failing on the Secret the others write", func(ctx SpecContext) {
		const providerID = "shard-p"
		dir := func(id string) string { return providerID + "/" + id + "/" }
		p := newCluster(providerID)
		p.apply(func(s *gitpeerv1alpha1.PeeringRepositorySpec) {
			s.Provider = &gitpeerv1alpha1.ProviderSpec{Enabled: true, APIServer: p.cp.URL}
		})
		ids := sameRecordsSecret(p.object.Name, 8)
		failed := watchFailedPeerings(ctx, p)
		p.startAgent()

		keys := map[string]gocrypto.Signer{}
		requests := map[string][]byte{}
		for _, id := range ids {
			keys[id] = newClusterKey()
			requests[dir(id)+"request.yaml"] = requestFor(providerID, id, keys[id])
		}
		commit("Requests of "+strings.Join(ids, ", "), requests)
		tenants := map[string][]byte{}
		for _, id := range ids {
			tenants[dir(id)+"tenant.yaml"] = tenantDoc(signedTenant(keys[id], id, waitNonceAt(dir(id), "")))
		}
		commit("Tenants of "+strings.Join(ids, ", "), tenants)
		for _, id := range ids {
			Eventually(func() string { return show("main", dir(id)+"identity.yaml") }).WithTimeout(2*time.Minute).ShouldNot(BeEmpty(), id)
		}
		// A round's routine steps are one Normal event per reason, naming its consumers.
		Eventually(func(g Gomega) {
			notes := strings.Join(normalEvents(ctx, p, gitpeerv1alpha1.IdentityIssuedReason), "\n")
			for _, id := range ids {
				g.Expect(notes).To(ContainSubstring(id+" (serial "), "the IdentityIssued events")
			}
		}).WithTimeout(30 * time.Second).Should(Succeed())
		Expect(len(normalEvents(ctx, p, gitpeerv1alpha1.NonceIssuedReason))).To(BeNumerically("<", len(ids)), "NonceIssued events: one per round, not per consumer")
		// Each consumer's series, built by the agent's collector at the scrape.
		Eventually(func(g Gomega) {
			series := map[string]float64{}
			for _, name := range []string{"gitpeer_peering_phase", "gitpeer_certificate_expiry_timestamp_seconds", "gitpeer_certificate_renewal_overdue"} {
				for _, m := range gathered(name) {
					if m.labels["namespace"] == p.object.Namespace && m.labels["name"] == p.object.Name && m.labels["role"] == string(gitpeerv1alpha1.ProviderRole) {
						// The phase is a label of its series (1): "gitpeer_peering_phase c1 Issued".
						series[strings.TrimSpace(name+" "+m.labels["peer"]+" "+m.labels["phase"])] = m.GetGauge().GetValue()
					}
				}
			}
			for _, id := range ids {
				g.Expect(series).To(HaveKeyWithValue("gitpeer_peering_phase "+id+" Issued", 1.0))
				g.Expect(series).To(HaveKeyWithValue("gitpeer_certificate_expiry_timestamp_seconds "+id, BeNumerically(">", float64(time.Now().Unix()))))
				g.Expect(series).To(HaveKeyWithValue("gitpeer_certificate_renewal_overdue "+id, 0.0))
			}
		}).WithTimeout(30 * time.Second).Should(Succeed())

		secret := &corev1.Secret{}
		Expect(p.k8s.Get(ctx, client.ObjectKey{Namespace: agentNamespace, Name: vocabulary.RecordsSecretName(p.object.Name, ids[0])}, secret)).To(Succeed())
		for _, id := range ids {
			records, err := vocabulary.DecodeRecords(secret, id)
			Expect(err).NotTo(HaveOccurred())
			Expect(records.PinnedKey).To(Equal(must(crypto.KeyPin(keys[id].Public()))), id)
			Expect(records.Certificates).To(HaveLen(1), id)
		}
		Expect(failed()).To(BeEmpty(), "every status the provider wrote")
	})
})

// sameRecordsSecret returns n consumer IDs whose records share one Secret of
// the PeeringRepository repository.
func sameRecordsSecret(repository string, n int) []string {
	var ids []string
	for i := 0; len(ids) < n; i++ {
		id := fmt.Sprintf("shard-c%d", i)
		if len(ids) == 0 || vocabulary.RecordsSecretName(repository, id) == vocabulary.RecordsSecretName(repository, ids[0]) {
			ids = append(ids, id)
		}
	}
	return ids
}

// watchFailedPeerings watches every status c's PeeringRepository is given
// until the end of the spec; failed returns the peerings any of them
// reported Failed, with their message.
func watchFailedPeerings(ctx context.Context, c *cluster) (failed func() map[string]string) {
	GinkgoHelper()
	wc := must(client.NewWithWatch(c.cp.Config, client.Options{Scheme: scheme}))
	w := must(wc.Watch(ctx, &gitpeerv1alpha1.PeeringRepositoryList{}, client.InNamespace(agentNamespace)))
	DeferCleanup(w.Stop)
	var mu sync.Mutex
	seen := map[string]string{}
	go func() {
		for ev := range w.ResultChan() {
			obj, ok := ev.Object.(*gitpeerv1alpha1.PeeringRepository)
			if !ok {
				continue
			}
			mu.Lock()
			for _, st := range obj.Status.Peerings {
				if st.Phase == gitpeerv1alpha1.PhaseFailed {
					seen[string(st.PeerID)] = st.Message
				}
			}
			mu.Unlock()
		}
	}()
	return func() map[string]string {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(seen)
	}
}
