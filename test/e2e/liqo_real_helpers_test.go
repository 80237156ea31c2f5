package e2e

import (
	"context"
	gocrypto "crypto"
	"strings"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	certv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/test/liqo"
)

// enableLiqo requires Liqo mode in a PeeringRepository spec.
func enableLiqo(s *gitpeerv1alpha1.PeeringRepositorySpec) {
	s.Liqo = &gitpeerv1alpha1.LiqoSpec{Mode: gitpeerv1alpha1.LiqoEnabled}
}

// applyLiqoProvider makes c's PeeringRepository a provider in Liqo mode
// publishing c's API server.
func applyLiqoProvider(c *cluster) {
	GinkgoHelper()
	c.apply(func(s *gitpeerv1alpha1.PeeringRepositorySpec) {
		s.Provider = &gitpeerv1alpha1.ProviderSpec{Enabled: true, APIServer: c.cp.URL}
		enableLiqo(s)
	})
}

// requestRound asks the agent of c for a round and waits until it was handled.
func requestRound(ctx context.Context, c *cluster) {
	GinkgoHelper()
	at := time.Now().Format(time.RFC3339Nano)
	obj := &gitpeerv1alpha1.PeeringRepository{}
	Expect(c.k8s.Get(ctx, client.ObjectKey{Namespace: agentNamespace, Name: "peering"}, obj)).To(Succeed())
	patch := client.MergeFrom(obj.DeepCopy())
	metav1.SetMetaDataAnnotation(&obj.ObjectMeta, meta.ReconcileRequestAnnotation, at)
	Expect(c.k8s.Patch(ctx, obj, patch)).To(Succeed())
	Eventually(func(g Gomega) string {
		return peeringRepository(ctx, g, c).Status.LastHandledReconcileAt
	}).WithTimeout(time.Minute).Should(Equal(at))
}

// issueClientCertificate has the API server of c issue a client certificate
// for key with CN id and O liqo.io, as Liqo's tenant controller does at renewal.
func issueClientCertificate(ctx context.Context, c *cluster, key gocrypto.Signer, id string) []byte {
	csrs := must(kubernetes.NewForConfig(c.cp.Config)).CertificatesV1().CertificateSigningRequests()
	csr := must(csrs.Create(ctx, &certv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "renewal-"},
		Spec: certv1.CertificateSigningRequestSpec{SignerName: certv1.KubeAPIServerClientSignerName, Request: must(crypto.BuildCSR(key, id)),
			Usages: []certv1.KeyUsage{certv1.UsageDigitalSignature, certv1.UsageClientAuth}},
	}, metav1.CreateOptions{}))
	csr.Status.Conditions = []certv1.CertificateSigningRequestCondition{{Type: certv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "Renewal"}}
	_, err := csrs.UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{})
	Expect(err).NotTo(HaveOccurred())
	var cert []byte
	Eventually(func() []byte {
		cert = must(csrs.Get(ctx, csr.Name, metav1.GetOptions{})).Status.Certificate
		return cert
	}).WithTimeout(30 * time.Second).ShouldNot(BeEmpty())
	return cert
}

// expectLiqoNonceCreated checks that the nonce Secret was created as `liqoctl
// create nonce` creates it and filled by Liqo's nonce creator (its event).
func expectLiqoNonceCreated(ctx context.Context, c *cluster, secret *corev1.Secret) {
	GinkgoHelper()
	Eventually(func(g Gomega) []string {
		var events corev1.EventList
		g.Expect(c.k8s.List(ctx, &events, client.InNamespace(secret.Namespace))).To(Succeed())
		var reasons []string
		for _, e := range events.Items {
			if e.InvolvedObject.UID == secret.UID {
				reasons = append(reasons, e.Reason)
			}
		}
		return reasons
	}).WithTimeout(30 * time.Second).Should(ContainElement("NonceGenerated"))
}

// waitIdentity waits for dir/identity.yaml to hold a certificate whose serial
// is not notSerial, and returns it.
func waitIdentity(dir, notSerial string) *authv1beta1.Identity {
	GinkgoHelper()
	id := &authv1beta1.Identity{}
	Eventually(func(g Gomega) {
		data := show("main", dir+"identity.yaml")
		g.Expect(data).NotTo(BeEmpty())
		g.Expect(yaml.UnmarshalStrict([]byte(data), id)).To(Succeed())
		cert, err := crypto.ParseCertificatePEM(id.Spec.AuthParams.SignedCRT)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(cert.SerialNumber.Text(16)).NotTo(Equal(notSerial))
	}).WithTimeout(time.Minute).Should(Succeed())
	return id
}

// identityCommits lists the commits of main that changed dir/identity.yaml,
// newest first, as "subject|trailers".
func identityCommits(dir string) []string {
	GinkgoHelper()
	out := strings.TrimSpace(gitOut("--git-dir", repo.Dir, "log", "main", "--format=%s|%(trailers:unfold,separator=%x2C)", "--", dir+"identity.yaml"))
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}

// expectOnlyLiqoCSRs checks that every CSR of c is one of Liqo's tenant
// controller, n of them, and none of gitpeer's.
func expectOnlyLiqoCSRs(ctx context.Context, c *cluster, n int) {
	GinkgoHelper()
	var csrs certv1.CertificateSigningRequestList
	Expect(c.k8s.List(ctx, &csrs)).To(Succeed())
	for _, csr := range csrs.Items {
		Expect(csr.Labels).To(HaveKey(liqo.TenantCSRLabel), "CSR %s is not Liqo's", csr.Name)
		Expect(csr.Labels).NotTo(HaveKey(csrConsumerLabel), "CSR %s is gitpeer's", csr.Name)
		Expect(csr.Name).To(HavePrefix(liqo.TenantCSRPrefix))
	}
	Expect(csrs.Items).To(HaveLen(n))
}
