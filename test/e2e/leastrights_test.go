package e2e

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"time"

	sdk "code.gitea.io/sdk/gitea"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/test/gitea"
	"github.com/gitpeer/gitpeer/test/sandbox"
)

// Least rights runs the default consumer (no spec.consumer.pullRequest, no direct mode) against a
// real Gitea whose main only the provider's agent may push: the consumer's credentials can push
// its review branches and nothing else, and a reviewer merges both its request and its Tenant
// through pull requests people open.
var _ = Describe("Least rights", Ordered, func() {
	const (
		providerL, consumerL = "provider-l", "consumer-l"
		owner, name          = "reviewer", "peering"
	)
	branch := "gitpeer/" + providerL + "/" + consumerL
	dir := providerL + "/" + consumerL + "/"
	var (
		forge              *gitea.Server
		consumerUser       gitea.User
		admin, asReviewer  *sdk.Client
		provider, consumer *cluster
		repoURL            string
	)

	// at returns a file at ref, "" when absent.
	at := func(ref, path string) string {
		data, _, err := admin.GetFile(owner, name, ref, path)
		if err != nil {
			return ""
		}
		return string(data)
	}
	// merge opens a pull request from the review branch (as a person would: the admin) and merges
	// it as the reviewer, after approving it.
	merge := func(title string) {
		GinkgoHelper()
		pr, _, err := admin.CreatePullRequest(owner, name, sdk.CreatePullRequestOption{Head: branch, Base: "main", Title: title})
		Expect(err).NotTo(HaveOccurred())
		_, _, err = asReviewer.CreatePullReview(owner, name, pr.Index, sdk.CreatePullReviewOptions{State: sdk.ReviewStateApproved, Body: "approved"})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			merged, _, err := asReviewer.MergePullRequest(owner, name, pr.Index, sdk.MergePullRequestOption{Style: sdk.MergeStyleMerge, Title: fmt.Sprintf("Merge pull request #%d", pr.Index)})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(merged).To(BeTrue())
		}).WithTimeout(time.Minute).Should(Succeed())
	}
	peeringOf := func(ctx context.Context, g Gomega) gitpeerv1alpha1.PeeringStatus {
		obj := &gitpeerv1alpha1.PeeringRepository{}
		g.Expect(consumer.k8s.Get(ctx, client.ObjectKey{Namespace: agentNamespace, Name: "peering"}, obj)).To(Succeed())
		g.Expect(obj.Status.Peerings).To(HaveLen(1))
		return obj.Status.Peerings[0]
	}

	BeforeAll(func() {
		pf := startProtectedForge(nil)
		forge, admin, asReviewer, consumerUser = pf.Server, pf.admin, pf.asReviewer, pf.consumerUser
		repoURL = forge.URL + owner + "/" + name + ".git"
		provider, consumer = newCluster(providerL), newCluster(consumerL)
		forgeCredentials(provider, pf.providerUser)
		forgeCredentials(consumer, consumerUser)
		var err error
		provider.object, err = provider.sb.Apply(context.Background(), repoURL, time.Second, func(s *gitpeerv1alpha1.PeeringRepositorySpec) {
			s.Provider = &gitpeerv1alpha1.ProviderSpec{Enabled: true, APIServer: provider.cp.URL}
		})
		Expect(err).NotTo(HaveOccurred())
		consumer.object, err = consumer.sb.Apply(context.Background(), repoURL, time.Second, func(s *gitpeerv1alpha1.PeeringRepositorySpec) {
			s.Consumer = &gitpeerv1alpha1.ConsumerSpec{Providers: []authv1beta1.ClusterID{providerL}, TrustedCAs: anchors(provider)}
		})
		Expect(err).NotTo(HaveOccurred())
		provider.startAgent()
		consumer.startAgent()
	})

	It("runs with consumer credentials that cannot push main", func() {
		u, err := url.Parse(repoURL)
		Expect(err).NotTo(HaveOccurred())
		u.User = url.UserPassword(consumerUser.Name, consumerUser.Token)
		w := filepath.Join(GinkgoT().TempDir(), "w")
		gitCLI(filepath.Dir(w), "clone", "-q", u.String(), w)
		gitCLI(w, "commit", "-q", "--allow-empty", "-m", "The consumer tries main")
		out, err := sandbox.Git(w, "push", "-q", "origin", "HEAD:main")
		Expect(err).To(HaveOccurred(), "the consumer's token pushed main: %s", out)
	})

	It("proposes request.yaml on its review branch and says it waits for someone to merge it", func(ctx SpecContext) {
		Eventually(func() string { return at(branch, dir+"request.yaml") }).WithTimeout(2 * time.Minute).ShouldNot(BeEmpty())
		Eventually(func(g Gomega) {
			p := peeringOf(ctx, g)
			g.Expect(p.Phase).To(Equal(gitpeerv1alpha1.PhaseRequested))
			g.Expect(p.Message).To(ContainSubstring("request.yaml proposed on branch " + branch + "; waiting for someone to merge it into main"))
		}).WithTimeout(time.Minute).Should(Succeed())
		Expect(at("main", dir+"request.yaml")).To(BeEmpty())
	})

	It("proposes the Tenant on the review branch, moved to main, once a reviewer merged the request", func() {
		merge("Peering request: " + consumerL + " asks " + providerL + " for a nonce")
		Eventually(func() string { return at("main", dir+"nonce.yaml") }).WithTimeout(2 * time.Minute).ShouldNot(BeEmpty())
		Eventually(func() string { return at(branch, dir+"tenant.yaml") }).WithTimeout(2 * time.Minute).ShouldNot(BeEmpty())
		Expect(at(branch, dir+"nonce.yaml")).To(Equal(at("main", dir+"nonce.yaml")), "the review branch restarted from main after the merge")
		Expect(at("main", dir+"tenant.yaml")).To(BeEmpty())
	})

	It("completes the handshake once the reviewer merges the Tenant", func(ctx SpecContext) {
		merge("Peering: " + consumerL + " asks " + providerL + " for an identity")
		Eventually(func(g Gomega) {
			g.Expect(peeringOf(ctx, g).Phase).To(Equal(gitpeerv1alpha1.PhaseReady))
		}).WithTimeout(2 * time.Minute).Should(Succeed())
	})
})

