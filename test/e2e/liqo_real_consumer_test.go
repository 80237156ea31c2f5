package e2e

import (
	"context"
	gocrypto "crypto"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1/documents"
	"github.com/gitpeer/gitpeer/crypto"
	reconcilerliqo "github.com/gitpeer/gitpeer/reconciler/liqo"
	planner "github.com/gitpeer/gitpeer/reconciler/plan/provider"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/reconciler/whoami"
	"github.com/gitpeer/gitpeer/test/liqo"
	"github.com/gitpeer/gitpeer/test/liqoreal"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// Liqo mode with Liqo's own authentication module (v1.2.0, test/liqoreal)
// on every Liqo cluster, four control planes shared by the specs:
//   - P runs Liqo and a gitpeer provider in Liqo mode;
//   - C runs Liqo, with RSA keys (its TLS compatibility mode), and a gitpeer
//     consumer in spec.liqo.mode Auto, which finds Liqo: of P (Liqo on both
//     sides), of X and of S;
//   - X runs Liqo without gitpeer (its admin answers with liqoctl and commits
//     by hand): a plain Liqo provider to C, and a plain Liqo consumer of P;
//   - S runs no Liqo: a gitpeer provider in standalone mode.
//
// Liqo's renewal runs with Liqo's CRD replicator in
// liqo_real_replicator_test.go.
var _ = Describe("Liqo mode on the real Liqo: consumer, both sides, mixed peers", Ordered, func() {
	const pID, cID, xID, sID = "realb-p", "realb-c", "realb-x", "realb-s"
	const sliceName, goneSlice = "slice-1", "slice-gone" // goneSlice is deleted before the revocation
	var p, c, x, s *cluster
	liqos := map[string]*liqoreal.Harness{} // the Liqo running on each cluster
	var cKey, xKey gocrypto.Signer          // the Liqo keys of C and X
	var cKeys *corev1.Secret                // C's Liqo key Secret before C's agent started
	var serials []string                    // every certificate P's Liqo issued to C
	var goneSerial string                   // the certificate of goneSlice
	dirPC, dirXC, dirPX := pID+"/"+cID+"/", xID+"/"+cID+"/", pID+"/"+xID+"/"
	cNS := authv1beta1.TenantNamespaceName(pID) // C's tenant namespace for P
	pNS := authv1beta1.TenantNamespaceName(cID) // P's tenant namespace for C
	identityKey := client.ObjectKey{Namespace: cNS, Name: authv1beta1.ControlPlaneIdentityName(pID)}

	BeforeAll(func(ctx SpecContext) {
		p, c, x, s = newCluster(pID), newCluster(cID), newCluster(xID), newCluster(sID)
		for _, cl := range []*cluster{p, c, x} {
			liqos[cl.id] = startRealLiqo(ctx, cl, cl == c)
		}
		DeferCleanup(func() {
			for _, h := range liqos {
				h.Stop()
			}
		})
		cKey = must(liqo.ClusterKey(ctx, c.k8s, liqo.DefaultNamespace))
		xKey = must(liqo.ClusterKey(ctx, x.k8s, liqo.DefaultNamespace))
		cKeys = &corev1.Secret{}
		Expect(c.k8s.Get(ctx, client.ObjectKey{Namespace: liqo.DefaultNamespace, Name: liqo.KeysSecret}, cKeys)).To(Succeed())
		applyLiqoProvider(p)
		s.apply(func(spec *gitpeerv1alpha1.PeeringRepositorySpec) {
			spec.Provider = &gitpeerv1alpha1.ProviderSpec{Enabled: true, APIServer: s.cp.URL}
		})
		c.apply(func(spec *gitpeerv1alpha1.PeeringRepositorySpec) {
			// spec.liqo unset: Auto, Liqo mode since C runs Liqo.
			spec.Consumer = &gitpeerv1alpha1.ConsumerSpec{Providers: []authv1beta1.ClusterID{pID, xID, sID}, Direct: true, TrustedCAs: anchors(p, x, s)}
		})
		p.startAgent()
		s.startAgent()
		c.startAgent()
	})

	It("peers both sides with Liqo doing all the crypto: Liqo's nonce signature, key and kubeconfig", func(ctx SpecContext) {
		id := waitIdentity(dirPC, "")
		serial := must(crypto.ParseCertificatePEM(id.Spec.AuthParams.SignedCRT)).SerialNumber.Text(16)
		serials = append(serials, serial)
		expectLiqoKubeconfig(ctx, c, pID, cID, serial)
		expectOnlyLiqoCSRs(ctx, p, 1)

		Expect(cKey).To(BeAssignableToTypeOf(&rsa.PrivateKey{}), "C's Liqo runs in TLS compatibility mode")
		By("C, in Auto mode, found Liqo: it signs with Liqo's key and made no key of its own")
		Eventually(func(g Gomega) {
			g.Expect(conditionOf(peeringRepository(ctx, g, c), gitpeerv1alpha1.LiqoReadyCondition)).To(And(
				HaveField("Status", metav1.ConditionTrue), HaveField("Reason", gitpeerv1alpha1.LiqoModeReason),
				HaveField("Message", "Liqo mode: cluster ID "+cID+", key type RSA-2048, Liqo "+reconcilerliqo.TestedVersion)))
		}).WithTimeout(time.Minute).Should(Succeed())
		var request documents.PeeringRequest
		Expect(yaml.Unmarshal([]byte(show("main", dirPC+"request.yaml")), &request)).To(Succeed())
		Expect(request.Spec.PublicKey).To(Equal(must(crypto.MarshalPublicKeyPEM(cKey.Public()))), "request.yaml carries Liqo's public key")
		err := c.k8s.Get(ctx, client.ObjectKey{Namespace: agentNamespace, Name: crypto.KeySecretName}, &corev1.Secret{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the agent created a key of its own in Liqo mode: %v", err)
		after := &corev1.Secret{}
		Expect(c.k8s.Get(ctx, client.ObjectKeyFromObject(cKeys), after)).To(Succeed())
		Expect(after.ResourceVersion).To(Equal(cKeys.ResourceVersion), "Liqo's key Secret changed")

		By("P created the nonce the Liqo way, Liqo's nonce creator filled it, Liqo's tenant controller took the Tenant gitpeer applied")
		nonceSecret := &corev1.Secret{}
		Expect(p.k8s.Get(ctx, client.ObjectKey{Namespace: pNS, Name: authv1beta1.NonceSecretName}, nonceSecret)).To(Succeed())
		Expect(nonceSecret.Labels).To(HaveKeyWithValue(authv1beta1.NonceSecretLabel, authv1beta1.TrueValue))
		Expect(nonceSecret.Labels).To(HaveKeyWithValue(authv1beta1.RemoteClusterIDLabel, cID))
		expectLiqoNonceCreated(ctx, p, nonceSecret)
		applied := &authv1beta1.Tenant{}
		Expect(p.k8s.Get(ctx, client.ObjectKey{Namespace: pNS, Name: cID}, applied)).To(Succeed())
		Expect(applied.Labels).To(HaveKeyWithValue(vocabulary.OwnerLabel, string(p.object.UID)))
		Expect(applied.Finalizers).To(ContainElement(liqo.TenantFinalizer), "Liqo's tenant controller reconciled it")
		Expect(issuedRecords(ctx, p, cID)).To(ContainSubstring(serial))

		By("tenant.yaml carries C's Liqo key and the signature C's Liqo nonce signer wrote")
		var nonce documents.Nonce
		Expect(yaml.Unmarshal([]byte(show("main", dirPC+"nonce.yaml")), &nonce)).To(Succeed())
		var tenant authv1beta1.Tenant
		Expect(yaml.Unmarshal([]byte(show("main", dirPC+"tenant.yaml")), &tenant)).To(Succeed())
		signed := &corev1.Secret{}
		Expect(c.k8s.Get(ctx, client.ObjectKey{Namespace: cNS, Name: authv1beta1.SignedNonceSecretName}, signed)).To(Succeed())
		Expect(string(signed.Data[authv1beta1.NonceSecretField])).To(Equal(nonce.Spec.Nonce))
		Expect(string(nonceSecret.Data[authv1beta1.NonceSecretField])).To(Equal(nonce.Spec.Nonce), "nonce.yaml carries the nonce Liqo's nonce creator wrote")
		Expect(crypto.VerifyNonceSignature(cKey.Public(), nonce.Spec.Nonce, signed.Data[authv1beta1.SignedNonceSecretField])).To(Succeed())
		Expect(tenant.Spec.Signature).To(Equal(signed.Data[authv1beta1.SignedNonceSecretField]))
		Expect(tenant.Spec.PublicKey).To(Equal(must(crypto.MarshalPublicKeyPEM(cKey.Public()))))

		By("C's Liqo keeps a Renew for the Identity gitpeer applied, owned by it")
		Eventually(func(g Gomega) {
			renew := &unstructured.Unstructured{}
			renew.SetGroupVersionKind(renewGVK)
			g.Expect(c.k8s.Get(ctx, identityKey, renew)).To(Succeed())
			g.Expect(renew.GetOwnerReferences()).To(ContainElement(HaveField("Kind", "Identity")))
		}).WithTimeout(time.Minute).Should(Succeed())
	})

	It("peers C with S, a gitpeer provider in standalone mode: S issues for Liqo's key, C's Liqo signs the nonce and writes the kubeconfig", func(ctx SpecContext) {
		dirSC := sID + "/" + cID + "/"
		sNS := authv1beta1.TenantNamespaceName(sID) // C's tenant namespace for S
		id := waitIdentity(dirSC, "")
		cert := must(crypto.ParseCertificatePEM(id.Spec.AuthParams.SignedCRT))
		expectLiqoKubeconfig(ctx, c, sID, cID, cert.SerialNumber.Text(16))
		Expect(must(crypto.KeyPin(cert.PublicKey))).To(Equal(must(crypto.KeyPin(cKey.Public()))), "S issued for Liqo's key")
		Expect(csrCount(ctx, s, cID)).To(Equal(1), "S signed with a CSR of its own")

		By("tenant.yaml carries Liqo's key and the signature C's Liqo nonce signer wrote")
		// The nonce tenant.yaml answered: S rotates it once it issued (standalone mode).
		proposed := strings.TrimSpace(gitCLI(repo.Dir, "log", "-1", "--format=%H", "--diff-filter=A", "main", "--", dirSC+"tenant.yaml"))
		var nonce documents.Nonce
		Expect(yaml.Unmarshal([]byte(show(proposed, dirSC+"nonce.yaml")), &nonce)).To(Succeed())
		var tenant authv1beta1.Tenant
		Expect(yaml.Unmarshal([]byte(show("main", dirSC+"tenant.yaml")), &tenant)).To(Succeed())
		signed := &corev1.Secret{}
		Expect(c.k8s.Get(ctx, client.ObjectKey{Namespace: sNS, Name: authv1beta1.SignedNonceSecretName}, signed)).To(Succeed())
		Expect(string(signed.Data[authv1beta1.NonceSecretField])).To(Equal(nonce.Spec.Nonce))
		Expect(crypto.VerifyNonceSignature(cKey.Public(), nonce.Spec.Nonce, signed.Data[authv1beta1.SignedNonceSecretField])).To(Succeed())
		Expect(tenant.Spec.Signature).To(Equal(signed.Data[authv1beta1.SignedNonceSecretField]))
		Expect(tenant.Spec.PublicKey).To(Equal(must(crypto.MarshalPublicKeyPEM(cKey.Public()))))

		By("the kubeconfig Secret is the one C's Liqo wrote for the Identity gitpeer applied, with Liqo's key")
		identityS := client.ObjectKey{Namespace: sNS, Name: authv1beta1.ControlPlaneIdentityName(sID)}
		identity := &authv1beta1.Identity{}
		Expect(c.k8s.Get(ctx, identityS, identity)).To(Succeed())
		Expect(identity.Status.KubeconfigSecretRef).To(Equal(&corev1.LocalObjectReference{Name: authv1beta1.KubeconfigSecretName(identityS.Name)}))
		cfg := must(clientcmd.Load(kubeconfigOf(ctx, c, sID)))
		Expect(cfg.AuthInfos).NotTo(BeEmpty())
		for _, user := range cfg.AuthInfos {
			Expect(user.ClientKeyData).To(Equal(must(crypto.MarshalPrivateKeyPEM(cKey))))
		}
	})

	It("keeps C's Identity and Liqo's kubeconfig Secret unchanged over restarts of C's Liqo and gitpeer rounds", func(ctx SpecContext) {
		identity, secret := &authv1beta1.Identity{}, &corev1.Secret{}
		secretKey := client.ObjectKey{Namespace: cNS, Name: authv1beta1.KubeconfigSecretName(identityKey.Name)}
		Expect(c.k8s.Get(ctx, identityKey, identity)).To(Succeed())
		Expect(c.k8s.Get(ctx, secretKey, secret)).To(Succeed())
		// A restarted Liqo reconciles every Identity; two restarts keep the spec's cost small.
		for range 2 {
			liqos[cID].Stop()
			liqos[cID] = startRealLiqo(ctx, c, true)
			requestRound(ctx, c)
		}
		for range 3 {
			requestRound(ctx, c)
		}
		after, afterSecret := &authv1beta1.Identity{}, &corev1.Secret{}
		Expect(c.k8s.Get(ctx, identityKey, after)).To(Succeed())
		Expect(after.ResourceVersion).To(Equal(identity.ResourceVersion))
		Expect(c.k8s.Get(ctx, secretKey, afterSecret)).To(Succeed())
		Expect(afterSecret.ResourceVersion).To(Equal(secret.ResourceVersion))
	})

	It("has a ResourceSlice created on C authenticated by P's Liqo, and its certificate works on P", func(ctx SpecContext) {
		createSlice(ctx, c, pID, sliceName)
		sliceKubeconfig := replicateSlice(ctx, c, p, sliceName, "")
		cs := clientFor(sliceKubeconfig)
		review := must(cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{}))
		Expect(review.Status.UserInfo.Groups).To(ContainElement(cID), "O of the slice certificate is C's cluster ID")
		cert := must(kubeconfigClientCert(sliceKubeconfig))
		Expect(review.Status.UserInfo.Username).To(Equal(cert.Subject.CommonName))
		serials = append(serials, cert.SerialNumber.Text(16))
		Expect(canScrapeMetrics(ctx, sliceKubeconfig)).To(BeTrue(), "Liqo binds the consumer's group cluster-wide")

		By("P's Liqo denies a slice CSR of another key, for another slice, or with the control plane's subject")
		slices := remoteSlices(ctx, c, p)
		csrs := map[string][]byte{
			sliceName:             must(base64.StdEncoding.DecodeString(must(nestedString(must(slices.Get(ctx, sliceName, metav1.GetOptions{})), "spec", "csr")))),
			"slice-other-key":     must(liqo.ResourceSliceCSR(newClusterKey(), "slice-other-key", cID)),
			"slice-renamed":       must(liqo.ResourceSliceCSR(cKey, "slice-elsewhere", cID)),
			"slice-control-plane": must(crypto.BuildCSR(cKey, cID)),
		}
		for name, csr := range csrs {
			if name != sliceName {
				must(slices.Create(ctx, replicated(resourceSliceGVR, cID, pID, pNS, name, map[string]any{
					"consumerClusterID": cID, "providerClusterID": pID, "class": "default", "csr": base64.StdEncoding.EncodeToString(csr),
				}), metav1.CreateOptions{}))
			}
			decision := sliceAuthentication(ctx, slices, name)
			Expect(decision == "Accepted").To(Equal(name == sliceName), "ResourceSlice %s: %s", name, decision)
		}
	})

	It("records the certificate of a ResourceSlice as P's Liqo issues it, so that it outlives the slice", func(ctx SpecContext) {
		createSlice(ctx, c, pID, goneSlice)
		cert := must(kubeconfigClientCert(replicateSlice(ctx, c, p, goneSlice, "")))
		goneSerial = cert.SerialNumber.Text(16)
		Eventually(func(g Gomega) {
			secret := &corev1.Secret{}
			g.Expect(p.k8s.Get(ctx, client.ObjectKey{Namespace: agentNamespace, Name: vocabulary.RecordsSecretName("peering", cID)}, secret)).To(Succeed())
			g.Expect(must(vocabulary.DecodeRecords(secret, cID)).Certificates).To(ContainElement(And(
				HaveField("Serial", goneSerial), HaveField("ResourceSlice", goneSlice), HaveField("RevokedAt", BeNil()))))
		}).WithTimeout(time.Minute).Should(Succeed(), "P's records hold the slice certificate as soon as Liqo issued it")

		By("the slice goes before any revocation, as the CRD replicator deletes it when C deletes its own; P's Liqo keeps its cache")
		Expect(remoteSlices(ctx, c, p).Delete(ctx, goneSlice, metav1.DeleteOptions{})).To(Succeed())
		Eventually(func() bool {
			_, err := remoteSlices(ctx, c, p).Get(ctx, goneSlice, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}).WithTimeout(time.Minute).Should(BeTrue())
		Expect(liqoCaches(ctx, p, pNS, goneSlice)).To(ContainElement(planner.LiqoCertificateCache + "-" + goneSlice))
	})

	It("revokes C on P: no binding, cache, slice or NamespaceMap is left, every serial is revoked, the slice certificate is denied", func(ctx SpecContext) {
		cpKubeconfig := kubeconfigOf(ctx, c, pID)
		sliceKubeconfig := must(sliceKubeconfigOf(ctx, c, pID, sliceName))

		By("a NamespaceMap of C reaches P: P's Liqo creates the offloaded namespace and binds C's group there, where C's slice certificate acts")
		nsMap, offloaded := offloadNamespace(ctx, c, p, "offload")
		Expect(bindingsNaming(ctx, p, cID)).To(ContainElement("RoleBinding " + offloaded + "/" + pNS))
		must(clientFor(sliceKubeconfig).CoreV1().ConfigMaps(offloaded).Create(ctx,
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "from-" + cID}}, metav1.CreateOptions{}))

		By("C keeps creating NamespaceMaps on P while it is revoked, as its CRD replicator would, until Liqo unbinds it: none survives")
		late := keepCreatingNamespaceMaps(ctx, c, p)
		revokeByGit(dirPC, cID)

		Eventually(func() []string { return bindingsNaming(ctx, p, cID) }).WithTimeout(time.Minute).Should(BeEmpty())
		Expect(late()).To(BeNumerically(">", 0), "C created NamespaceMaps during the revocation")
		Eventually(func() []unstructured.Unstructured { return namespaceMaps(ctx, p, pNS) }).WithTimeout(time.Minute).Should(BeEmpty())
		Consistently(func() []string { return bindingsNaming(ctx, p, cID) }).WithTimeout(5 * time.Second).Should(BeEmpty())
		Eventually(func() []string { return liqoCaches(ctx, p, pNS, sliceName, goneSlice) }).WithTimeout(time.Minute).Should(BeEmpty(),
			"the cache of the slice deleted before the revocation goes too: its name is in the records")
		Eventually(func() bool {
			return apierrors.IsNotFound(p.k8s.Get(ctx, client.ObjectKey{Namespace: pNS, Name: authv1beta1.NonceSecretName}, &corev1.Secret{}))
		}).WithTimeout(time.Minute).Should(BeTrue(), "the nonce goes: a re-peering signs a new one")
		Eventually(func(g Gomega) {
			g.Expect(revokedSerials(ctx, p, cID)).To(ContainElements(append(slices.Clone(serials), goneSerial)))
		}).WithTimeout(time.Minute).Should(Succeed())
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(resourceSliceGVR.GroupVersion().WithKind("ResourceSliceList"))
		Expect(p.k8s.List(ctx, list, client.InNamespace(pNS))).To(Succeed())
		Expect(list.Items).To(BeEmpty())
		Expect(canScrapeMetrics(ctx, sliceKubeconfig)).To(BeFalse(), "the slice certificate lost its binding")
		Expect(can(ctx, clientFor(sliceKubeconfig), "create", "", "configmaps", offloaded)).To(BeFalse(), "C may not act in the offloaded namespace")
		By("P's Liqo deleted the offloaded namespace, then let the NamespaceMap go")
		expectGone(ctx, p, nsMap, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: offloaded}})
		Expect(can(ctx, clientFor(cpKubeconfig), "create", "authentication.liqo.io", "resourceslices", pNS)).To(BeFalse())

		By("C deletes the Identity and the signed nonce; Liqo's kubeconfig Secret and Renew go with the Identity")
		expectGone(ctx, c, append(identityObjects(cNS, identityKey.Name),
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: cNS, Name: authv1beta1.SignedNonceSecretName}})...)
		Eventually(func(g Gomega) {
			g.Expect(peeringRepository(ctx, g, c).Status.Peerings).To(ContainElement(And(HaveField("PeerID", authv1beta1.ClusterID(pID)), HaveField("Phase", gitpeerv1alpha1.PhaseRevoked))))
		}).WithTimeout(time.Minute).Should(Succeed())
	})

	It("re-peers C with P after the revocation: refused while a revoked certificate is valid, then a new certificate, never a cached one", func(ctx SpecContext) {
		annotateRepository(ctx, c, gitpeerv1alpha1.RequestAgainAnnotation, pID)
		Eventually(func() string { return show("main", dirPC+"tenant.yaml") }).WithTimeout(time.Minute).ShouldNot(BeEmpty())
		expectReported(ctx, p, dirPC+"tenant.yaml", "re-peering is refused")
		expectNothingIssuedIn(ctx, p, dirPC, cID)

		annotateRepository(ctx, p, gitpeerv1alpha1.RevivalAnnotationPrefix+cID, gitpeerv1alpha1.AcceptRevivalValue)
		id := waitIdentity(dirPC, "")
		serial := must(crypto.ParseCertificatePEM(id.Spec.AuthParams.SignedCRT)).SerialNumber.Text(16)
		Expect(serials).NotTo(ContainElement(serial), "Liqo issued a new certificate: no cache survived the revocation")
		expectLiqoKubeconfig(ctx, c, pID, cID, serial)
		Expect(liqoCaches(ctx, p, pNS, sliceName, goneSlice)).To(ConsistOf(planner.LiqoCertificateCache), "only the new control-plane certificate is cached")

		By("the CRD replicator brings C's ResourceSlice, its CSR unchanged, back to P: P's Liqo issues a new slice certificate, which works")
		old := serials[len(serials)-1]
		sliceKubeconfig := replicateSlice(ctx, c, p, sliceName, old)
		cert := must(kubeconfigClientCert(sliceKubeconfig))
		Expect(serials).NotTo(ContainElement(cert.SerialNumber.Text(16)), "no slice certificate cache survived the revocation")
		Expect(canScrapeMetrics(ctx, sliceKubeconfig)).To(BeTrue())
	})

	It("peers C with X, a plain Liqo provider whose admin answers with liqoctl", func(ctx SpecContext) {
		By("X's admin: liqoctl create nonce, committed as nonce.yaml")
		nonce := must(liqo.CreateNonce(ctx, x.k8s, cID))
		commit("liqoctl create nonce for "+cID, map[string][]byte{dirXC + "nonce.yaml": must(protocol.NonceDocument(xID, cID, nonce))})

		By("C commits tenant.yaml signed by its Liqo; X's admin applies it and commits liqoctl generate identity")
		tenant := &authv1beta1.Tenant{}
		Eventually(func(g Gomega) {
			data := show("main", dirXC+"tenant.yaml")
			g.Expect(data).NotTo(BeEmpty())
			g.Expect(yaml.UnmarshalStrict([]byte(data), tenant)).To(Succeed())
		}).WithTimeout(time.Minute).Should(Succeed())
		Expect(tenant.Spec.PublicKey).To(Equal(must(crypto.MarshalPublicKeyPEM(cKey.Public()))))
		tenant.Namespace = authv1beta1.TenantNamespaceName(cID)
		Expect(x.k8s.Create(ctx, tenant)).To(Succeed(), "X's Liqo webhooks admit the Tenant")
		Eventually(func(g Gomega) {
			g.Expect(x.k8s.Get(ctx, client.ObjectKeyFromObject(tenant), tenant)).To(Succeed())
			g.Expect(tenant.Status.AuthParams).NotTo(BeNil())
			g.Expect(tenant.Status.AuthParams.SignedCRT).NotTo(BeEmpty())
		}).WithTimeout(time.Minute).Should(Succeed(), "X's Liqo verified the handshake and issued")
		id := must(liqo.GenerateIdentity(tenant, xID))
		commit("liqoctl generate identity for "+cID, map[string][]byte{dirXC + "identity.yaml": must(yaml.Marshal(id))})

		expectLiqoKubeconfig(ctx, c, xID, cID, must(crypto.ParseCertificatePEM(id.Spec.AuthParams.SignedCRT)).SerialNumber.Text(16))
		applied := &authv1beta1.Identity{}
		Expect(c.k8s.Get(ctx, client.ObjectKey{Namespace: authv1beta1.TenantNamespaceName(xID), Name: id.Name}, applied)).To(Succeed())
		Expect(applied.Spec).To(Equal(id.Spec), "the Identity applied is liqoctl's, unchanged")
	})

	It("peers X, a plain Liqo consumer whose admin commits by hand, with P", func(ctx SpecContext) {
		By("X's admin: request.yaml with X's Liqo key, then liqoctl generate tenant for the nonce P published")
		commit("Request peering of "+xID, map[string][]byte{dirPX + "request.yaml": requestFor(pID, xID, xKey)})
		nonce := waitNonceAt(dirPX, "")
		tenant := must(liqo.GenerateTenant(ctx, x.k8s, xKey, xID, pID, nonce))
		commit("Merge pull request: Tenant of "+xID, map[string][]byte{dirPX + "tenant.yaml": tenantDoc(tenant)})

		By("P's Liqo issues; X's admin applies identity.yaml; X's Liqo writes a kubeconfig that is X on P")
		id := waitIdentity(dirPX, "")
		id.Namespace = authv1beta1.TenantNamespaceName(pID)
		Expect(x.k8s.Create(ctx, id)).To(Succeed())
		Eventually(func(g Gomega) {
			secret := &corev1.Secret{}
			g.Expect(x.k8s.Get(ctx, client.ObjectKey{Namespace: id.Namespace, Name: authv1beta1.KubeconfigSecretName(id.Name)}, secret)).To(Succeed())
			g.Expect(whoami.Kubeconfig(ctx, secret.Data[authv1beta1.KubeconfigSecretField])).To(Equal(xID))
		}).WithTimeout(time.Minute).Should(Succeed())
	})
})

