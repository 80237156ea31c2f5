package e2e

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/test/gitserver"
	"github.com/gitpeer/gitpeer/test/sandbox"
)

const (
	vProviderID = "provider-v"
	vConsumerID = "consumer-v"
	intruderID  = "intruder-v"
	vDir        = vProviderID + "/" + vConsumerID + "/"
	vReviewRef  = "gitpeer/" + vProviderID + "/" + vConsumerID
)

// Both agents verify commit signatures (spec.verify, mode Relevant) and sign
// their own commits; a reviewer merges with a signed commit. The repository is
// the spec's own, so that its unsigned commits never reach the other specs.
var _ = Describe("Commit signature verification", Ordered, func() {
	var provider, consumer *cluster
	var vrepo gitserver.Repo
	var providerKey, consumerKey, reviewerKey []byte
	var reviewerKeyFile string
	kubeconfigKey := client.ObjectKey{Namespace: authv1beta1.TenantNamespaceName(vProviderID), Name: authv1beta1.KubeconfigSecretName(authv1beta1.ControlPlaneIdentityName(vProviderID))}
	tenantKey := client.ObjectKey{Namespace: authv1beta1.TenantNamespaceName(vConsumerID), Name: vConsumerID}

	// trusted is the trusted keys Secret: every key, or all but the consumer's.
	trusted := func(withConsumer bool) map[string][]byte {
		data := map[string][]byte{
			"provider.sshpub": authorizedKeyOf(providerKey),
			"reviewer.sshpub": authorizedKeyOf(reviewerKey),
		}
		if withConsumer {
			data["consumer.sshpub"] = authorizedKeyOf(consumerKey)
		}
		return data
	}
	setup := func(c *cluster, signingKey []byte, trustedKeys map[string][]byte, mutate func(*gitpeerv1alpha1.PeeringRepositorySpec)) {
		ctx := context.Background()
		Expect(c.k8s.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: agentNamespace, Name: "signing"},
			Data:       map[string][]byte{"identity": signingKey},
		})).To(Succeed())
		Expect(c.k8s.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: agentNamespace, Name: "trusted"},
			Data:       trustedKeys,
		})).To(Succeed())
		c.apply(func(s *gitpeerv1alpha1.PeeringRepositorySpec) {
			s.URL = vrepo.SSHURL
			s.Verify = &gitpeerv1alpha1.VerifySpec{SecretRef: meta.LocalObjectReference{Name: "trusted"}}
			s.Commit = &gitpeerv1alpha1.CommitSpec{SigningKey: &gitpeerv1alpha1.SigningKey{SecretRef: meta.LocalObjectReference{Name: "signing"}}}
			mutate(s)
		})
	}

	BeforeAll(func() {
		providerKey, consumerKey, reviewerKey = newSSHKey(), newSSHKey(), newSSHKey()
		reviewerKeyFile = filepath.Join(GinkgoT().TempDir(), "reviewer")
		Expect(os.WriteFile(reviewerKeyFile, reviewerKey, 0o600)).To(Succeed())
		var err error
		vrepo, err = gitSrv.NewRepo("verified")
		Expect(err).NotTo(HaveOccurred())
		// An unsigned initial commit outside every agent's folder: Relevant mode ignores it.
		w := cloneOf(vrepo)
		gitCLI(w, "commit", "-q", "--allow-empty", "-m", "Peering repository")
		gitCLI(w, "push", "-q", "origin", "HEAD:main")

		provider, consumer = newCluster(vProviderID), newCluster(vConsumerID)
		setup(provider, providerKey, trusted(true), func(s *gitpeerv1alpha1.PeeringRepositorySpec) {
			s.Provider = &gitpeerv1alpha1.ProviderSpec{Enabled: true, APIServer: provider.cp.URL}
		})
		// The consumer does not trust its own key yet.
		setup(consumer, consumerKey, trusted(false), func(s *gitpeerv1alpha1.PeeringRepositorySpec) {
			s.Consumer = &gitpeerv1alpha1.ConsumerSpec{Providers: []authv1beta1.ClusterID{vProviderID}, TrustedCAs: anchors(provider)}
		})
		provider.startAgent()
		consumer.startAgent()
	})

	It("verifies the agent's own commits like anyone else's", func(ctx SpecContext) {
		Eventually(func() string { return showIn(vrepo, vReviewRef, vDir+"request.yaml") }).WithTimeout(time.Minute).ShouldNot(BeEmpty())
		signedMerge(vrepo, reviewerKeyFile, "origin/"+vReviewRef, "Merge the request of "+vConsumerID)
		request := strings.TrimSpace(gitOut("--git-dir", vrepo.Dir, "log", "-1", "--format=%H", "main", "--", vDir+"request.yaml"))
		expectUnverified(ctx, consumer, request, "gitpeer <gitpeer@localhost>", "SSH signature by untrusted key")

		// Trusting the consumer's key lets it go on.
		secret := &corev1.Secret{}
		Expect(consumer.k8s.Get(ctx, client.ObjectKey{Namespace: agentNamespace, Name: "trusted"}, secret)).To(Succeed())
		secret.Data = trusted(true)
		Expect(consumer.k8s.Update(ctx, secret)).To(Succeed())
		Eventually(func() string { return showIn(vrepo, vReviewRef, vDir+"tenant.yaml") }).WithTimeout(time.Minute).ShouldNot(BeEmpty())
		for _, c := range []*cluster{provider, consumer} {
			Eventually(func(g Gomega) {
				g.Expect(conditionOf(peeringRepository(ctx, g, c), "SourceVerified")).To(HaveField("Status", metav1.ConditionTrue))
			}).WithTimeout(time.Minute).Should(Succeed())
		}
		// git itself finds a good signature on every agent commit, on main and on the review branch,
		// and on the reviewer's merge of the request.
		signers := filepath.Join(GinkgoT().TempDir(), "allowed_signers")
		var allowed []byte
		for _, k := range [][]byte{providerKey, consumerKey, reviewerKey} {
			allowed = append(append(allowed, "* "...), authorizedKeyOf(k)...)
		}
		Expect(os.WriteFile(signers, allowed, 0o600)).To(Succeed())
		for _, ref := range []string{"main", vReviewRef} {
			log := gitOut("--git-dir", vrepo.Dir, "-c", "gpg.ssh.allowedSignersFile="+signers, "log", "--format=%G?|%an|%s", ref)
			for _, line := range strings.Split(strings.TrimSpace(log), "\n") {
				switch {
				case strings.HasSuffix(line, "|Peering repository"):
				case strings.Contains(line, "|"+sandbox.ReviewerName+"|"):
					Expect(line).To(HavePrefix("G|"), "on %s", ref)
				default:
					Expect(line).To(HavePrefix("G|gitpeer|"), "on %s", ref)
				}
			}
		}
	})

	It("completes the handshake once a reviewer merges with a signed commit", func(ctx SpecContext) {
		Expect(showIn(vrepo, "main", vDir+"identity.yaml")).To(BeEmpty())
		signedMerge(vrepo, reviewerKeyFile, "origin/"+vReviewRef, "Merge pull request #1 from "+vReviewRef)

		Eventually(func() string { return showIn(vrepo, "main", vDir+"identity.yaml") }).WithTimeout(time.Minute).ShouldNot(BeEmpty())
		Eventually(func(g Gomega) {
			g.Expect(consumer.k8s.Get(ctx, kubeconfigKey, &corev1.Secret{})).To(Succeed())
			g.Expect(peeringPhases(ctx, consumer)).To(HaveKeyWithValue("Consumer/"+vProviderID, gitpeerv1alpha1.PhaseReady))
		}).WithTimeout(time.Minute).Should(Succeed())
		Expect(provider.k8s.Get(ctx, tenantKey, &authv1beta1.Tenant{})).To(Succeed())
	})

	It("refuses a merge that brings back the folder before the approval, even signed by a trusted key", func(ctx SpecContext) {
		// The reviewer's approval is the merge that brought tenant.yaml in;
		// its first parent is the folder before it. A merge of that commit
		// (first parent) with the head (second parent), with its tree,
		// fast-forwards the branch and would revoke the consumer.
		approval := strings.TrimSpace(gitOut("--git-dir", vrepo.Dir, "log", "--first-parent", "-1", "--format=%H", "main", "--", vDir+"tenant.yaml"))
		before := approval + "^1"
		w := cloneOf(vrepo)
		var head, revert string
		pushed := false
		for i := 0; i < 10 && !pushed; i++ { // again if an agent pushed first
			// Both agents must have processed the head: an agent's own last push is
			// processed on its next poll, and a merge that came before would hold it
			// one commit behind.
			Eventually(func(g Gomega) {
				gitCLI(w, "fetch", "-q", "origin")
				head = strings.TrimSpace(gitCLI(w, "rev-parse", "origin/main"))
				for _, c := range []*cluster{provider, consumer} {
					g.Expect(peeringRepository(ctx, g, c).Status.LastProcessedCommit).To(Equal(head), "%s", c.id)
				}
			}).WithTimeout(time.Minute).Should(Succeed())
			revert = strings.TrimSpace(gitCLI(w, "-c", "gpg.format=ssh", "-c", "user.signingkey="+reviewerKeyFile,
				"commit-tree", "-S", "-p", before, "-p", head, "-m", "Merge branch 'main'", before+"^{tree}"))
			cmd := exec.Command("git", "push", "-q", "origin", revert+":refs/heads/main")
			cmd.Dir = w
			pushed = cmd.Run() == nil
		}
		Expect(pushed).To(BeTrue(), "cannot push the merge to main")
		Expect(showIn(vrepo, "main", vDir+"tenant.yaml")).To(BeEmpty())

		for _, c := range []*cluster{provider, consumer} {
			Eventually(func(g Gomega) {
				obj := peeringRepository(ctx, g, c)
				g.Expect(conditionOf(obj, meta.StalledCondition)).To(And(
					HaveField("Status", metav1.ConditionTrue), HaveField("Reason", gitpeerv1alpha1.MergeRevertsReason)))
				g.Expect(obj.Status.LastProcessedCommit).To(Equal(head), "%s", c.id)
			}).WithTimeout(time.Minute).Should(Succeed())
			expectEvent(ctx, c, gitpeerv1alpha1.MergeRevertsReason, revert, gitpeerv1alpha1.AcknowledgeRewriteAnnotation+"="+revert)
		}
		Consistently(func(g Gomega) {
			g.Expect(provider.k8s.Get(ctx, tenantKey, &authv1beta1.Tenant{})).To(Succeed())
			g.Expect(consumer.k8s.Get(ctx, kubeconfigKey, &corev1.Secret{})).To(Succeed())
			g.Expect(peeringRepository(ctx, g, provider).Status.LastProcessedCommit).To(Equal(head))
		}).WithTimeout(5 * time.Second).Should(Succeed())

		// Taking the merge away is enough: the agents never moved past the head before it.
		gitCLI(w, "push", "-q", "--force", "origin", head+":refs/heads/main")
		for _, c := range []*cluster{provider, consumer} {
			Eventually(func(g Gomega) {
				g.Expect(conditionOf(peeringRepository(ctx, g, c), meta.ReadyCondition)).To(HaveField("Status", metav1.ConditionTrue))
			}).WithTimeout(time.Minute).Should(Succeed())
		}
	})

	It("refuses to act on an unsigned commit, issuing and revoking nothing", func(ctx SpecContext) {
		identity := showIn(vrepo, "main", vDir+"identity.yaml")
		// An attacker with write access requests a peering for another
		// consumer and deletes consumer-v's tenant.yaml, in one unsigned commit.
		w := cloneOf(vrepo)
		Expect(os.MkdirAll(filepath.Join(w, vProviderID, intruderID), 0o755)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(w, vProviderID, intruderID, "request.yaml"), requestFor(vProviderID, intruderID, newClusterKey()), 0o644)).To(Succeed())
		gitCLI(w, "rm", "-q", vDir+"tenant.yaml")
		gitCLI(w, "add", "-A")
		gitCLI(w, "commit", "-q", "-m", "Request intruder-v, revoke consumer-v")
		pushMain(w)
		attack := strings.TrimSpace(gitCLI(w, "rev-parse", "HEAD"))

		// Both agents act on provider-v/consumer-v/: both refuse.
		last := map[*cluster]string{}
		for _, c := range []*cluster{provider, consumer} {
			expectUnverified(ctx, c, attack, "Rita Reviewer <rita@example.com>", "unsigned")
			last[c] = peeringRepository(ctx, Default, c).Status.LastProcessedCommit
		}
		Consistently(func(g Gomega) {
			for _, c := range []*cluster{provider, consumer} {
				obj := peeringRepository(ctx, g, c)
				g.Expect(obj.Status.LastProcessedCommit).To(Equal(last[c]), "%s advanced", c.id)
				g.Expect(conditionOf(obj, meta.ReadyCondition)).To(HaveField("Reason", gitpeerv1alpha1.CommitVerificationFailedReason))
			}
			// Nothing issued for the intruder...
			g.Expect(showIn(vrepo, "main", vProviderID+"/"+intruderID+"/nonce.yaml")).To(BeEmpty())
			err := provider.k8s.Get(ctx, client.ObjectKey{Name: authv1beta1.TenantNamespaceName(intruderID)}, &corev1.Namespace{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "tenant namespace of %s: %v", intruderID, err)
			// ...and nothing revoked.
			g.Expect(provider.k8s.Get(ctx, tenantKey, &authv1beta1.Tenant{})).To(Succeed())
			g.Expect(showIn(vrepo, "main", vDir+"identity.yaml")).To(Equal(identity))
			g.Expect(consumer.k8s.Get(ctx, kubeconfigKey, &corev1.Secret{})).To(Succeed())
		}).WithTimeout(5 * time.Second).Should(Succeed())
		Expect(gitOut("--git-dir", vrepo.Dir, "merge-base", "--is-ancestor", last[provider], attack)).To(BeEmpty())
	})
})

