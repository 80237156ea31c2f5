package e2e

import (
	"context"
	gocrypto "crypto"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/config/crd"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/reconciler/whoami"
	"github.com/gitpeer/gitpeer/test/crdinstall"
	"github.com/gitpeer/gitpeer/vocabulary"
)

const (
	upProviderID = "upgrade-p"
	upConsumerID = "upgrade-c"
	// upRevokedID was revoked under gitpeer 0.1.0, which kept its records in one Secret.
	upRevokedID = "upgrade-r"
)

// An install of the previous release (commit 518c136: no owner labels, a CA-only
// consumer pin, CSRs named after what they sign, no records Secret) with a live
// peering is upgraded by applying this version's CRD over it and starting this
// version's agents. The previous agent cannot run in this module, so the objects
// it would have left are written as it wrote them (its code at 518c136 is the
// reference), under its CRD; the certificate is signed by the provider's cluster
// CA, short-lived so that renewal is due at once.
var _ = Describe("Upgrade", Ordered, func() {
	var provider, consumer *cluster
	var bindingUID types.UID
	var oldSerial, keyPin, legacyCSR, revokedSerial string
	var revokedUntil time.Time
	revokedKey := newClusterKey()
	dir := upProviderID + "/" + upConsumerID + "/"
	tenantNS := authv1beta1.TenantNamespaceName(upConsumerID)
	consumerNS := authv1beta1.TenantNamespaceName(upProviderID)
	identityName := authv1beta1.ControlPlaneIdentityName(upProviderID)
	kubeconfigKey := client.ObjectKey{Namespace: consumerNS, Name: authv1beta1.KubeconfigSecretName(identityName)}
	legacy := func(peer string) map[string]string {
		return map[string]string{vocabulary.ManagedByLabel: "gitpeer", authv1beta1.RemoteClusterIDLabel: peer}
	}

	BeforeAll(func(ctx SpecContext) {
		provider, consumer = newCluster(upProviderID), newCluster(upConsumerID)
		previous := &apiextensionsv1.CustomResourceDefinition{}
		Expect(yaml.UnmarshalStrict(must(os.ReadFile("../../config/crd/testdata/previous/gitpeer.io_peeringrepositories.yaml")), previous)).To(Succeed())
		for _, c := range []*cluster{provider, consumer} {
			Expect(crdinstall.Apply(ctx, c.k8s, previous.DeepCopy())).To(Succeed())
		}

		// The peering the previous agents completed: request, Tenant signed over the
		// first nonce, identity.yaml and the rotated nonce on main.
		key, err := crypto.LoadOrCreateKey(ctx, consumer.k8s, agentNamespace, crypto.Ed25519)
		Expect(err).NotTo(HaveOccurred())
		tenant := signedTenant(key, upConsumerID, crypto.GenerateNonce())
		rotated := crypto.GenerateNonce()
		now := time.Now()
		cert := signWithClusterCA(provider, tenant.Spec.CSR, now.Add(-20*time.Minute), now.Add(10*time.Minute))
		oldSerial = must(crypto.ParseCertificatePEM(cert)).SerialNumber.Text(16)
		params := authv1beta1.AuthParams{CA: provider.cp.CAPEM, SignedCRT: cert, APIServer: provider.cp.URL}
		commit("Peering of "+upConsumerID+" issued by the previous release", map[string][]byte{
			dir + "request.yaml":  requestFor(upProviderID, upConsumerID, key),
			dir + "tenant.yaml":   tenantDoc(tenant),
			dir + "nonce.yaml":    must(protocol.NonceDocument(upProviderID, upConsumerID, rotated)),
			dir + "identity.yaml": must(protocol.IdentityDocument(upProviderID, upConsumerID, params)),
		})
		head := gitOut("--git-dir", repo.Dir, "rev-parse", "main")[:40]

		provider.apply(func(s *gitpeerv1alpha1.PeeringRepositorySpec) {
			s.Provider = &gitpeerv1alpha1.ProviderSpec{Enabled: true, APIServer: provider.cp.URL}
		})
		consumer.apply(func(s *gitpeerv1alpha1.PeeringRepositorySpec) {
			s.Consumer = &gitpeerv1alpha1.ConsumerSpec{Providers: []authv1beta1.ClusterID{upProviderID}}
		})
		for _, c := range []*cluster{provider, consumer} {
			c.object.Status.LastProcessedCommit = head
			// The previous agent listed every peering it ever saw, with its full message.
			for i := range 60 {
				c.object.Status.Peerings = append(c.object.Status.Peerings, gitpeerv1alpha1.PeeringStatus{
					PeerID: authv1beta1.ClusterID(fmt.Sprintf("gone-%02d", i)), Role: gitpeerv1alpha1.ProviderRole, Phase: gitpeerv1alpha1.PhaseFailed,
					Since: metav1.NewTime(now.Add(-time.Hour)), Message: strings.Repeat("rejected ", 200)})
			}
			Expect(c.k8s.Status().Update(ctx, c.object)).To(Succeed())
		}

		// gitpeer 0.1.0's single records Secret, with a revoked certificate of upRevokedID still valid.
		revokedSerial, revokedUntil = "5eed", now.Add(time.Hour).Truncate(time.Second).UTC()
		revokedAt := now.Add(-time.Minute).UTC()
		records := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: agentNamespace, Name: vocabulary.IssuedSecretPrefix + provider.object.Name}}
		Expect(vocabulary.SetRecords(records, provider.object.UID, upRevokedID, vocabulary.ConsumerRecords{
			PinnedKey:    must(crypto.KeyPin(revokedKey.Public())),
			Certificates: []vocabulary.IssuedRecord{{Serial: revokedSerial, NotAfter: revokedUntil, RevokedAt: &revokedAt}},
		})).To(Succeed())
		Expect(provider.k8s.Create(ctx, records)).To(Succeed())

		// Provider side, as the previous agent left it.
		keyPin = must(crypto.KeyPin(key.Public()))
		nsLabels := legacy(upConsumerID)
		nsLabels[authv1beta1.TenantNamespaceLabel] = "true"
		Expect(provider.k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenantNS, Labels: nsLabels,
			Annotations: map[string]string{vocabulary.PinnedKeyAnnotation: keyPin}}})).To(Succeed())
		stored := &authv1beta1.Tenant{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: upConsumerID, Labels: legacy(upConsumerID)}, Spec: tenant.Spec}
		Expect(provider.k8s.Create(ctx, stored)).To(Succeed())
		stored.Status = authv1beta1.TenantStatus{TenantNamespace: tenantNS, AuthParams: &params}
		Expect(provider.k8s.Status().Update(ctx, stored)).To(Succeed())
		binding := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: authv1beta1.RoleBindingName("liqo-remote-controlplane"), Labels: legacy(upConsumerID)},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "liqo-remote-controlplane"},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: upConsumerID}},
		}
		Expect(provider.k8s.Create(ctx, binding)).To(Succeed())
		bindingUID = binding.UID
		nonceLabels := legacy(upConsumerID)
		nonceLabels[authv1beta1.NonceSecretLabel] = authv1beta1.TrueValue
		Expect(provider.k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: authv1beta1.NonceSecretName, Labels: nonceLabels},
			Data: map[string][]byte{authv1beta1.NonceSecretField: []byte(rotated)}})).To(Succeed())
		// The CSR the previous agent requested (as the same user as this agent) and approved.
		csr := plantedCSR(legacyCSRName(upConsumerID, tenant.Spec.CSR, tenant.Spec.Signature), map[string]string{
			csrConsumerLabel: upConsumerID, vocabulary.ManagedByLabel: "gitpeer"}, tenant.Spec.CSR)
		Expect(provider.k8s.Create(ctx, csr)).To(Succeed())
		legacyCSR = csr.Name
		csr.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "GitpeerApproved"}}
		_, err = must(kubernetes.NewForConfig(provider.cp.Config)).CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{})
		Expect(err).NotTo(HaveOccurred())

		// Consumer side: the Identity, its kubeconfig and the CA-only pin.
		caSum := sha256.Sum256(provider.cp.CAPEM)
		cnsLabels := legacy(upProviderID)
		cnsLabels[authv1beta1.TenantNamespaceLabel] = "true"
		Expect(consumer.k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: consumerNS, Labels: cnsLabels,
			Annotations: map[string]string{vocabulary.PinnedCAAnnotation: hex.EncodeToString(caSum[:])}}})).To(Succeed())
		remoteNS := tenantNS
		identity := &authv1beta1.Identity{ObjectMeta: metav1.ObjectMeta{Namespace: consumerNS, Name: identityName, Labels: legacy(upProviderID)},
			Spec: authv1beta1.IdentitySpec{ClusterID: upProviderID, Type: authv1beta1.ControlPlaneIdentityType, AuthParams: params, Namespace: &remoteNS}}
		Expect(consumer.k8s.Create(ctx, identity)).To(Succeed())
		kubeconfig := must(crypto.BuildKubeconfig(crypto.KubeconfigParams{ProviderClusterID: upProviderID, IdentityName: identityName, Namespace: tenantNS,
			APIServer: provider.cp.URL, CA: provider.cp.CAPEM, Certificate: cert, Key: key}))
		secretLabels := legacy(upProviderID)
		secretLabels[authv1beta1.IdentityTypeLabel] = string(authv1beta1.ControlPlaneIdentityType)
		Expect(consumer.k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: consumerNS, Name: kubeconfigKey.Name, Labels: secretLabels,
			Annotations: map[string]string{authv1beta1.RemoteTenantNamespaceAnnotation: tenantNS}},
			Data: map[string][]byte{authv1beta1.KubeconfigSecretField: kubeconfig}})).To(Succeed())
		identity.Status.KubeconfigSecretRef = &corev1.LocalObjectReference{Name: kubeconfigKey.Name}
		Expect(consumer.k8s.Status().Update(ctx, identity)).To(Succeed())
		Expect(must(whoami.Kubeconfig(ctx, kubeconfig))).To(Equal(upConsumerID), "the previous release's kubeconfig works")

		// The upgrade: this version's CRDs applied over the previous ones, then its agents.
		for _, c := range []*cluster{provider, consumer} {
			crds, err := crd.Load()
			Expect(err).NotTo(HaveOccurred())
			Expect(crdinstall.Apply(ctx, c.k8s, crds...)).To(Succeed())
		}
		// The previous release pinned on first use; this one refuses a provider without an
		// anchor, so the admin opts in to keep (and migrate) the CA-only pin.
		obj := peeringRepository(ctx, Default, consumer)
		patch := client.MergeFrom(obj.DeepCopy())
		obj.Spec.Consumer.TrustOnFirstUse = true
		Expect(consumer.k8s.Patch(ctx, obj, patch)).To(Succeed())
		provider.startAgent()
		consumer.startAgent()
	})

	It("adopts the previous release's objects once, with events, and records the migration", func(ctx SpecContext) {
		Eventually(func(g Gomega) {
			obj := peeringRepository(ctx, g, provider)
			g.Expect(obj.Status.OwnershipVersion).To(BeEquivalentTo(gitpeerv1alpha1.CurrentOwnershipVersion))
		}).WithTimeout(time.Minute).Should(Succeed())
		uid := string(provider.object.UID)
		for _, obj := range []client.Object{
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenantNS}},
			&authv1beta1.Tenant{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: upConsumerID}},
			&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: authv1beta1.RoleBindingName("liqo-remote-controlplane")}},
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: authv1beta1.NonceSecretName}},
		} {
			Expect(provider.k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
			Expect(obj.GetLabels()).To(HaveKeyWithValue(vocabulary.OwnerLabel, uid), "%T %s", obj, obj.GetName())
		}
		Eventually(func() []string { return normalEvents(ctx, provider, vocabulary.ReasonAdopted) }).WithTimeout(30*time.Second).
			Should(ContainElement(And(ContainSubstring(tenantNS), ContainSubstring("one-time migration"),
				ContainSubstring("key pin "+keyPin[:16]+" copied from annotation"))), "the pin found only on the namespace is copied into the records, and reported")
		Eventually(func() []string { return normalEvents(ctx, provider, vocabulary.ReasonOwnershipMigrated) }).WithTimeout(30 * time.Second).ShouldNot(BeEmpty())
		Expect(apierrors.IsNotFound(provider.k8s.Get(ctx, client.ObjectKey{Name: legacyCSR}, &certificatesv1.CertificateSigningRequest{}))).
			To(BeTrue(), "the CSR the previous agent requested is deleted")
		obj := peeringRepository(ctx, Default, provider)
		Expect(obj.Spec.Provider.CertificateTTL).NotTo(BeNil())
		Expect(obj.Spec.Provider.CertificateTTL.Duration).To(Equal(8760*time.Hour), "a stored certificateTTL keeps the previous default")
	})

	It("keeps the peering issued and renews the certificate when due", func(ctx SpecContext) {
		Eventually(func() map[string]gitpeerv1alpha1.PeeringPhase { return peeringPhases(ctx, provider) }).WithTimeout(time.Minute).
			Should(HaveKeyWithValue(string(gitpeerv1alpha1.ProviderRole)+"/"+upConsumerID, gitpeerv1alpha1.PhaseIssued))
		var renewed *x509.Certificate
		Eventually(func(g Gomega) {
			t := &authv1beta1.Tenant{}
			g.Expect(provider.k8s.Get(ctx, client.ObjectKey{Namespace: tenantNS, Name: upConsumerID}, t)).To(Succeed())
			renewed = must(crypto.ParseCertificatePEM(t.Status.AuthParams.SignedCRT))
			g.Expect(renewed.SerialNumber.Text(16)).NotTo(Equal(oldSerial))
		}).WithTimeout(time.Minute).Should(Succeed())
		Eventually(func(g Gomega) string {
			id := &authv1beta1.Identity{}
			g.Expect(yaml.Unmarshal([]byte(show("main", dir+"identity.yaml")), id)).To(Succeed())
			cert, err := crypto.ParseCertificatePEM(id.Spec.AuthParams.SignedCRT)
			g.Expect(err).NotTo(HaveOccurred())
			return cert.SerialNumber.Text(16)
		}).WithTimeout(time.Minute).Should(Equal(renewed.SerialNumber.Text(16)), "identity.yaml carries the renewed certificate")
		rb := &rbacv1.RoleBinding{}
		Expect(provider.k8s.Get(ctx, client.ObjectKey{Namespace: tenantNS, Name: authv1beta1.RoleBindingName("liqo-remote-controlplane")}, rb)).To(Succeed())
		Expect(rb.UID).To(Equal(bindingUID), "the RoleBinding was never removed")
		records := issuedRecords(ctx, provider, upConsumerID)
		Expect(records).To(ContainSubstring(oldSerial), "the records are seeded with the previous release's certificate")
		Expect(records).To(ContainSubstring(renewed.SerialNumber.Text(16)))
		Expect(records).To(ContainSubstring(keyPin), "the key pin of the namespace is recorded")
	})

	It("replaces the previous release's unbounded status with the bounded one", func(ctx SpecContext) {
		for _, c := range []*cluster{provider, consumer} {
			Eventually(func(g Gomega) {
				obj := peeringRepository(ctx, g, c)
				g.Expect(obj.Status.PeeringCounts).To(HaveLen(1))
				g.Expect(obj.Status.Peerings).To(HaveLen(1), "the previous release's entries are gone")
				g.Expect(obj.Status.PeeringsOmitted).To(BeZero())
			}).WithTimeout(time.Minute).Should(Succeed())
		}
	})

	It("moves gitpeer 0.1.0's records Secret to the sharded Secrets, and still refuses to bind a revoked consumer", func(ctx SpecContext) {
		legacy := client.ObjectKey{Namespace: agentNamespace, Name: vocabulary.IssuedSecretPrefix + provider.object.Name}
		Eventually(func() bool { return apierrors.IsNotFound(provider.k8s.Get(ctx, legacy, &corev1.Secret{})) }).
			WithTimeout(time.Minute).Should(BeTrue(), "the single Secret is deleted once moved")
		Expect(normalEvents(ctx, provider, vocabulary.ReasonRecordsMigrated)).To(ContainElement(ContainSubstring(legacy.Name)))
		Expect(issuedRecords(ctx, provider, upRevokedID)).To(And(ContainSubstring(revokedSerial), ContainSubstring(`"revokedAt"`)))

		rdir := upProviderID + "/" + upRevokedID + "/"
		commit("Request "+upRevokedID+" again", map[string][]byte{rdir + "request.yaml": requestFor(upProviderID, upRevokedID, revokedKey)})
		nonce := waitNonceAt(rdir, "")
		commit("Approve "+upRevokedID, map[string][]byte{rdir + "tenant.yaml": tenantDoc(signedTenant(revokedKey, upRevokedID, nonce))})
		expectReported(ctx, provider, rdir+"tenant.yaml", "revoked certificate "+revokedSerial, "valid until "+revokedUntil.Format(time.RFC3339))
		Consistently(func(g Gomega) {
			g.Expect(apierrors.IsNotFound(provider.k8s.Get(ctx, client.ObjectKey{Namespace: authv1beta1.TenantNamespaceName(upRevokedID), Name: upRevokedID}, &authv1beta1.Tenant{}))).To(BeTrue())
			g.Expect(show("main", rdir+"identity.yaml")).To(BeEmpty())
		}).WithTimeout(5 * time.Second).Should(Succeed())
	})

	It("keeps the consumer's kubeconfig working, adopted, with the pin migrated", func(ctx SpecContext) {
		Eventually(func(g Gomega) {
			secret := &corev1.Secret{}
			g.Expect(consumer.k8s.Get(ctx, kubeconfigKey, secret)).To(Succeed())
			g.Expect(secret.Labels).To(HaveKeyWithValue(vocabulary.OwnerLabel, string(consumer.object.UID)))
			cfg, err := clientcmd.Load(secret.Data[authv1beta1.KubeconfigSecretField])
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(cfg.AuthInfos).To(HaveKey(identityName))
			cert, err := crypto.ParseCertificatePEM(cfg.AuthInfos[identityName].ClientCertificateData)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(cert.SerialNumber.Text(16)).NotTo(Equal(oldSerial), "the renewed certificate reached the kubeconfig")
			g.Expect(whoami.Kubeconfig(ctx, secret.Data[authv1beta1.KubeconfigSecretField])).To(Equal(upConsumerID))
			ns := &corev1.Namespace{}
			g.Expect(consumer.k8s.Get(ctx, client.ObjectKey{Name: consumerNS}, ns)).To(Succeed())
			g.Expect(ns.Labels).To(HaveKeyWithValue(vocabulary.OwnerLabel, string(consumer.object.UID)))
			g.Expect(ns.Annotations).To(HaveKey(vocabulary.PinnedProviderAnnotation))
			g.Expect(ns.Annotations).NotTo(HaveKey(vocabulary.PinnedCAAnnotation))
		}).WithTimeout(2 * time.Minute).Should(Succeed())
		Expect(peeringRepository(ctx, Default, consumer).Status.OwnershipVersion).To(BeEquivalentTo(gitpeerv1alpha1.CurrentOwnershipVersion))
	})

	It("does not adopt on its own again after the migration", func(ctx SpecContext) {
		late := "upgrade-d"
		labels := legacy(late)
		labels[authv1beta1.TenantNamespaceLabel] = "true"
		Expect(provider.k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: authv1beta1.TenantNamespaceName(authv1beta1.ClusterID(late)), Labels: labels}})).To(Succeed())
		commit("Request "+late, map[string][]byte{upProviderID + "/" + late + "/request.yaml": requestFor(upProviderID, late, newClusterKey())})
		expectEvent(ctx, provider, gitpeerv1alpha1.RejectedReason, "liqo-tenant-"+late, vocabulary.OwnerLabel)
		ns := &corev1.Namespace{}
		Expect(provider.k8s.Get(ctx, client.ObjectKey{Name: "liqo-tenant-" + late}, ns)).To(Succeed())
		Expect(ns.Labels).NotTo(HaveKey(vocabulary.OwnerLabel))
		Expect(show("main", upProviderID+"/"+late+"/nonce.yaml")).To(BeEmpty())
	})
})