// offloadNamespace creates, in p's tenant namespace for c and through c's
// control-plane kubeconfig as Liqo's CRD replicator does, a NamespaceMap
// mapping c's namespace source to <source>-<c>, and waits for p's Liqo (its
// NamespaceMap controller: liqotech/liqo v1.2.0
// pkg/liqo-controller-manager/offloading/namespacemap-controller/enforcement.go)
// to create that namespace and bind c's group there in a RoleBinding named
// after the tenant namespace. It returns the NamespaceMap and the namespace.
func offloadNamespace(ctx context.Context, c, p *cluster, source string) (*unstructured.Unstructured, string) {
	GinkgoHelper()
	ns := authv1beta1.TenantNamespaceName(authv1beta1.ClusterID(c.id))
	offloaded := source + "-" + c.id
	dyn := must(dynamic.NewForConfig(must(clientcmd.RESTConfigFromKubeConfig(kubeconfigOf(ctx, c, p.id)))))
	nsMap := must(dyn.Resource(namespaceMapGVR).Namespace(ns).Create(ctx, replicated(namespaceMapGVR, c.id, p.id, ns, c.id+"-map",
		map[string]any{"desiredMapping": map[string]any{source: offloaded}}), metav1.CreateOptions{}))
	Eventually(func(g Gomega) {
		rb := &rbacv1.RoleBinding{}
		g.Expect(p.k8s.Get(ctx, client.ObjectKey{Namespace: offloaded, Name: ns}, rb)).To(Succeed())
		g.Expect(rb.Subjects).To(ConsistOf(And(HaveField("Kind", rbacv1.GroupKind), HaveField("Name", c.id))))
	}).WithTimeout(time.Minute).Should(Succeed(), "P's Liqo binds %s in %s", c.id, offloaded)
	return nsMap, offloaded
}

