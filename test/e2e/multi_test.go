package e2e

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
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
			s.Consumer = &gitpeerv1alpha1.ConsumerSpec{Providers: []authv1beta1.ClusterID{"multi-c"}, Direct: true}
		})
		b.apply(func(s *gitpeerv1alpha1.PeeringRepositorySpec) {
			s.Consumer = &gitpeerv1alpha1.ConsumerSpec{Providers: []authv1beta1.ClusterID{"multi-a"}, Direct: true}
		})
		c.apply(func(s *gitpeerv1alpha1.PeeringRepositorySpec) {
			s.Provider = &gitpeerv1alpha1.ProviderSpec{Enabled: true, APIServer: c.cp.URL}
			s.Consumer = &gitpeerv1alpha1.ConsumerSpec{Providers: []authv1beta1.ClusterID{"multi-a"}, Direct: true}
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
			s.Consumer = &gitpeerv1alpha1.ConsumerSpec{Providers: []authv1beta1.ClusterID{"renew-p"}, Direct: true}
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
