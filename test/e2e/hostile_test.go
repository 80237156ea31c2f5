package e2e

import (
	"context"
	gocrypto "crypto"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	certificatesv1 "k8s.io/api/certificates/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1/documents"
	"github.com/gitpeer/gitpeer/crypto"
)

const (
	hProviderID = "provider-h"
	hConsumerID = "consumer-h"
	victimID    = "victim-1"
	// csrConsumerLabel is the label the provider puts on the CSRs it creates.
	csrConsumerLabel = "gitpeer.io/consumer"
)

// The test plays an attacker with write access to main: it commits hostile
// files straight to the branch, next to a legitimate peering that must still
// complete, and checks that the provider issues nothing and says why.
var _ = Describe("Hostile input", Ordered, func() {
	var provider, consumer *cluster
	victimKey := newClusterKey()
	var victimTenant []byte // the victim's first, legitimately issued tenant.yaml
	var victimIdentity string
	keys := map[string]gocrypto.Signer{}

	BeforeAll(func() {
		provider, consumer = startPeers(hProviderID, hConsumerID, true)
	})

	It("completes a legitimate peering and issues a test-driven consumer", func(ctx SpecContext) {
		// The test itself plays a well-behaved consumer, victim-1.
		commit("Request victim-1", map[string][]byte{hDir(victimID) + "request.yaml": requestDoc(victimID, victimKey)})
		nonce := waitNonce(victimID, "")
		victimTenant = tenantDoc(signedTenant(victimKey, victimID, nonce))
		commit("Tenant victim-1", map[string][]byte{hDir(victimID) + "tenant.yaml": victimTenant})
		Eventually(func() string { return show("main", hDir(victimID)+"identity.yaml") }).WithTimeout(time.Minute).ShouldNot(BeEmpty())
		victimIdentity = show("main", hDir(victimID)+"identity.yaml")
		Expect(csrCount(ctx, provider, victimID)).To(Equal(1))

		Eventually(func() string { return show("main", hDir(hConsumerID)+"identity.yaml") }).WithTimeout(time.Minute).ShouldNot(BeEmpty())
		Eventually(func(g Gomega) {
			g.Expect(peeringPhases(ctx, consumer)).To(HaveKeyWithValue("Consumer/"+hProviderID, gitpeerv1alpha1.PhaseReady))
		}).WithTimeout(time.Minute).Should(Succeed())
	})

	It("never lets a bad tenant.yaml revoke what was issued", func(ctx SpecContext) {
		p := hDir(victimID) + "tenant.yaml"
		commit("Break victim-1", map[string][]byte{p: []byte("apiVersion: authentication.liqo.io/v1beta1\nkind: Tenant\nspec: [\n")})
		expectReported(ctx, provider, p, "malformed YAML")
		Consistently(func(g Gomega) {
			g.Expect(provider.k8s.Get(ctx, client.ObjectKey{Namespace: authv1beta1.TenantNamespaceName(victimID), Name: victimID}, &authv1beta1.Tenant{})).To(Succeed())
			g.Expect(show("main", hDir(victimID)+"identity.yaml")).To(Equal(victimIdentity))
		}).WithTimeout(5 * time.Second).Should(Succeed())
		commit("Restore victim-1", map[string][]byte{p: victimTenant})
	})

	It("refuses a second Tenant with a new key for an already pinned consumer", func(ctx SpecContext) {
		// The nonce rotated at issuance: the attacker signs the current one with its own key,
		// and replaces request.yaml too, so that only the pin stands in the way.
		nonce := waitNonce(victimID, "")
		p := hDir(victimID) + "tenant.yaml"
		attackerKey := newClusterKey()
		commit("Replace victim-1's key", map[string][]byte{p: tenantDoc(signedTenant(attackerKey, victimID, nonce)), hDir(victimID) + "request.yaml": requestDoc(victimID, attackerKey)})
		expectReported(ctx, provider, p, "rejected, nothing issued", "is not the key pinned for victim-1")
		Consistently(func(g Gomega) {
			g.Expect(csrCount(ctx, provider, victimID)).To(Equal(1))
			g.Expect(show("main", hDir(victimID)+"identity.yaml")).To(Equal(victimIdentity))
			t := &authv1beta1.Tenant{}
			g.Expect(provider.k8s.Get(ctx, client.ObjectKey{Namespace: authv1beta1.TenantNamespaceName(victimID), Name: victimID}, t)).To(Succeed())
			g.Expect(string(t.Spec.PublicKey)).To(Equal(string(pubPEM(victimKey))))
		}).WithTimeout(5 * time.Second).Should(Succeed())
		commit("Restore victim-1's request", map[string][]byte{hDir(victimID) + "request.yaml": requestDoc(victimID, victimKey)})
	})

	It("refuses a replayed Tenant after the nonce rotated", func(ctx SpecContext) {
		old := waitNonce(victimID, "")
		w := clone()
		gitCLI(w, "rm", "-q", hDir(victimID)+"tenant.yaml")
		gitCLI(w, "commit", "-q", "-m", "Revoke victim-1")
		pushMain(w)
		Eventually(func() string { return show("main", hDir(victimID)+"identity.yaml") }).WithTimeout(time.Minute).Should(BeEmpty())
		// Revocation uses the request up; the victim requests again and gets a fresh nonce.
		Expect(show("main", hDir(victimID)+"request.yaml")).To(BeEmpty())
		commit("Request victim-1 again", map[string][]byte{hDir(victimID) + "request.yaml": requestDoc(victimID, victimKey)})
		waitNonce(victimID, old)
		Expect(csrCount(ctx, provider, victimID)).To(Equal(0))

		p := hDir(victimID) + "tenant.yaml"
		commit("Replay victim-1's old Tenant", map[string][]byte{p: victimTenant})
		expectReported(ctx, provider, p, "rejected, nothing issued", "tenant signature")
		expectNothingIssued(ctx, provider, victimID)
	})

	It("rejects every hostile tenant.yaml with its path and reason, issuing nothing", func(ctx SpecContext) {
		ids := []string{"m-otherkey", "m-masters", "m-elsewhere", "m-malformed", "m-bomb", "m-multidoc", "m-huge", "m-symlink"}
		requests := map[string][]byte{}
		for _, id := range ids {
			keys[id] = newClusterKey()
			requests[hDir(id)+"request.yaml"] = requestDoc(id, keys[id])
		}
		commit("Request hostile peerings", requests)
		nonces := map[string]string{}
		for _, id := range ids {
			nonces[id] = waitNonce(id, "")
		}

		otherKey := newClusterKey()
		signedByOther := signedTenant(keys["m-otherkey"], "m-otherkey", nonces["m-otherkey"])
		signedByOther.Spec.Signature = must(crypto.SignNonce(otherKey, nonces["m-otherkey"]))

		masters := signedTenant(keys["m-masters"], "m-masters", nonces["m-masters"])
		masters.Spec.CSR = csrWith(keys["m-masters"], "m-masters", "system:masters")

		multi := tenantDoc(signedTenant(keys["m-multidoc"], "m-multidoc", nonces["m-multidoc"]))
		multi = append(append(multi, "---\n"...), multi...)

		bomb := "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n"
		prev := "a"
		for _, l := range []string{"b", "c", "d", "e", "f", "g", "h", "i"} {
			bomb += l + ": &" + l + " [" + strings.TrimSuffix(strings.Repeat("*"+prev+",", 9), ",") + "]\n"
			prev = l
		}
		huge := []byte("apiVersion: authentication.liqo.io/v1beta1\nkind: Tenant\n#" + strings.Repeat("x", 10<<20) + "\n")

		w := clone()
		for p, data := range map[string][]byte{
			hDir("m-otherkey") + "tenant.yaml":  tenantDoc(signedByOther),
			hDir("m-masters") + "tenant.yaml":   tenantDoc(masters),
			hDir("m-elsewhere") + "tenant.yaml": []byte(show("main", hDir(hConsumerID)+"tenant.yaml")),
			hDir("m-malformed") + "tenant.yaml": []byte("apiVersion: authentication.liqo.io/v1beta1\nkind: Tenant\nspec: {publicKey: [\n"),
			hDir("m-bomb") + "tenant.yaml":      []byte(bomb),
			hDir("m-multidoc") + "tenant.yaml":  multi,
			hDir("m-huge") + "tenant.yaml":      huge,
		} {
			Expect(os.WriteFile(filepath.Join(w, p), data, 0o644)).To(Succeed())
		}
		Expect(os.Symlink("../"+hConsumerID+"/tenant.yaml", filepath.Join(w, hDir("m-symlink")+"tenant.yaml"))).To(Succeed())
		gitCLI(w, "add", "-A")
		gitCLI(w, "commit", "-q", "-m", "Hostile tenants")
		pushMain(w)

		for id, wants := range map[string][]string{
			"m-otherkey":  {"rejected, nothing issued", "tenant signature"},
			"m-masters":   {"rejected, nothing issued", "CSR organization [system:masters] is not [liqo.io]"},
			"m-elsewhere": {`Tenant "consumer-h" for cluster "consumer-h" sits in the directory of consumer "m-elsewhere"`},
			"m-malformed": {"malformed YAML"},
			"m-bomb":      {"anchors and aliases are not allowed"},
			"m-multidoc":  {"more than one YAML document"},
			"m-huge":      {"file exceeds size limit"},
			"m-symlink":   {"not a regular file", "symlink"},
		} {
			By("checking " + id)
			expectReported(ctx, provider, hDir(id)+"tenant.yaml", wants...)
		}
		for _, id := range ids {
			expectNothingIssued(ctx, provider, id)
		}

		// Bad input never blocks the others: the legitimate peering stays Issued.
		Expect(peeringPhases(ctx, provider)).To(HaveKeyWithValue("Provider/"+hConsumerID, gitpeerv1alpha1.PhaseIssued))
		Expect(show("main", hDir(hConsumerID)+"identity.yaml")).NotTo(BeEmpty())
		Expect(peeringPhases(ctx, consumer)).To(HaveKeyWithValue("Consumer/"+hProviderID, gitpeerv1alpha1.PhaseReady))
	})

	It("stalls on a force-pushed branch until the rewrite is acknowledged", func(ctx SpecContext) {
		w := clone()
		gitCLI(w, "commit", "-q", "--amend", "-m", "Rewritten by an attacker")
		gitCLI(w, "push", "-q", "--force", "origin", "HEAD:main")

		Eventually(func(g Gomega) {
			obj := peeringRepository(ctx, g, provider)
			g.Expect(conditionOf(obj, meta.StalledCondition)).To(And(
				HaveField("Status", metav1.ConditionTrue), HaveField("Reason", gitpeerv1alpha1.HistoryRewrittenReason)))
			g.Expect(conditionOf(obj, meta.ReadyCondition)).To(HaveField("Status", metav1.ConditionFalse))
		}).WithTimeout(time.Minute).Should(Succeed())
		expectEvent(ctx, provider, gitpeerv1alpha1.HistoryRewrittenReason, "was rewritten", gitpeerv1alpha1.AcknowledgeRewriteAnnotation)

		// Stalled, the provider does not act on new requests.
		late := newClusterKey()
		commit("Request late-1", map[string][]byte{hDir("late-1") + "request.yaml": requestDoc("late-1", late)})
		Consistently(func(g Gomega) {
			g.Expect(show("main", hDir("late-1")+"nonce.yaml")).To(BeEmpty())
			g.Expect(conditionOf(peeringRepository(ctx, g, provider), meta.StalledCondition)).To(HaveField("Status", metav1.ConditionTrue))
		}).WithTimeout(5 * time.Second).Should(Succeed())

		// An acknowledgement of another commit does not count.
		head := strings.TrimSpace(gitOut("--git-dir", repo.Dir, "rev-parse", "main"))
		annotate(ctx, provider, strings.TrimSpace(gitOut("--git-dir", repo.Dir, "rev-parse", "main~1")))
		Consistently(func() string { return show("main", hDir("late-1")+"nonce.yaml") }).WithTimeout(4 * time.Second).Should(BeEmpty())

		annotate(ctx, provider, head)
		Eventually(func() string { return show("main", hDir("late-1")+"nonce.yaml") }).WithTimeout(time.Minute).ShouldNot(BeEmpty())
		Eventually(func(g Gomega) {
			g.Expect(conditionOf(peeringRepository(ctx, g, provider), meta.StalledCondition)).To(BeNil())
		}).WithTimeout(30 * time.Second).Should(Succeed())
	})
})

