package e2e

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
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
	"github.com/gitpeer/gitpeer/test/sandbox"
)

// Forge pull requests runs the handshake on a real Gitea with main protected as examples/forge
// describes: only the provider's agent may push to it, a merge needs one approval of the latest
// push (stale approvals dismissed) and a green status from the repository's CI, which this spec
// runs as examples/ci/verify.yaml does (`gitpeer verify --base` on the head's exact commit,
// posted by the provider side); the consumer's agent may push only to its review branches and
// posts no status.
var _ = Describe("Forge pull requests", Ordered, func() {
	const (
		providerF, consumerF = "provider-f", "consumer-f"
		absentProvider       = "provider-g" // listed by the consumer, never answers
		owner, name          = "reviewer", "peering"
		ciCheck              = "verify" // the CI job's status, as GitHub names a job's check
	)
	branchF := "gitpeer/" + providerF + "/" + consumerF
	var (
		forge                  *gitea.Server
		reviewer, consumerUser gitea.User
		admin, asReviewer      *sdk.Client
		provider, consumer     *cluster
		gitpeerBin             string
		repoAs                 func(u gitea.User) string
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
	// ci is the repository's CI job for pull request pr, run from the base branch as
	// examples/ci/verify.yaml runs it: it fetches the head only as a Git ref to read, reads its
	// commit once, judges that commit with `gitpeer verify --base main`, and posts the verdict on
	// that same commit with the provider side's token, never the proposer's. It returns the
	// commit, the state posted and the command's output.
	ci := func(pr *sdk.PullRequest) (string, sdk.StatusState, string) {
		GinkgoHelper()
		clone := filepath.Join(GinkgoT().TempDir(), "ci.git")
		gitCLI(filepath.Dir(clone), "clone", "-q", "--bare", repoAs(reviewer), clone)
		gitCLI(clone, "fetch", "-q", "origin", fmt.Sprintf("+refs/pull/%d/head:refs/ci/head", pr.Index))
		sha := strings.TrimSpace(gitCLI(clone, "rev-parse", "refs/ci/head"))
		out, err := exec.Command(gitpeerBin, "verify", "--base", "main", "--revision", sha, clone).CombinedOutput()
		Expect(string(out)).To(HavePrefix("commit "+sha+", as a pull request into main"), "it names the commit it judged")
		state, description := sdk.StatusSuccess, "gitpeer verify --base main passed"
		if err != nil {
			state, description = sdk.StatusFailure, "gitpeer verify --base main failed"
		}
		_, _, err = asReviewer.CreateStatus(owner, name, sha, sdk.CreateStatusOption{State: state, Context: ciCheck, Description: description})
		Expect(err).NotTo(HaveOccurred())
		return sha, state, string(out)
	}
	// status runs the CI on the open pull request from head until it posts want on its head, and
	// checks that the CI's is the only status there: the proposer's agent posts none.
	status := func(head string, want sdk.StatusState) (*sdk.PullRequest, string) {
		GinkgoHelper()
		var pr *sdk.PullRequest
		var out string
		Eventually(func(g Gomega) {
			pr = openPull(head, "")
			var sha string
			var state sdk.StatusState
			sha, state, out = ci(pr)
			g.Expect(sha).To(Equal(pr.Head.Sha), "pushed meanwhile: judge the new head")
			g.Expect(state).To(Equal(want), "%s", out)
			combined, _, err := admin.GetCombinedStatus(owner, name, sha)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(combined.Statuses).To(HaveEach(HaveField("Context", ciCheck)))
			g.Expect(combined.State).To(Equal(want), "status on %s: %+v", sha, combined.Statuses)
		}).WithTimeout(2 * time.Minute).Should(Succeed())
		return pr, out
	}
	// refused checks that the reviewer cannot merge pr as it stands.
	refused := func(pr *sdk.PullRequest, why string) {
		GinkgoHelper()
		merged, _, err := asReviewer.MergePullRequest(owner, name, pr.Index, sdk.MergePullRequestOption{Style: sdk.MergeStyleMerge})
		Expect(merged && err == nil).To(BeFalse(), why)
	}
	// pushToReview commits edit on the review branch as the consumer could, and pushes it.
	pushToReview := func(message string, edit func(w string)) string {
		GinkgoHelper()
		w := filepath.Join(GinkgoT().TempDir(), "w")
		gitCLI(filepath.Dir(w), "clone", "-q", "-b", branchF, repoAs(consumerUser), w)
		edit(w)
		gitCLI(w, "add", "-A")
		gitCLI(w, "commit", "-q", "-m", message)
		_, err := sandbox.Git(w, "push", "-q", "origin", "HEAD:main")
		Expect(err).To(HaveOccurred(), "the consumer's token cannot push main")
		gitCLI(w, "push", "-q", "origin", "HEAD:"+branchF)
		return w
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

	BeforeAll(func() {
		pf := startProtectedForge(func(o *sdk.CreateBranchProtectionOption) {
			o.DismissStaleApprovals, o.EnableStatusCheck, o.StatusCheckContexts, o.BlockOnRejectedReviews = true, true, []string{ciCheck}, true
		})
		forge, admin, asReviewer, reviewer, consumerUser = pf.Server, pf.admin, pf.asReviewer, pf.reviewer, pf.consumerUser
		providerUser := pf.providerUser
		repoAs = func(u gitea.User) string {
			loc, err := url.Parse(forge.URL + owner + "/" + name + ".git")
			Expect(err).NotTo(HaveOccurred())
			loc.User = url.UserPassword(u.Name, u.Token)
			return loc.String()
		}
		gitpeerBin = filepath.Join(GinkgoT().TempDir(), "gitpeer")
		out, err := exec.Command("go", "build", "-o", gitpeerBin, "github.com/gitpeer/gitpeer/cmd/gitpeer").CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "%s", out)

		repoURL := forge.URL + owner + "/" + name + ".git"
		provider, consumer = newCluster(providerF), newCluster(consumerF)
		forgeCredentials(provider, providerUser)
		forgeCredentials(consumer, consumerUser)
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
		pr, _ := status(branchF, sdk.StatusSuccess)
		Expect(pr.Title).To(ContainSubstring("asks " + providerF + " for a nonce"))
		Expect(onMain(providerF + "/" + consumerF + "/request.yaml")).To(BeEmpty())
		approveAndMerge(pr)
		Eventually(func() string { return onMain(providerF + "/" + consumerF + "/nonce.yaml") }).WithTimeout(2 * time.Minute).ShouldNot(BeEmpty())
	})

	It("opens one pull request for the Tenant that says what merging grants, with a green status", func() {
		pr, _ := status(branchF, sdk.StatusSuccess)
		Expect(pr.Title).To(ContainSubstring(consumerF + " asks " + providerF + " for an identity"))
		for _, want := range []string{"Consumer cluster: `" + consumerF + "`", "SHA-256 of the public key", "`liqo-tenant-" + consumerF + "`",
			"CN=" + consumerF + ", O=liqo.io", "How to revoke", "The proposer's own checks of ", "not the review signal", "passed: " + providerF + "/" + consumerF + "/tenant.yaml", "after merge",
			// quoted from the terms the provider published, not from the consumer
			"As published by the provider in `" + providerF + "/terms.yaml`", "ClusterRole `liqo-remote-controlplane`, bound in `liqo-tenant-" + consumerF + "`",
			"Certificate lifetime: 24h0m0s; renewal: at 2/3 of its lifetime, without a new approval", "passed: " + providerF + "/terms.yaml: terms of " + providerF} {
			Expect(pr.Body).To(ContainSubstring(want))
		}
		Consistently(func() int { return len(pulls(branchF)) }).WithTimeout(5*time.Second).Should(Equal(2), "the request's and the Tenant's, never a duplicate")
	})

	It("turns the status red when tenant.yaml on the review branch is tampered with, and the protected branch refuses the merge", func() {
		tenant := filepath.Join(providerF, consumerF, "tenant.yaml")
		w := pushToReview("Tamper with the Tenant", func(w string) {
			data := gitCLI(w, "show", "HEAD:"+tenant)
			hostile := strings.Replace(data, "signature: ", "signature: AAAA", 1) // three more bytes: not a signature of the nonce
			Expect(hostile).NotTo(Equal(data))
			Expect(os.WriteFile(filepath.Join(w, tenant), []byte(hostile), 0o644)).To(Succeed())
		})

		pr, out := status(branchF, sdk.StatusFailure)
		Expect(out).To(ContainSubstring(tenant))
		_, _, err := asReviewer.CreatePullReview(owner, name, pr.Index, sdk.CreatePullReviewOptions{State: sdk.ReviewStateApproved, Body: "approved"})
		Expect(err).NotTo(HaveOccurred())
		refused(pr, "a red CI check blocks the merge")
		Expect(onMain(tenant)).To(BeEmpty())

		gitCLI(w, "revert", "--no-edit", "HEAD")
		gitCLI(w, "push", "-q", "origin", "HEAD:"+branchF)
		status(branchF, sdk.StatusSuccess)
	})

	It("fails the CI check when the pull request changes anything but the consumer's own files, and no approval or status outlives a push", func() {
		pr, _ := status(branchF, sdk.StatusSuccess)
		_, _, err := asReviewer.CreatePullReview(owner, name, pr.Index, sdk.CreatePullReviewOptions{State: sdk.ReviewStateApproved, Body: "approved"})
		Expect(err).NotTo(HaveOccurred())
		green := pr.Head.Sha
		// The head's files all still verify: only what the pull request changes gives it away.
		w := pushToReview("Own the repository", func(w string) {
			Expect(os.WriteFile(filepath.Join(w, "CODEOWNERS"), []byte("* @"+consumerUser.Name+"\n"), 0o644)).To(Succeed())
			Expect(os.MkdirAll(filepath.Join(w, ".gitea", "workflows"), 0o755)).To(Succeed())
			Expect(os.WriteFile(filepath.Join(w, ".gitea", "workflows", "verify.yaml"), []byte("on: push\n"), 0o644)).To(Succeed())
		})
		Eventually(func() string { return openPull(branchF, "").Head.Sha }).WithTimeout(time.Minute).ShouldNot(Equal(green))
		refused(openPull(branchF, ""), "the approval and the green status were of the previous head")

		pr, out := status(branchF, sdk.StatusFailure)
		Expect(out).To(And(ContainSubstring("CODEOWNERS"), ContainSubstring(".gitea/workflows/verify.yaml"), ContainSubstring("may change only")))
		combined, _, err := admin.GetCombinedStatus(owner, name, green)
		Expect(err).NotTo(HaveOccurred())
		Expect(combined.State).To(Equal(sdk.StatusSuccess), "the old head keeps its own verdict, and only it")
		_, _, err = asReviewer.CreatePullReview(owner, name, pr.Index, sdk.CreatePullReviewOptions{State: sdk.ReviewStateApproved, Body: "approved"})
		Expect(err).NotTo(HaveOccurred())
		refused(pr, "a red CI check blocks the merge")
		Expect(onMain("CODEOWNERS")).To(BeEmpty())

		gitCLI(w, "revert", "--no-edit", "HEAD")
		gitCLI(w, "push", "-q", "origin", "HEAD:"+branchF)
		status(branchF, sdk.StatusSuccess)
	})

	It("completes the handshake when the reviewer merges through the forge, and deletes the review branch", func(ctx SpecContext) {
		pr, _ := status(branchF, sdk.StatusSuccess)
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