// keepCreatingNamespaceMaps creates, with c's kubeconfig for p, a new
// NamespaceMap asking for one more offloaded namespace in c's tenant
// namespace on p every 200 ms until p refuses it; the function returned waits
// for that and says how many were created.
func keepCreatingNamespaceMaps(ctx context.Context, c, p *cluster) func() int {
	ns := authv1beta1.TenantNamespaceName(authv1beta1.ClusterID(c.id))
	dyn := must(dynamic.NewForConfig(must(clientcmd.RESTConfigFromKubeConfig(kubeconfigOf(ctx, c, p.id)))))
	done := make(chan int, 1)
	go func() {
		defer GinkgoRecover()
		created := 0
		for i := 0; ctx.Err() == nil; i++ {
			name := fmt.Sprintf("%s-late-%d", c.id, i)
			_, err := dyn.Resource(namespaceMapGVR).Namespace(ns).Create(ctx, replicated(namespaceMapGVR, c.id, p.id, ns, name,
				map[string]any{"desiredMapping": map[string]any{name: name}}), metav1.CreateOptions{})
			if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
				break
			}
			if err == nil {
				created++
			}
			time.Sleep(200 * time.Millisecond)
		}
		done <- created
	}()
	return func() int { return <-done }
}

// namespaceMaps lists the NamespaceMaps in ns on c.
func namespaceMaps(ctx context.Context, c *cluster, ns string) []unstructured.Unstructured {
	GinkgoHelper()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(namespaceMapGVR.GroupVersion().WithKind("NamespaceMapList"))
	Expect(c.k8s.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	return list.Items
}

// revokeByGit removes dir/tenant.yaml from main, as a merged revocation
// does, and waits for the provider to take dir/identity.yaml away.
func revokeByGit(dir, consumer string) {
	GinkgoHelper()
	w := clone()
	gitCLI(w, "rm", "-q", dir+"tenant.yaml")
	gitCLI(w, "commit", "-q", "-m", "Revoke "+consumer)
	pushMain(w)
	Eventually(func() string { return show("main", dir+"identity.yaml") }).WithTimeout(time.Minute).Should(BeEmpty())
}

// renewGVK is the kind of the Renew Liqo's local renewer keeps for each
// control-plane Identity (liqotech/liqo v1.2.0 localrenewer-controller).
var renewGVK = resourceSliceGVR.GroupVersion().WithKind("Renew")

// createSlice creates ResourceSlice name on the consumer c in its tenant
// namespace for provider, as `liqoctl create resourceslice` does, and waits
// for c's Liqo to sign its CSR.
func createSlice(ctx context.Context, c *cluster, provider, name string) {
	GinkgoHelper()
	local := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": resourceSliceGVR.GroupVersion().String(), "kind": "ResourceSlice",
		"metadata": map[string]any{"namespace": authv1beta1.TenantNamespaceName(authv1beta1.ClusterID(provider)), "name": name,
			"labels": map[string]any{"liqo.io/replication": "true", "liqo.io/remoteID": provider, authv1beta1.RemoteClusterIDLabel: provider}},
		"spec": map[string]any{"class": "default"},
	}}
	Expect(c.k8s.Create(ctx, local)).To(Succeed())
	Eventually(func(g Gomega) {
		g.Expect(c.k8s.Get(ctx, client.ObjectKeyFromObject(local), local)).To(Succeed())
		csr, _, _ := unstructured.NestedString(local.Object, "spec", "csr")
		g.Expect(csr).NotTo(BeEmpty(), "c's Liqo signs the slice CSR")
	}).WithTimeout(time.Minute).Should(Succeed())
}