func hDir(consumerID string) string { return hProviderID + "/" + consumerID + "/" }

func must[T any](v T, err error) T {
	GinkgoHelper()
	Expect(err).NotTo(HaveOccurred())
	return v
}

func newClusterKey() gocrypto.Signer { return must(crypto.GenerateKey(crypto.Ed25519)) }

func pubPEM(k gocrypto.Signer) []byte { return must(crypto.MarshalPublicKeyPEM(k.Public())) }

func requestDoc(id string, k gocrypto.Signer) []byte { return requestFor(hProviderID, id, k) }

// requestFor is a well-formed request.yaml of consumer id, with key k, for provider.
func requestFor(provider, id string, k gocrypto.Signer) []byte {
	return must(yaml.Marshal(&documents.PeeringRequest{
		TypeMeta: metav1.TypeMeta{APIVersion: documents.APIVersion, Kind: documents.PeeringRequestKind},
		Spec: documents.PeeringRequestSpec{
			ProviderClusterID: authv1beta1.ClusterID(provider), ConsumerClusterID: authv1beta1.ClusterID(id), PublicKey: pubPEM(k),
		},
	}))
}

// signedTenant builds a Tenant as a consumer does: its key, its signature of
// the nonce, its CSR.
func signedTenant(k gocrypto.Signer, id, nonce string) *authv1beta1.Tenant {
	return &authv1beta1.Tenant{
		TypeMeta:   metav1.TypeMeta{APIVersion: authv1beta1.GroupVersion.String(), Kind: authv1beta1.TenantKind},
		ObjectMeta: metav1.ObjectMeta{Name: id},
		Spec: authv1beta1.TenantSpec{
			ClusterID: authv1beta1.ClusterID(id), PublicKey: pubPEM(k),
			CSR: must(crypto.BuildCSR(k, id)), Signature: must(crypto.SignNonce(k, nonce)),
		},
	}
}

