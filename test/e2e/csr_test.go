package e2e

import (
	"context"
	gocrypto "crypto"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/crypto"
)

const (
	cProviderID = "provider-csr"
	// attackerUser may create CSRs (here: anything), as kubelets, bootstrap tokens or CI accounts may.
	attackerUser = "system:node:evil"
	// agentUser is who the suite's in-process agents authenticate as (the admin client).
	agentUser = "admin"
)

// The test plays the consumers of provider-csr, and an attacker in the
// provider's cluster who may create CSRs and plants them before the Tenant
// is merged.
var _ = Describe("CSR approval", Ordered, func() {
	var provider *cluster

	BeforeAll(func() {
		provider = newCluster(cProviderID)
		provider.apply(func(s *gitpeerv1alpha1.PeeringRepositorySpec) {
			s.Provider = &gitpeerv1alpha1.ProviderSpec{Enabled: true, APIServer: provider.cp.URL}
		})
		provider.startAgent()
	})

	It("approves only its own CSR, never ones planted ahead, and reports those labelled for the consumer", func(ctx SpecContext) {
		const id = "planted-1"
		key := newClusterKey()
		tenant := proposeTenant(id, key)

		attacker := userClient(provider, attackerUser, "system:masters")
		evil := newClusterKey()
		// Under the name the provider used to compute from the repository, asking for cluster-admin.
		byName := plantedCSR(legacyCSRName(id, tenant.Spec.CSR, tenant.Spec.Signature), nil, csrWith(evil, id, "kubeadm:cluster-admins"))
		// With the agent's labels and annotations, and even the Tenant's own request bytes.
		labels := map[string]string{csrConsumerLabel: id, "app.kubernetes.io/managed-by": "gitpeer", "gitpeer.io/owner": string(provider.object.UID)}
		sameBytes := plantedCSR("", labels, tenant.Spec.CSR)
		sameBytes.Annotations = map[string]string{"gitpeer.io/tenant-signature-sha256": sha256Hex(tenant.Spec.Signature)}
		// (The API server itself refuses O=system:masters for this signer; kubeadm binds cluster-admin to this group.)
		admins := plantedCSR("", labels, csrWith(evil, id, "kubeadm:cluster-admins"))
		for _, csr := range []*certificatesv1.CertificateSigningRequest{byName, sameBytes, admins} {
			Expect(attacker.Create(ctx, csr)).To(Succeed())
			Expect(csr.Spec.Username).To(Equal(attackerUser))
		}

		commit("Tenant "+id, map[string][]byte{cDir(id) + "tenant.yaml": tenantDoc(tenant)})
		cert := waitIdentityCert(id)
		Expect(cert.PublicKey).To(Equal(key.Public()))
		Expect(cert.Subject.CommonName).To(Equal(id))
		Expect(cert.Subject.Organization).To(Equal([]string{authv1beta1.CertificateOrganization}))

		for _, csr := range []*certificatesv1.CertificateSigningRequest{byName, sameBytes, admins} {
			By("checking planted CSR " + csr.Name)
			Consistently(func(g Gomega) {
				g.Expect(provider.k8s.Get(ctx, client.ObjectKeyFromObject(csr), csr)).To(Succeed())
				g.Expect(csr.Status.Conditions).To(BeEmpty(), "never approved")
				g.Expect(csr.Status.Certificate).To(BeEmpty())
			}).WithTimeout(3 * time.Second).Should(Succeed())
		}
		expectEvent(ctx, provider, "ForeignCSR", sameBytes.Name, attackerUser)
		expectEvent(ctx, provider, "ForeignCSR", admins.Name, attackerUser)

		own := ownCSRs(ctx, provider, id)
		Expect(own).To(HaveLen(1), "one CSR of the agent's own")
		Expect(string(own[0].Status.Certificate)).To(Equal(string(identityCRT(id))))
	})

	It("finds its own CSR whose create response was lost, and never makes a second", func(ctx SpecContext) {
		const id = "lost-1"
		key := newClusterKey()
		tenant := proposeTenant(id, key)
		// The agent's own user created it, but the agent never learnt its name.
		lost := plantedCSR("", map[string]string{csrConsumerLabel: id, "app.kubernetes.io/managed-by": "gitpeer", "gitpeer.io/owner": string(provider.object.UID)}, tenant.Spec.CSR)
		lost.Annotations = map[string]string{"gitpeer.io/tenant-signature-sha256": sha256Hex(tenant.Spec.Signature)}
		Expect(provider.k8s.Create(ctx, lost)).To(Succeed())
		Expect(lost.Spec.Username).To(Equal(agentUser))

		commit("Tenant "+id, map[string][]byte{cDir(id) + "tenant.yaml": tenantDoc(tenant)})
		waitIdentityCert(id)
		Consistently(func(g Gomega) {
			g.Expect(csrCount(ctx, provider, id)).To(Equal(1))
		}).WithTimeout(3 * time.Second).Should(Succeed())
		Expect(provider.k8s.Get(ctx, client.ObjectKeyFromObject(lost), lost)).To(Succeed())
		Expect(string(lost.Status.Certificate)).To(Equal(string(identityCRT(id))))
	})

	It("rejects a Tenant whose key is not the key of request.yaml", func(ctx SpecContext) {
		const id = "swapped-1"
		commit("Request "+id, map[string][]byte{cDir(id) + "request.yaml": requestFor(cProviderID, id, newClusterKey())})
		nonce := waitNonceAt(cDir(id), "")
		// Signed, CSR and key: all consistent, all by another key than the request's.
		commit("Tenant "+id, map[string][]byte{cDir(id) + "tenant.yaml": tenantDoc(signedTenant(newClusterKey(), id, nonce))})
		expectReported(ctx, provider, cDir(id)+"tenant.yaml", "rejected, nothing issued",
			"tenant public key is not the key of request.yaml: another key signed this Tenant than the one that requested the peering")
		expectNothingIssuedIn(ctx, provider, cDir(id), id)
	})
})

