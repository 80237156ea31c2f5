package e2e

import (
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
)

var _ = Describe("Agent restarts", func() {
	It("finish the handshake without duplicating or losing anything", func(ctx SpecContext) {
		const providerID, consumerID = "provider-r", "consumer-r"
		dir := providerID + "/" + consumerID + "/"
		review := "gitpeer/" + providerID + "/" + consumerID
		provider, consumer := newCluster(providerID), newCluster(consumerID)
		provider.apply(func(s *gitpeerv1alpha1.PeeringRepositorySpec) {
			s.Provider = &gitpeerv1alpha1.ProviderSpec{Enabled: true, APIServer: provider.cp.URL}
		})
		consumer.apply(func(s *gitpeerv1alpha1.PeeringRepositorySpec) {
			s.Consumer = &gitpeerv1alpha1.ConsumerSpec{Providers: []authv1beta1.ClusterID{providerID}, TrustedCAs: anchors(provider)}
		})
		restartBoth := func() {
			provider.stopAgent()
			consumer.stopAgent()
			provider.startAgent()
			consumer.startAgent()
		}
		provider.startAgent()
		consumer.startAgent()

		// Restart right after each step lands.
		for _, file := range []string{review + ":" + dir + "request.yaml", "main:" + dir + "nonce.yaml", review + ":" + dir + "tenant.yaml"} {
			ref, path, _ := strings.Cut(file, ":")
			Eventually(func() string { return show(ref, path) }).WithTimeout(time.Minute).ShouldNot(BeEmpty(), file)
			restartBoth()
			if strings.HasSuffix(path, "request.yaml") {
				mergeRequest(repo, review, dir)
			}
		}
		w := filepath.Join(GinkgoT().TempDir(), "w")
		gitCLI(filepath.Dir(w), "clone", "-q", repo.Dir, w)
		gitCLI(w, "merge", "-q", "--no-ff", "origin/"+review, "-m", "Merge pull request #2 from "+review)
		gitCLI(w, "push", "-q", "origin", "HEAD:main")

		// Restart the provider as soon as it has created the CSR, before or after it committed.
		Eventually(func() int {
			var csrs certificatesv1.CertificateSigningRequestList
			Expect(provider.k8s.List(ctx, &csrs)).To(Succeed())
			return len(csrs.Items)
		}).WithTimeout(time.Minute).Should(BeNumerically(">", 0))
		restartBoth()
		Eventually(func() string { return show("main", dir+"identity.yaml") }).WithTimeout(time.Minute).ShouldNot(BeEmpty())
		restartBoth()
		consumerNS := authv1beta1.TenantNamespaceName(providerID)
		secretName := authv1beta1.KubeconfigSecretName(authv1beta1.ControlPlaneIdentityName(providerID))
		Eventually(func() error {
			return consumer.k8s.Get(ctx, client.ObjectKey{Namespace: consumerNS, Name: secretName}, &corev1.Secret{})
		}).WithTimeout(time.Minute).Should(Succeed())
		restartBoth()
		time.Sleep(3 * time.Second) // a few more polls after the last restart

		var csrs certificatesv1.CertificateSigningRequestList
		Expect(provider.k8s.List(ctx, &csrs)).To(Succeed())
		Expect(csrs.Items).To(HaveLen(1), "one CSR for one Tenant")
		actions, _ := recordedSteps("consumer-r")
		Expect(actions).To(Equal(map[string]int{"request": 1, "issue-nonce": 1, "propose-tenant": 1, "issue-identity": 1}), "steps committed once each")
	})
})