func tenantDoc(t *authv1beta1.Tenant) []byte { return must(yaml.Marshal(t)) }

// csrWith builds a CSR with any subject, as an attacker would.
func csrWith(k gocrypto.Signer, cn string, orgs ...string) []byte {
	der := must(x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: cn, Organization: orgs},
	}, k))
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

// waitNonce waits for provider-h's nonce.yaml for id to hold a nonce other
// than not, and returns it.
func waitNonce(id, not string) string {
	GinkgoHelper()
	return waitNonceAt(hDir(id), not)
}

func clone() string {
	GinkgoHelper()
	w := filepath.Join(GinkgoT().TempDir(), "w")
	gitCLI(filepath.Dir(w), "clone", "-q", repo.Dir, w)
	return w
}

func gitOut(args ...string) string {
	GinkgoHelper()
	out, err := exec.Command("git", args...).Output()
	Expect(err).NotTo(HaveOccurred())
	return string(out)
}

// pushMain pushes w's HEAD to main, rebasing over the agents' concurrent commits.
func pushMain(w string) {
	GinkgoHelper()
	for range 10 {
		cmd := exec.Command("git", "push", "-q", "origin", "HEAD:main")
		cmd.Dir = w
		if cmd.Run() == nil {
			return
		}
		gitCLI(w, "pull", "-q", "--rebase", "origin", "main")
	}
	Fail("cannot push to main")
}