// replicateSlice plays Liqo's CRD replicator (not run by the harness: an
// internal package of Liqo) for c's ResourceSlice name, with c's control-plane
// kubeconfig for p: the slice to p's tenant namespace, p's status back. It
// returns the kubeconfig c's Liqo then writes for the slice's Identity, once
// its certificate is not notSerial.
func replicateSlice(ctx context.Context, c, p *cluster, name, notSerial string) []byte {
	GinkgoHelper()
	pNS := authv1beta1.TenantNamespaceName(authv1beta1.ClusterID(c.id))
	local := &unstructured.Unstructured{}
	local.SetGroupVersionKind(resourceSliceGVR.GroupVersion().WithKind("ResourceSlice"))
	Expect(c.k8s.Get(ctx, client.ObjectKey{Namespace: authv1beta1.TenantNamespaceName(authv1beta1.ClusterID(p.id)), Name: name}, local)).To(Succeed())
	spec, _, _ := unstructured.NestedMap(local.Object, "spec")
	dyn := remoteSlices(ctx, c, p)
	must(dyn.Create(ctx, replicated(resourceSliceGVR, c.id, p.id, pNS, name, spec), metav1.CreateOptions{}))
	var status map[string]any
	Eventually(func(g Gomega) {
		remote := must(dyn.Get(ctx, name, metav1.GetOptions{}))
		crt, _, _ := unstructured.NestedString(remote.Object, "status", "authParams", "signedCRT")
		g.Expect(crt).NotTo(BeEmpty(), "p's Liqo authenticates the slice")
		status, _, _ = unstructured.NestedMap(remote.Object, "status")
	}).WithTimeout(time.Minute).Should(Succeed())
	Expect(unstructured.SetNestedMap(local.Object, status, "status")).To(Succeed())
	Expect(c.k8s.Status().Update(ctx, local)).To(Succeed())

	var data []byte
	Eventually(func(g Gomega) {
		var err error
		data, err = sliceKubeconfigOf(ctx, c, p.id, name)
		g.Expect(err).NotTo(HaveOccurred())
		cert, err := kubeconfigClientCert(data)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(cert.SerialNumber.Text(16)).NotTo(Equal(notSerial))
	}).WithTimeout(time.Minute).Should(Succeed())
	return data
}