// signWithClusterCA issues a client certificate for the CSR with the
// provider's cluster CA, valid from notBefore to notAfter.
func signWithClusterCA(c *cluster, csrPEM []byte, notBefore, notAfter time.Time) []byte {
	GinkgoHelper()
	block, _ := pem.Decode(csrPEM)
	req := must(x509.ParseCertificateRequest(block.Bytes))
	keyBlock, _ := pem.Decode(must(os.ReadFile(filepath.Join(c.cp.Dir, "ca.key"))))
	caKey := must(x509.ParsePKCS8PrivateKey(keyBlock.Bytes)).(gocrypto.Signer)
	caBlock, _ := pem.Decode(c.cp.CAPEM)
	ca := must(x509.ParseCertificate(caBlock.Bytes))
	der := must(x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: must(rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))),
		Subject:      req.Subject, NotBefore: notBefore, NotAfter: notAfter,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, ca, req.PublicKey, caKey))
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// normalEvents returns the notes of the Normal events with reason on c's PeeringRepository.
func normalEvents(ctx context.Context, c *cluster, reason string) []string {
	GinkgoHelper()
	var events eventsv1.EventList
	Expect(c.k8s.List(ctx, &events, client.InNamespace(agentNamespace))).To(Succeed())
	var out []string
	for _, e := range events.Items {
		if e.Type == corev1.EventTypeNormal && e.Reason == reason && e.Regarding.UID == c.object.UID {
			out = append(out, e.Note)
		}
	}
	return out
}