// commit writes files to main in one commit, as an attacker with write access.
func commit(msg string, files map[string][]byte) {
	GinkgoHelper()
	w := clone()
	for p, data := range files {
		Expect(os.MkdirAll(filepath.Dir(filepath.Join(w, p)), 0o755)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(w, p), data, 0o644)).To(Succeed())
	}
	gitCLI(w, "add", "-A")
	gitCLI(w, "commit", "-q", "-m", msg)
	pushMain(w)
}

func peeringRepository(ctx context.Context, g Gomega, c *cluster) *gitpeerv1alpha1.PeeringRepository {
	obj := &gitpeerv1alpha1.PeeringRepository{}
	g.Expect(c.k8s.Get(ctx, client.ObjectKey{Namespace: agentNamespace, Name: "peering"}, obj)).To(Succeed())
	return obj
}

func conditionOf(obj *gitpeerv1alpha1.PeeringRepository, t string) *metav1.Condition {
	for i := range obj.Status.Conditions {
		if obj.Status.Conditions[i].Type == t {
			return &obj.Status.Conditions[i]
		}
	}
	return nil
}

// peeringPhases maps "<role>/<peer>" to the phase in status.peerings.
func peeringPhases(ctx context.Context, c *cluster) map[string]gitpeerv1alpha1.PeeringPhase {
	GinkgoHelper()
	obj := peeringRepository(ctx, Default, c)
	out := map[string]gitpeerv1alpha1.PeeringPhase{}
	for _, p := range obj.Status.Peerings {
		out[string(p.Role)+"/"+string(p.PeerID)] = p.Phase
	}
	return out
}