// expectUnverified waits until c reports commit as unverified, by author and
// with reason, in its SourceVerified condition, Ready and a Warning event.
func expectUnverified(ctx context.Context, c *cluster, commit, author, reason string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		obj := peeringRepository(ctx, g, c)
		cond := conditionOf(obj, "SourceVerified")
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(cond.Reason).To(Equal(gitpeerv1alpha1.CommitVerificationFailedReason))
		g.Expect(cond.Message).To(And(ContainSubstring(commit), ContainSubstring(author), ContainSubstring(reason)))
		g.Expect(conditionOf(obj, meta.ReadyCondition)).To(HaveField("Status", metav1.ConditionFalse))
	}).WithTimeout(time.Minute).Should(Succeed())
	expectEvent(ctx, c, gitpeerv1alpha1.CommitVerificationFailedReason, commit, author)
}

// signedMerge merges ref into main with a commit signed by the SSH key in
// keyFile, as a reviewer (or a forge) does, redoing it if an agent pushed first.
func signedMerge(r gitserver.Repo, keyFile, ref, msg string) {
	GinkgoHelper()
	w := cloneOf(r)
	for range 10 {
		gitCLI(w, "fetch", "-q", "origin")
		gitCLI(w, "reset", "-q", "--hard", "origin/main")
		gitCLI(w, "-c", "gpg.format=ssh", "-c", "user.signingkey="+keyFile, "merge", "-q", "-S", "--no-ff", ref, "-m", msg)
		cmd := exec.Command("git", "push", "-q", "origin", "HEAD:main")
		cmd.Dir = w
		if cmd.Run() == nil {
			return
		}
	}
	Fail("cannot push the merge to main")
}

func cloneOf(r gitserver.Repo) string {
	GinkgoHelper()
	w := filepath.Join(GinkgoT().TempDir(), "w")
	gitCLI(filepath.Dir(w), "clone", "-q", r.Dir, w)
	return w
}

// newSSHKey returns a fresh Ed25519 private key in OpenSSH PEM form.
func newSSHKey() []byte {
	GinkgoHelper()
	_, priv := must2(ed25519.GenerateKey(rand.Reader))
	return pem.EncodeToMemory(must(ssh.MarshalPrivateKey(priv, "")))
}

func must2[A, B any](a A, b B, err error) (A, B) {
	GinkgoHelper()
	Expect(err).NotTo(HaveOccurred())
	return a, b
}

func authorizedKeyOf(private []byte) []byte {
	GinkgoHelper()
	return ssh.MarshalAuthorizedKey(must(ssh.ParsePrivateKey(private)).PublicKey())
}