// remoteSlices is the ResourceSlices of p's tenant namespace for c, through
// c's control-plane kubeconfig for p, as Liqo's CRD replicator writes them.
func remoteSlices(ctx context.Context, c, p *cluster) dynamic.ResourceInterface {
	GinkgoHelper()
	cfg := must(clientcmd.RESTConfigFromKubeConfig(kubeconfigOf(ctx, c, p.id)))
	return must(dynamic.NewForConfig(cfg)).Resource(resourceSliceGVR).Namespace(authv1beta1.TenantNamespaceName(authv1beta1.ClusterID(c.id)))
}

// sliceAuthentication waits for the provider's Liqo to decide on the
// ResourceSlice name in slices and returns its decision: the status of its
// Authentication condition, Accepted or Denied.
func sliceAuthentication(ctx context.Context, slices dynamic.ResourceInterface, name string) string {
	GinkgoHelper()
	var decision string
	Eventually(func(g Gomega) string {
		slice := must(slices.Get(ctx, name, metav1.GetOptions{}))
		conditions, _, _ := unstructured.NestedSlice(slice.Object, "status", "conditions")
		for _, c := range conditions {
			if c, ok := c.(map[string]any); ok && c["type"] == "Authentication" {
				decision, _ = c["status"].(string)
			}
		}
		return decision
	}).WithTimeout(time.Minute).ShouldNot(BeEmpty(), "Liqo's decision on ResourceSlice %s", name)
	return decision
}