// peeringMessages returns each peering's phase and message, for failure reports.
func peeringMessages(c *cluster) map[string]string {
	GinkgoHelper()
	obj := peeringRepository(context.Background(), Default, c)
	out := map[string]string{}
	for _, p := range obj.Status.Peerings {
		out[string(p.Role)+"/"+string(p.PeerID)] = string(p.Phase) + ": " + p.Message
	}
	return out
}

func annotate(ctx context.Context, c *cluster, head string) {
	GinkgoHelper()
	obj := peeringRepository(ctx, Default, c)
	patch := client.MergeFrom(obj.DeepCopy())
	metav1.SetMetaDataAnnotation(&obj.ObjectMeta, gitpeerv1alpha1.AcknowledgeRewriteAnnotation, head)
	Expect(c.k8s.Patch(ctx, obj, patch)).To(Succeed())
}

func csrCount(ctx context.Context, c *cluster, consumerID string) int {
	GinkgoHelper()
	var csrs certificatesv1.CertificateSigningRequestList
	Expect(c.k8s.List(ctx, &csrs, client.MatchingLabels{csrConsumerLabel: consumerID})).To(Succeed())
	return len(csrs.Items)
}

// expectEvent waits for a Warning event on the PeeringRepository with reason
// and a note containing every string in wants.
func expectEvent(ctx context.Context, c *cluster, reason string, wants ...string) {
	GinkgoHelper()
	Eventually(func(g Gomega) []string {
		var events eventsv1.EventList
		g.Expect(c.k8s.List(ctx, &events, client.InNamespace(agentNamespace))).To(Succeed())
		var notes []string
	next:
		for _, e := range events.Items {
			if e.Type != "Warning" || e.Reason != reason || e.Regarding.Kind != gitpeerv1alpha1.PeeringRepositoryKind {
				continue
			}
			for _, w := range wants {
				if !strings.Contains(e.Note, w) {
					continue next
				}
			}
			notes = append(notes, e.Note)
		}
		return notes
	}).WithTimeout(time.Minute).ShouldNot(BeEmpty(), "no Warning %s event containing %q", reason, wants)
}

// expectReported waits until the provider reports path as invalid or
// rejected, with every string in wants, in a Warning event.
func expectReported(ctx context.Context, c *cluster, path string, wants ...string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		var events eventsv1.EventList
		g.Expect(c.k8s.List(ctx, &events, client.InNamespace(agentNamespace))).To(Succeed())
		var found []string
		for _, e := range events.Items {
			if e.Type == "Warning" && strings.Contains(e.Note, path) {
				found = append(found, e.Reason+": "+e.Note)
			}
		}
		g.Expect(found).To(ContainElement(matchAll(wants)), "Warning events naming %s; status: %+v", path, peeringRepository(ctx, g, c).Status)
	}).WithTimeout(time.Minute).Should(Succeed())
}

func matchAll(wants []string) OmegaMatcher {
	var ms []OmegaMatcher
	for _, w := range wants {
		ms = append(ms, ContainSubstring(w))
	}
	return And(ms...)
}

// expectNothingIssued checks, for a few seconds, that the provider holds no
// Tenant and no CSR for id and that no identity.yaml reached main.
func expectNothingIssued(ctx context.Context, c *cluster, id string) {
	GinkgoHelper()
	expectNothingIssuedIn(ctx, c, hDir(id), id)
}

// expectNothingIssuedIn is expectNothingIssued for consumer id in directory dir.
func expectNothingIssuedIn(ctx context.Context, c *cluster, dir, id string) {
	GinkgoHelper()
	Consistently(func(g Gomega) {
		err := c.k8s.Get(ctx, client.ObjectKey{Namespace: authv1beta1.TenantNamespaceName(authv1beta1.ClusterID(id)), Name: id}, &authv1beta1.Tenant{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Tenant %s: %v", id, err)
		var csrs certificatesv1.CertificateSigningRequestList
		g.Expect(c.k8s.List(ctx, &csrs, client.MatchingLabels{csrConsumerLabel: id})).To(Succeed())
		g.Expect(csrs.Items).To(BeEmpty())
		g.Expect(show("main", dir+"identity.yaml")).To(BeEmpty())
	}).WithTimeout(3 * time.Second).Should(Succeed())
}
