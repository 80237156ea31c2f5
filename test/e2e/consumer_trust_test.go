package e2e

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/fluxcd/pkg/apis/meta"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1/documents"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/examples/repofixture"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// The consumer trusts an identity.yaml only for a provider it asked (its own
// Tenant merged), whose API server the provider's terms publish, and only by
// the anchor its admin configured for that provider (the CA's hash, as
// kubeadm join takes it, or the CA in a Secret); without one it refuses,
// unless trust on first use is explicitly set, when it pins the API server
// and CA, loudly. It proves a changed kubeconfig before replacing the
// working one, and forgets a provider the admin no longer lists.
var _ = Describe("Consumer trust", Ordered, func() {
	const tProviderID, tConsumerID, ghostID = "provider-t", "consumer-t", "provider-ghost"
	const caSecret = "provider-t-ca"
	dir, ghostDir := tProviderID+"/"+tConsumerID+"/", ghostID+"/"+tConsumerID+"/"
	review := "gitpeer/" + tProviderID + "/" + tConsumerID
	consumerNS := authv1beta1.TenantNamespaceName(tProviderID)
	ghostNS := authv1beta1.TenantNamespaceName(ghostID)
	tenantNS := authv1beta1.TenantNamespaceName(tConsumerID)
	var provider, consumer *cluster
	attackerCA := must(repofixture.NewCA("attacker CA", time.Now().Add(-time.Minute), time.Hour))
	var attackerURL string
	var attackerReviews *atomic.Int32

	// identityFor is an identity.yaml for the consumer's real key (its CSR is
	// public on the branch), issued by the attacker's CA, for apiServer.
	identityFor := func(provider string, csr []byte, apiServer string) []byte {
		ns := authv1beta1.TenantNamespaceName(tConsumerID)
		return must(yaml.Marshal(&authv1beta1.Identity{
			TypeMeta:   metav1.TypeMeta{APIVersion: authv1beta1.GroupVersion.String(), Kind: authv1beta1.IdentityKind},
			ObjectMeta: metav1.ObjectMeta{Name: authv1beta1.ControlPlaneIdentityName(authv1beta1.ClusterID(provider))},
			Spec: authv1beta1.IdentitySpec{
				ClusterID: authv1beta1.ClusterID(provider), Type: authv1beta1.ControlPlaneIdentityType, Namespace: &ns,
				AuthParams: authv1beta1.AuthParams{
					APIServer: apiServer, CA: attackerCA.PEM,
					SignedCRT: must(attackerCA.Issue(csr, time.Now().Add(-time.Minute), time.Hour)),
				},
			},
		}))
	}
	tenantCSR := func(ref string) []byte {
		var t authv1beta1.Tenant
		Expect(yaml.Unmarshal([]byte(show(ref, dir+"tenant.yaml")), &t)).To(Succeed())
		return t.Spec.CSR
	}
	// termsFor is the provider's terms.yaml on main, rewritten to publish apiServer.
	termsFor := func(apiServer string) []byte {
		var terms documents.ProviderTerms
		Expect(yaml.Unmarshal([]byte(show("main", protocol.TermsPath(tProviderID))), &terms)).To(Succeed())
		terms.Spec.APIServer = apiServer
		return must(protocol.TermsDocument(terms.Spec))
	}
	setCA := func(ctx context.Context, pemData []byte) {
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: agentNamespace, Name: caSecret}}
		Expect(client.IgnoreAlreadyExists(consumer.k8s.Create(ctx, secret))).To(Succeed())
		patch := client.MergeFrom(secret.DeepCopy())
		secret.Data = map[string][]byte{"ca.crt": pemData}
		Expect(consumer.k8s.Patch(ctx, secret, patch)).To(Succeed())
	}
	editConsumer := func(ctx context.Context, mutate func(*gitpeerv1alpha1.ConsumerSpec)) {
		obj := peeringRepository(ctx, Default, consumer)
		patch := client.MergeFrom(obj.DeepCopy())
		mutate(obj.Spec.Consumer)
		Expect(consumer.k8s.Patch(ctx, obj, patch)).To(Succeed())
	}
	peeringMessage := func(ctx context.Context, g Gomega, peer string) string {
		for _, p := range peeringRepository(ctx, g, consumer).Status.Peerings {
			if p.Role == gitpeerv1alpha1.ConsumerRole && string(p.PeerID) == peer {
				return p.Message
			}
		}
		return ""
	}
	expectPhase := func(ctx context.Context, peer string, phase gitpeerv1alpha1.PeeringPhase) {
		GinkgoHelper()
		Eventually(func(g Gomega) {
			g.Expect(peeringPhases(ctx, consumer)).To(HaveKeyWithValue("Consumer/"+peer, phase))
		}).WithTimeout(time.Minute).Should(Succeed())
	}
	// holds reports what the consumer holds for a provider: Identity, kubeconfig Secret, pin.
	holds := func(ctx context.Context, g Gomega, peer string) (identity, kubeconfig, pin bool) {
		ns := authv1beta1.TenantNamespaceName(authv1beta1.ClusterID(peer))
		name := authv1beta1.ControlPlaneIdentityName(authv1beta1.ClusterID(peer))
		exists := func(obj client.Object, key client.ObjectKey) bool {
			err := consumer.k8s.Get(ctx, key, obj)
			g.Expect(client.IgnoreNotFound(err)).To(Succeed())
			return err == nil
		}
		identity = exists(&authv1beta1.Identity{}, client.ObjectKey{Namespace: ns, Name: name})
		kubeconfig = exists(&corev1.Secret{}, client.ObjectKey{Namespace: ns, Name: authv1beta1.KubeconfigSecretName(name)})
		nsObj := &corev1.Namespace{}
		if exists(nsObj, client.ObjectKey{Name: ns}) {
			pin = nsObj.Annotations[vocabulary.PinnedProviderAnnotation] != "" || nsObj.Annotations[vocabulary.PinnedCAAnnotation] != ""
		}
		return identity, kubeconfig, pin
	}
	expectNothingHeld := func(ctx context.Context, peer string) {
		GinkgoHelper()
		Consistently(func(g Gomega) {
			identity, kubeconfig, pin := holds(ctx, g, peer)
			g.Expect([]bool{identity, kubeconfig, pin}).To(Equal([]bool{false, false, false}), "Identity, kubeconfig, pin of %s", peer)
		}).WithTimeout(5 * time.Second).Should(Succeed())
	}

	BeforeAll(func(ctx SpecContext) {
		attackerURL, attackerReviews = attackerAPIServer(attackerCA)
		provider, consumer = newCluster(tProviderID), newCluster(tConsumerID)
		provider.apply(func(s *gitpeerv1alpha1.PeeringRepositorySpec) {
			s.Provider = &gitpeerv1alpha1.ProviderSpec{Enabled: true, APIServer: provider.cp.URL}
		})
		// The admin lists the provider and configures nothing else: the default.
		consumer.apply(func(s *gitpeerv1alpha1.PeeringRepositorySpec) {
			s.Consumer = &gitpeerv1alpha1.ConsumerSpec{Providers: []authv1beta1.ClusterID{tProviderID, ghostID}}
		})
		provider.startAgent()
		consumer.startAgent()
	})

	It("ignores an identity.yaml committed before its Tenant is merged, pinning nothing", func(ctx SpecContext) {
		mergeRequest(repo, review, dir)
		Eventually(func() string { return show(review, dir+"tenant.yaml") }).WithTimeout(2 * time.Minute).ShouldNot(BeEmpty())
		// Without the provider's agent, nothing revokes the attacker's file.
		provider.stopAgent()
		path := dir + "identity.yaml"
		commit("Identity for "+tConsumerID+" before review", map[string][]byte{path: identityFor(tProviderID, tenantCSR(review), "https://attacker.invalid:6443")})

		expectEvent(ctx, consumer, gitpeerv1alpha1.RejectedReason, path+" rejected", "this cluster did not ask "+tProviderID)
		expectPhase(ctx, tProviderID, gitpeerv1alpha1.PhaseFailed)
		expectNothingHeld(ctx, tProviderID)
	})

	It("refuses, by default, an attacker's identity.yaml and terms ridden on the Tenant's pull request, and never asks the attacker's API server", func(ctx SpecContext) {
		// Anyone who can push the review branch adds an Identity of their own CA for the
		// consumer's key, pointing at their API server (which answers SelfSubjectReviews as the
		// consumer), and terms.yaml publishing that server; the reviewer merges the Tenant.
		w := clone()
		gitCLI(w, "checkout", "-q", "-B", "attack", "origin/"+review)
		gitCLI(w, "merge", "-q", "--no-edit", "origin/main")
		for p, data := range map[string][]byte{
			dir + "identity.yaml":           identityFor(tProviderID, tenantCSR(review), attackerURL),
			protocol.TermsPath(tProviderID): termsFor(attackerURL),
		} {
			Expect(os.WriteFile(filepath.Join(w, p), data, 0o644)).To(Succeed())
		}
		gitCLI(w, "commit", "-q", "-am", "Fix up the Tenant")
		gitCLI(w, "push", "-q", "origin", "HEAD:"+review)
		gitCLI(w, "checkout", "-q", "main")
		gitCLI(w, "merge", "-q", "--no-ff", "origin/"+review, "-m", "Merge pull request from "+review)
		pushMain(w)

		path := dir + "identity.yaml"
		expectEvent(ctx, consumer, gitpeerv1alpha1.RejectedReason, path+" rejected", "provider not anchored",
			"spec.consumer.trustedCAs has no entry for provider "+tProviderID, "openssl x509 -in ca.crt -noout -pubkey")
		expectPhase(ctx, tProviderID, gitpeerv1alpha1.PhaseFailed)
		Eventually(func(g Gomega) string { return peeringMessage(ctx, g, tProviderID) }).WithTimeout(time.Minute).
			Should(ContainSubstring("trustOnFirstUse is off"))
		expectNothingHeld(ctx, tProviderID)
		Expect(attackerReviews.Load()).To(BeZero(), "the consumer answered the attacker's API server")
	})

	It("refuses it against the provider's CA hash too, and accepts the provider's own Identity, taking no pin", func(ctx SpecContext) {
		editConsumer(ctx, func(c *gitpeerv1alpha1.ConsumerSpec) { c.TrustedCAs = anchors(provider) })
		path := dir + "identity.yaml"
		expectEvent(ctx, consumer, gitpeerv1alpha1.RejectedReason, path+" rejected",
			"has hash "+must(crypto.CACertHashes(attackerCA.PEM))[0]+", not one of the caCertHashes of provider "+tProviderID)
		expectNothingHeld(ctx, tProviderID)
		Expect(attackerReviews.Load()).To(BeZero(), "the consumer answered the attacker's API server")

		// The provider's agent issues the real Identity over the attacker's and republishes its terms.
		provider.startAgent()
		expectPhase(ctx, tProviderID, gitpeerv1alpha1.PhaseReady)
		Expect(can(ctx, clientFor(kubeconfigOf(ctx, consumer, tProviderID)), "create", "authentication.liqo.io", "resourceslices", tenantNS)).To(BeTrue())
		identity, kubeconfig, pin := holds(ctx, Default, tProviderID)
		Expect([]bool{identity, kubeconfig, pin}).To(Equal([]bool{true, true, false}))
		Expect(attackerReviews.Load()).To(BeZero())
	})

	It("refuses the real Identity while its CA is not the CA of the admin's Secret, keeping the kubeconfig", func(ctx SpecContext) {
		kubeconfig := kubeconfigOf(ctx, consumer, tProviderID)
		setCA(ctx, must(repofixture.NewCA("not the provider's CA", time.Now().Add(-time.Minute), time.Hour)).PEM)
		editConsumer(ctx, func(c *gitpeerv1alpha1.ConsumerSpec) {
			c.TrustedCAs = []gitpeerv1alpha1.TrustedCA{{Provider: tProviderID, SecretRef: &meta.LocalObjectReference{Name: caSecret}}}
		})
		expectEvent(ctx, consumer, gitpeerv1alpha1.RejectedReason, dir+"identity.yaml rejected", "is not the CA configured for provider "+tProviderID)
		expectPhase(ctx, tProviderID, gitpeerv1alpha1.PhaseFailed)
		Consistently(func() []byte { return kubeconfigOf(ctx, consumer, tProviderID) }).WithTimeout(5 * time.Second).Should(Equal(kubeconfig))
	})

	It("accepts it once the admin's Secret holds the provider's CA, taking no pin", func(ctx SpecContext) {
		setCA(ctx, provider.cp.CAPEM)
		expectPhase(ctx, tProviderID, gitpeerv1alpha1.PhaseReady)
		Expect(can(ctx, clientFor(kubeconfigOf(ctx, consumer, tProviderID)), "create", "authentication.liqo.io", "resourceslices", tenantNS)).To(BeTrue())
		identity, kubeconfig, pin := holds(ctx, Default, tProviderID)
		Expect([]bool{identity, kubeconfig, pin}).To(Equal([]bool{true, true, false}))
	})

	It("keeps the working kubeconfig when a changed identity.yaml does not prove itself", func(ctx SpecContext) {
		provider.stopAgent()
		kubeconfig := kubeconfigOf(ctx, consumer, tProviderID)
		var id authv1beta1.Identity
		Expect(yaml.Unmarshal([]byte(show("main", dir+"identity.yaml")), &id)).To(Succeed())
		id.Spec.AuthParams.APIServer = "https://127.0.0.1:1" // same CA, nothing listening
		commit("Move "+tProviderID+"'s API server", map[string][]byte{
			dir + "identity.yaml": must(yaml.Marshal(&id)), protocol.TermsPath(tProviderID): termsFor(id.Spec.AuthParams.APIServer)})

		Eventually(func(g Gomega) string { return peeringMessage(ctx, g, tProviderID) }).WithTimeout(time.Minute).
			Should(ContainSubstring("does not work yet, kept the current one"))
		Consistently(func() []byte { return kubeconfigOf(ctx, consumer, tProviderID) }).WithTimeout(5 * time.Second).Should(Equal(kubeconfig))
		provider.startAgent()
		expectPhase(ctx, tProviderID, gitpeerv1alpha1.PhaseReady)
	})

	It("refuses an identity.yaml whose API server is not the one of the provider's terms", func(ctx SpecContext) {
		provider.stopAgent()
		var id authv1beta1.Identity
		published := show("main", dir+"identity.yaml")
		Expect(yaml.Unmarshal([]byte(published), &id)).To(Succeed())
		id.Spec.AuthParams.APIServer = "https://attacker.invalid:6443"
		path := dir + "identity.yaml"
		tampered := must(yaml.Marshal(&id))
		commit("Point "+tConsumerID+" elsewhere, terms unchanged", map[string][]byte{path: tampered})
		expectEvent(ctx, consumer, gitpeerv1alpha1.RejectedReason, path+" rejected",
			`identity.yaml points at API server "https://attacker.invalid:6443", the provider's terms publish "`+provider.cp.URL+`"`)
		// The Warning comes before the round's status: wait for it, or Ready is the last round's.
		expectPhase(ctx, tProviderID, gitpeerv1alpha1.PhaseFailed)

		// The provider puts back the identity.yaml it issued, in a commit of its agent: on
		// its first round after a restart, and on its visit of the changed directory.
		cert := must(crypto.ParseCertificatePEM(id.Spec.AuthParams.SignedCRT))
		restored := func() {
			GinkgoHelper()
			Eventually(func() string { return show("main", path) }).WithTimeout(time.Minute).Should(Equal(published))
			Expect(identityCommits(dir)[0]).To(MatchRegexp(`^(Issue|Renew) identity of %s on %s \(serial %s\)\|Gitpeer-Action: (issue|renew)-identity,`,
				tConsumerID, tProviderID, cert.SerialNumber.Text(16)))
		}
		provider.startAgent()
		restored()
		expectPhase(ctx, tProviderID, gitpeerv1alpha1.PhaseReady)
		commit("Point "+tConsumerID+" elsewhere again", map[string][]byte{path: tampered})
		restored()
		expectPhase(ctx, tProviderID, gitpeerv1alpha1.PhaseReady)
	})

	It("trusts on first use only when told to, with a Warning, and then refuses another API server", func(ctx SpecContext) {
		editConsumer(ctx, func(c *gitpeerv1alpha1.ConsumerSpec) { c.TrustedCAs, c.TrustOnFirstUse = nil, true })
		Eventually(func(g Gomega) bool {
			_, _, pin := holds(ctx, g, tProviderID)
			return pin
		}).WithTimeout(time.Minute).Should(BeTrue())
		expectEvent(ctx, consumer, gitpeerv1alpha1.TrustedOnFirstUseReason, "provider "+tProviderID+" trusted on first use", vocabulary.PinnedProviderAnnotation)
		Eventually(func(g Gomega) string { return peeringMessage(ctx, g, tProviderID) }).WithTimeout(time.Minute).
			Should(ContainSubstring("trusted on first use (spec.consumer.trustOnFirstUse)"))

		provider.stopAgent()
		kubeconfig := kubeconfigOf(ctx, consumer, tProviderID)
		var id authv1beta1.Identity
		Expect(yaml.Unmarshal([]byte(show("main", dir+"identity.yaml")), &id)).To(Succeed())
		id.Spec.AuthParams.APIServer = "https://attacker.invalid:6443"
		path := dir + "identity.yaml"
		commit("Point "+tConsumerID+" at another API server", map[string][]byte{
			path: must(yaml.Marshal(&id)), protocol.TermsPath(tProviderID): termsFor(id.Spec.AuthParams.APIServer)})

		expectEvent(ctx, consumer, gitpeerv1alpha1.RejectedReason, path+" rejected", "is not the API server and CA pinned for provider "+tProviderID,
			vocabulary.PinnedProviderAnnotation)
		expectPhase(ctx, tProviderID, gitpeerv1alpha1.PhaseFailed)
		Consistently(func() []byte { return kubeconfigOf(ctx, consumer, tProviderID) }).WithTimeout(5 * time.Second).Should(Equal(kubeconfig))
		provider.startAgent()
		expectPhase(ctx, tProviderID, gitpeerv1alpha1.PhaseReady)
	})

	It("refuses a stranger's identity.yaml beside a Tenant of another key", func(ctx SpecContext) {
		mergeRequest(repo, "gitpeer/"+ghostID+"/"+tConsumerID, ghostDir)
		stranger := newClusterKey()
		path := ghostDir + "identity.yaml"
		commit("A stranger's peering with "+tConsumerID, map[string][]byte{
			ghostDir + "tenant.yaml": tenantDoc(signedTenant(stranger, tConsumerID, crypto.GenerateNonce())),
			path:                     identityFor(ghostID, tenantCSR("main"), "https://attacker.invalid:6443"),
		})
		expectEvent(ctx, consumer, gitpeerv1alpha1.RejectedReason, path+" rejected", "not this cluster's key")
		expectPhase(ctx, ghostID, gitpeerv1alpha1.PhaseFailed)
		expectNothingHeld(ctx, ghostID)
		Expect(apierrors.IsNotFound(consumer.k8s.Get(ctx, client.ObjectKey{Name: ghostNS}, &corev1.Namespace{}))).To(BeTrue())
	})

	It("forgets a provider removed from spec.consumer.providers: Identity, kubeconfig, signed nonce and pin", func(ctx SpecContext) {
		signedNonce := client.ObjectKey{Namespace: consumerNS, Name: authv1beta1.SignedNonceSecretName}
		Expect(consumer.k8s.Get(ctx, signedNonce, &corev1.Secret{})).To(Succeed())
		identity, kubeconfig, pin := holds(ctx, Default, tProviderID)
		Expect([]bool{identity, kubeconfig, pin}).To(Equal([]bool{true, true, true}))

		editConsumer(ctx, func(c *gitpeerv1alpha1.ConsumerSpec) { c.Providers = []authv1beta1.ClusterID{ghostID} })
		Eventually(func(g Gomega) {
			identity, kubeconfig, pin := holds(ctx, g, tProviderID)
			g.Expect([]bool{identity, kubeconfig, pin}).To(Equal([]bool{false, false, false}))
			g.Expect(apierrors.IsNotFound(consumer.k8s.Get(ctx, signedNonce, &corev1.Secret{}))).To(BeTrue())
		}).WithTimeout(time.Minute).Should(Succeed())
	})
})

// attackerAPIServer is an attacker's API server: TLS with a serving
// certificate of ca, it takes any client certificate and answers every
// SelfSubjectReview as the certificate's CN, as a real API server of ca
// would. It counts the reviews it answered.
func attackerAPIServer(ca *repofixture.CA) (string, *atomic.Int32) {
	GinkgoHelper()
	key := must(crypto.GenerateKey(crypto.Ed25519))
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "attacker"},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der := must(x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.Key))
	reviews := &atomic.Int32{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/selfsubjectreviews") || len(r.TLS.PeerCertificates) == 0 {
			http.NotFound(w, r)
			return
		}
		reviews.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&authenticationv1.SelfSubjectReview{
			TypeMeta: metav1.TypeMeta{APIVersion: "authentication.k8s.io/v1", Kind: "SelfSubjectReview"},
			Status:   authenticationv1.SelfSubjectReviewStatus{UserInfo: authenticationv1.UserInfo{Username: r.TLS.PeerCertificates[0].Subject.CommonName}},
		})
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}, ClientAuth: tls.RequireAnyClientCert}
	srv.StartTLS()
	DeferCleanup(srv.Close)
	return srv.URL, reviews
}