func cDir(consumerID string) string { return cProviderID + "/" + consumerID + "/" }

// proposeTenant requests a peering for id with key, waits for the nonce and
// returns the Tenant the consumer would commit.
func proposeTenant(id string, key gocrypto.Signer) *authv1beta1.Tenant {
	GinkgoHelper()
	commit("Request "+id, map[string][]byte{cDir(id) + "request.yaml": requestFor(cProviderID, id, key)})
	return signedTenant(key, id, waitNonceAt(cDir(id), ""))
}

// plantedCSR is a kube-apiserver-client CSR as the agent would create it,
// named name (generated when empty), with labels and request.
func plantedCSR(name string, labels map[string]string, request []byte) *certificatesv1.CertificateSigningRequest {
	ttl := int32(gitpeerv1alpha1.DefaultCertificateTTL.Seconds())
	csr := &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request: request, SignerName: certificatesv1.KubeAPIServerClientSignerName, ExpirationSeconds: &ttl,
			Usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth},
		},
	}
	if name == "" {
		csr.GenerateName = "gitpeer-planted-"
	}
	return csr
}

// legacyCSRName is the name the provider used to give a Tenant's CSR,
// derived from what it signs: anyone could compute it from the repository.
func legacyCSRName(consumer string, parts ...[]byte) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(strconv.Itoa(len(p))))
		h.Write(p)
	}
	return fmt.Sprintf("gitpeer-%s-%s", consumer, hex.EncodeToString(h.Sum(nil))[:16])
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// userClient is a client of c authenticating as user in groups.
func userClient(c *cluster, user string, groups ...string) client.Client {
	GinkgoHelper()
	cfg := must(c.cp.UserConfig(user, groups...))
	return must(client.New(cfg, client.Options{Scheme: scheme}))
}

// identityCRT returns the certificate (PEM) of provider-csr's identity.yaml for id.
func identityCRT(id string) []byte {
	GinkgoHelper()
	var identity authv1beta1.Identity
	Expect(yaml.Unmarshal([]byte(show("main", cDir(id)+"identity.yaml")), &identity)).To(Succeed())
	return identity.Spec.AuthParams.SignedCRT
}

// waitIdentityCert waits for provider-csr's identity.yaml for id and returns its certificate.
func waitIdentityCert(id string) *x509.Certificate {
	GinkgoHelper()
	Eventually(func() string { return show("main", cDir(id)+"identity.yaml") }).WithTimeout(time.Minute).ShouldNot(BeEmpty())
	return must(crypto.ParseCertificatePEM(identityCRT(id)))
}

// ownCSRs lists the CSRs labelled for id that the agent's own user requested.
func ownCSRs(ctx context.Context, c *cluster, id string) []certificatesv1.CertificateSigningRequest {
	GinkgoHelper()
	var list certificatesv1.CertificateSigningRequestList
	Expect(c.k8s.List(ctx, &list, client.MatchingLabels{csrConsumerLabel: id})).To(Succeed())
	var out []certificatesv1.CertificateSigningRequest
	for _, csr := range list.Items {
		if csr.Spec.Username == agentUser {
			out = append(out, csr)
		}
	}
	return out
}
