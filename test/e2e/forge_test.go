package e2e

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	sdk "code.gitea.io/sdk/gitea"
	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/reconciler"
	"github.com/gitpeer/gitpeer/test/gitea"
)

// Forge pull requests runs the handshake on a real Gitea with main protected as examples/forge
// describes: only the provider's agent may push to it, a merge needs one approval and a green
// gitpeer/verify status, and the consumer's agent may push only to its review branches.
var _ = Describe("Forge pull requests", Ordered, func() {
	const (
		providerF, consumerF = "provider-f", "consumer-f"
		absentProvider       = "provider-g" // listed by the consumer, never answers
		owner, name          = "reviewer", "peering"
	)
	branchF := "gitpeer/" + providerF + "/" + consumerF
	var (
		forge                  *gitea.Server
		reviewer, consumerUser gitea.User
		admin, asReviewer      *sdk.Client
		provider, consumer     *cluster
	)

	// pulls lists the pull requests from head into main, newest first.
	pulls := func(head string) []*sdk.PullRequest {
		GinkgoHelper()
		prs, _, err := admin.ListRepoPullRequests(owner, name, sdk.ListPullRequestsOptions{State: sdk.StateAll})
		Expect(err).NotTo(HaveOccurred())
		var out []*sdk.PullRequest
		for _, pr := range prs {
			if pr.Head.Name == head && pr.Base.Ref == "main" { // Head.Ref is refs/pull/<n>/head once the branch is deleted
				out = append(out, pr)
			}
		}
		return out
	}
	// openPull waits for exactly one open pull request from head whose title contains title.
	openPull := func(head, title string) *sdk.PullRequest {
		GinkgoHelper()
		var open *sdk.PullRequest
		Eventually(func(g Gomega) {
			open = nil
			for _, pr := range pulls(head) {
				if pr.State == sdk.StateOpen {
					g.Expect(open).To(BeNil(), "a second open pull request from %s", head)
					open = pr
				}
			}
			g.Expect(open).NotTo(BeNil())
			g.Expect(open.Title).To(ContainSubstring(title))
		}).WithTimeout(2 * time.Minute).Should(Succeed())
		return open
	}
	// status waits for the gitpeer/verify status of the open pull request from head to be want.
	status := func(head string, want sdk.StatusState) *sdk.PullRequest {
		GinkgoHelper()
		var pr *sdk.PullRequest
		Eventually(func(g Gomega) {
			pr = openPull(head, "")
			combined, _, err := admin.GetCombinedStatus(owner, name, pr.Head.Sha)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(combined.Statuses).To(ContainElement(HaveField("Context", reconciler.CheckContext)))
			g.Expect(combined.State).To(Equal(want), "status on %s: %+v", pr.Head.Sha, combined.Statuses)
		}).WithTimeout(2 * time.Minute).Should(Succeed())
		return pr
	}
	// approveAndMerge merges a pull request as the reviewer would, through the API.
	approveAndMerge := func(pr *sdk.PullRequest) {
		GinkgoHelper()
		_, _, err := asReviewer.CreatePullReview(owner, name, pr.Index, sdk.CreatePullReviewOptions{State: sdk.ReviewStateApproved, Body: "approved"})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			merged, _, err := asReviewer.MergePullRequest(owner, name, pr.Index, sdk.MergePullRequestOption{Style: sdk.MergeStyleMerge, Title: "Merge pull request #" + fmt.Sprint(pr.Index)})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(merged).To(BeTrue())
		}).WithTimeout(time.Minute).Should(Succeed())
	}
	// onMain returns a file of main, "" when absent.
	onMain := func(path string) string {
		data, _, err := admin.GetFile(owner, name, "main", path)
		if err != nil {
			return ""
		}
		return string(data)
	}
	// gitCredentials points the cluster's "git" Secret at the forge user.
	gitCredentials := func(c *cluster, u gitea.User) {
		GinkgoHelper()
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: agentNamespace, Name: "git"}}
		Expect(c.k8s.Get(context.Background(), client.ObjectKeyFromObject(secret), secret)).To(Succeed())
		secret.Data = map[string][]byte{"username": []byte(u.Name), "password": []byte(u.Token)}
		Expect(c.k8s.Update(context.Background(), secret)).To(Succeed())
	}

	BeforeAll(func() {
		forge = gitea.Start(GinkgoT())
		var err error
		admin, err = forge.Client(forge.AdminToken)
		Expect(err).NotTo(HaveOccurred())
		reviewer, err = forge.CreateUser(owner, gitea.AgentScopes...)
		Expect(err).NotTo(HaveOccurred())
		providerUser, err := forge.CreateUser("provider-agent", gitea.AgentScopes...)
		Expect(err).NotTo(HaveOccurred())
		consumerUser, err = forge.CreateUser("consumer-agent", gitea.AgentScopes...)
		Expect(err).NotTo(HaveOccurred())
		_, err = forge.CreateRepo(owner, name)
		Expect(err).NotTo(HaveOccurred())
		write := sdk.AccessModeWrite
		for _, u := range []string{providerUser.Name, consumerUser.Name} {
			_, err = admin.AddCollaborator(owner, name, u, sdk.AddCollaboratorOption{Permission: &write})
			Expect(err).NotTo(HaveOccurred())
		}
		_, _, err = admin.CreateBranchProtection(owner, name, sdk.CreateBranchProtectionOption{
			RuleName: "main", EnablePush: true, EnablePushWhitelist: true, PushWhitelistUsernames: []string{providerUser.Name},
			RequiredApprovals: 1, EnableApprovalsWhitelist: true, ApprovalsWhitelistUsernames: []string{owner},
			EnableStatusCheck: true, StatusCheckContexts: []string{reconciler.CheckContext}, BlockOnRejectedReviews: true, BlockAdminMergeOverride: true,
		})
		Expect(err).NotTo(HaveOccurred())
		asReviewer, err = forge.Client(reviewer.Token)
		Expect(err).NotTo(HaveOccurred())

		repoURL := forge.URL + owner + "/" + name + ".git"
		provider, consumer = newCluster(providerF), newCluster(consumerF)
		gitCredentials(provider, providerUser)
		gitCredentials(consumer, consumerUser)
		Expect(consumer.k8s.Create(context.Background(), &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: agentNamespace, Name: "forge"},
			Data:       map[string][]byte{reconciler.ForgeTokenKey: []byte(consumerUser.Token)},
		})).To(Succeed())
		objProvider, err := provider.sb.Apply(context.Background(), repoURL, time.Second, func(s *gitpeerv1alpha1.PeeringRepositorySpec) {
			s.Provider = &gitpeerv1alpha1.ProviderSpec{Enabled: true, APIServer: provider.cp.URL}
		})
		Expect(err).NotTo(HaveOccurred())
		provider.object = objProvider
		objConsumer, err := consumer.sb.Apply(context.Background(), repoURL, time.Second, func(s *gitpeerv1alpha1.PeeringRepositorySpec) {
			s.Consumer = &gitpeerv1alpha1.ConsumerSpec{
				Providers:   []authv1beta1.ClusterID{providerF, absentProvider},
				PullRequest: &gitpeerv1alpha1.PullRequestSpec{Provider: "gitea", SecretRef: meta.LocalObjectReference{Name: "forge"}},
				TrustedCAs:  anchors(provider),
			}
		})
		Expect(err).NotTo(HaveOccurred())
		consumer.object = objConsumer
		provider.startAgent()
		consumer.startAgent()
	})

	It("proposes the request through a pull request, as the consumer may not push to main", func() {
		pr := status(branchF, sdk.StatusSuccess)
		Expect(pr.Title).To(ContainSubstring("asks " + providerF + " for a nonce"))
		Expect(onMain(providerF + "/" + consumerF + "/request.yaml")).To(BeEmpty())
		approveAndMerge(pr)
		Eventually(func() string { return onMain(providerF + "/" + consumerF + "/nonce.yaml") }).WithTimeout(2 * time.Minute).ShouldNot(BeEmpty())
	})

	It("opens one pull request for the Tenant that says what merging grants, with a green status", func() {
		pr := status(branchF, sdk.StatusSuccess)
		Expect(pr.Title).To(ContainSubstring(consumerF + " asks " + providerF + " for an identity"))
		for _, want := range []string{"Consumer cluster: `" + consumerF + "`", "SHA-256 of the public key", "`liqo-tenant-" + consumerF + "`",
			"CN=" + consumerF + ", O=liqo.io", "How to revoke", "passed: " + providerF + "/" + consumerF + "/tenant.yaml", "after merge",
			// quoted from the terms the provider published, not from the consumer
			"As published by the provider in `" + providerF + "/terms.yaml`", "ClusterRole `liqo-remote-controlplane`, bound in `liqo-tenant-" + consumerF + "`",
			"Certificate lifetime: 24h0m0s; renewal: at 2/3 of its lifetime, without a new approval", "passed: " + providerF + "/terms.yaml: terms of " + providerF} {
			Expect(pr.Body).To(ContainSubstring(want))
		}
		Consistently(func() int { return len(pulls(branchF)) }).WithTimeout(5*time.Second).Should(Equal(2), "the request's and the Tenant's, never a duplicate")
	})

	It("turns the status red when tenant.yaml on the review branch is tampered with, and the protected branch refuses the merge", func() {
		w := filepath.Join(GinkgoT().TempDir(), "w")
		u, err := url.Parse(forge.URL + owner + "/" + name + ".git")
		Expect(err).NotTo(HaveOccurred())
		u.User = url.UserPassword(consumerUser.Name, consumerUser.Token)
		gitCLI(filepath.Dir(w), "clone", "-q", "-b", branchF, u.String(), w)
		tenant := filepath.Join(providerF, consumerF, "tenant.yaml")
		data := gitCLI(w, "show", "HEAD:"+tenant)
		hostile := strings.Replace(data, "signature: ", "signature: AAAA", 1) // three more bytes: not a signature of the nonce
		Expect(hostile).NotTo(Equal(data))
		Expect(os.WriteFile(filepath.Join(w, tenant), []byte(hostile), 0o644)).To(Succeed())
		gitCLI(w, "commit", "-q", "-am", "Tamper with the Tenant")
		gitCLI(w, "push", "-q", "origin", "HEAD:"+branchF)

		pr := status(branchF, sdk.StatusFailure)
		Expect(pr.Body).To(ContainSubstring("failed: "))
		_, _, err = asReviewer.CreatePullReview(owner, name, pr.Index, sdk.CreatePullReviewOptions{State: sdk.ReviewStateApproved, Body: "approved"})
		Expect(err).NotTo(HaveOccurred())
		merged, _, err := asReviewer.MergePullRequest(owner, name, pr.Index, sdk.MergePullRequestOption{Style: sdk.MergeStyleMerge})
		Expect(merged && err == nil).To(BeFalse(), "a red gitpeer/verify blocks the merge")
		Expect(onMain(tenant)).To(BeEmpty())

		gitCLI(w, "revert", "--no-edit", "HEAD")
		gitCLI(w, "push", "-q", "origin", "HEAD:"+branchF)
		status(branchF, sdk.StatusSuccess)
	})

	It("completes the handshake when the reviewer merges through the forge, and deletes the review branch", func(ctx SpecContext) {
		pr := status(branchF, sdk.StatusSuccess)
		approveAndMerge(pr)
		Eventually(func(g Gomega) {
			obj := &gitpeerv1alpha1.PeeringRepository{}
			g.Expect(consumer.k8s.Get(ctx, client.ObjectKey{Namespace: agentNamespace, Name: "peering"}, obj)).To(Succeed())
			g.Expect(obj.Status.Peerings).To(ContainElement(And(HaveField("PeerID", authv1beta1.ClusterID(providerF)), HaveField("Phase", gitpeerv1alpha1.PhaseReady))))
		}).WithTimeout(2 * time.Minute).Should(Succeed())
		Eventually(func() error {
			_, _, err := admin.GetRepoBranch(owner, name, branchF)
			return err
		}).WithTimeout(time.Minute).Should(HaveOccurred(), "the merged review branch is deleted")
	})

	It("reports a pull request closed without merging and does not reopen it", func(ctx SpecContext) {
		branchG := "gitpeer/" + absentProvider + "/" + consumerF
		pr := openPull(branchG, "for a nonce")
		closed := sdk.StateClosed
		_, _, err := asReviewer.EditPullRequest(owner, name, pr.Index, sdk.EditPullRequestOption{State: &closed})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			obj := &gitpeerv1alpha1.PeeringRepository{}
			g.Expect(consumer.k8s.Get(ctx, client.ObjectKey{Namespace: agentNamespace, Name: "peering"}, obj)).To(Succeed())
			g.Expect(obj.Status.Peerings).To(ContainElement(And(HaveField("PeerID", authv1beta1.ClusterID(absentProvider)), HaveField("Message", ContainSubstring("closed without merging")))))
		}).WithTimeout(time.Minute).Should(Succeed())
		Consistently(func() int { return len(pulls(branchG)) }).WithTimeout(5*time.Second).Should(Equal(1), "not reopened")
		Expect(onMain(absentProvider + "/" + consumerF + "/request.yaml")).To(BeEmpty())
	})
})