// forgeCredentials points the cluster's "git" Secret at the forge user u.
func forgeCredentials(c *cluster, u gitea.User) {
	GinkgoHelper()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: agentNamespace, Name: "git"}}
	Expect(c.k8s.Get(context.Background(), client.ObjectKeyFromObject(secret), secret)).To(Succeed())
	secret.Data = map[string][]byte{"username": []byte(u.Name), "password": []byte(u.Token)}
	Expect(c.k8s.Update(context.Background(), secret)).To(Succeed())
}

// protectedForge is a Gitea whose repository reviewer/peering has main protected as
// examples/forge sets it up, with its users and API clients.
type protectedForge struct {
	*gitea.Server
	admin, asReviewer                    *sdk.Client
	reviewer, providerUser, consumerUser gitea.User
}

// startProtectedForge starts Gitea with the repository reviewer/peering of the user reviewer, the
// users provider-agent and consumer-agent as its collaborators with Write permission, and main
// protected: only provider-agent may push it, a merge needs the reviewer's approval; protect (if
// not nil) adds to the rule.
func startProtectedForge(protect func(*sdk.CreateBranchProtectionOption)) *protectedForge {
	GinkgoHelper()
	const owner, name = "reviewer", "peering"
	f := &protectedForge{Server: gitea.Start(GinkgoT())}
	var err error
	f.admin, err = f.Client(f.AdminToken)
	Expect(err).NotTo(HaveOccurred())
	for u, user := range map[*gitea.User]string{&f.reviewer: owner, &f.providerUser: "provider-agent", &f.consumerUser: "consumer-agent"} {
		*u, err = f.CreateUser(user, gitea.AgentScopes...)
		Expect(err).NotTo(HaveOccurred())
	}
	_, err = f.CreateRepo(owner, name)
	Expect(err).NotTo(HaveOccurred())
	write := sdk.AccessModeWrite
	for _, u := range []string{f.providerUser.Name, f.consumerUser.Name} {
		_, err = f.admin.AddCollaborator(owner, name, u, sdk.AddCollaboratorOption{Permission: &write})
		Expect(err).NotTo(HaveOccurred())
	}
	rule := sdk.CreateBranchProtectionOption{
		RuleName: "main", EnablePush: true, EnablePushWhitelist: true, PushWhitelistUsernames: []string{f.providerUser.Name},
		RequiredApprovals: 1, EnableApprovalsWhitelist: true, ApprovalsWhitelistUsernames: []string{owner}, BlockAdminMergeOverride: true,
	}
	if protect != nil {
		protect(&rule)
	}
	_, _, err = f.admin.CreateBranchProtection(owner, name, rule)
	Expect(err).NotTo(HaveOccurred())
	f.asReviewer, err = f.Client(f.reviewer.Token)
	Expect(err).NotTo(HaveOccurred())
	return f
}