// sliceKubeconfigOf is the kubeconfig c's Liqo wrote for the Identity of its
// ResourceSlice name for provider (Identity resourceslice-<name>: liqotech/liqo
// v1.2.0 pkg/liqo-controller-manager/authentication/forge/identity.go).
func sliceKubeconfigOf(ctx context.Context, c *cluster, provider, name string) ([]byte, error) {
	secret := &corev1.Secret{}
	err := c.k8s.Get(ctx, client.ObjectKey{Namespace: authv1beta1.TenantNamespaceName(authv1beta1.ClusterID(provider)),
		Name: authv1beta1.KubeconfigSecretName("resourceslice-" + name)}, secret)
	return secret.Data[authv1beta1.KubeconfigSecretField], err
}

// nestedString is the string field of obj at path, an error when it is not one.
func nestedString(obj *unstructured.Unstructured, path ...string) (string, error) {
	v, found, err := unstructured.NestedString(obj.Object, path...)
	if err == nil && !found {
		err = fmt.Errorf("%s has no %v", obj.GetName(), path)
	}
	return v, err
}

// kubeconfigClientCert is the client certificate of kubeconfig.
func kubeconfigClientCert(kubeconfig []byte) (*x509.Certificate, error) {
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	return crypto.ParseCertificatePEM(cfg.CertData)
}

// canScrapeMetrics says whether kubeconfig may get Liqo's metrics, the one
// right of the ClusterRole Liqo binds to the consumer's group cluster-wide
// (liqo-virtual-kubelet-remote-clusterwide).
func canScrapeMetrics(ctx context.Context, kubeconfig []byte) bool {
	GinkgoHelper()
	return can(ctx, clientFor(kubeconfig), "get", "metrics.liqo.io", "scrape/metrics", "")
}

// startRealLiqo runs Liqo's authentication module on c (test/liqoreal) with
// c's cluster ID and API server address, with RSA keys if rsa (Liqo's
// authentication.tlsCompatibilityMode).
func startRealLiqo(ctx context.Context, c *cluster, rsa bool) *liqoreal.Harness {
	GinkgoHelper()
	return must(liqoreal.Start(ctx, c.cp, GinkgoT().TempDir(), liqoreal.Options{ClusterID: c.id, APIServer: c.cp.URL, TLSCompatibilityMode: rsa}))
}
