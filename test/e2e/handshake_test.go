package e2e

import (
	"context"
	"os/exec"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/test/gitserver"
	"github.com/gitpeer/gitpeer/test/sandbox"
	"github.com/gitpeer/gitpeer/vocabulary"
)

const (
	providerID = "provider-a"
	consumerID = "consumer-1"
	reviewRef  = "gitpeer/" + providerID + "/" + consumerID
)

var _ = Describe("Handshake", Ordered, func() {
	var provider, consumer *cluster
	var kubeconfig []byte
	dir := providerID + "/" + consumerID + "/"
	tenantNS := authv1beta1.TenantNamespaceName(consumerID)
	consumerNS := authv1beta1.TenantNamespaceName(providerID)
	identityName := authv1beta1.ControlPlaneIdentityName(providerID)

	BeforeAll(func() {
		provider, consumer = startPeers(providerID, consumerID, false)
	})

	It("proposes the request on the review branch, never on main, and waits for a reviewer to merge it", func(ctx SpecContext) {
		Eventually(func() string { return show(reviewRef, dir+"request.yaml") }).WithTimeout(time.Minute).ShouldNot(BeEmpty())
		Consistently(func() string { return show("main", dir+"request.yaml") + show("main", dir+"nonce.yaml") }).WithTimeout(3*time.Second).Should(BeEmpty(),
			"the request reaches main only through a merge, and the provider reads nothing else")
		Eventually(func(g Gomega) {
			obj := &gitpeerv1alpha1.PeeringRepository{}
			g.Expect(consumer.k8s.Get(ctx, client.ObjectKey{Namespace: agentNamespace, Name: "peering"}, obj)).To(Succeed())
			g.Expect(obj.Status.Peerings).To(ContainElement(And(HaveField("Phase", gitpeerv1alpha1.PhaseRequested),
				HaveField("Message", ContainSubstring("waiting for someone to merge it into main")))))
		}).WithTimeout(30 * time.Second).Should(Succeed())
		mergeRequest(repo, reviewRef, dir)
	})

	It("proposes the Tenant for review on the review branch moved to main, and issues nothing until it is merged", func(ctx SpecContext) {
		Eventually(func() string { return show("main", dir+"nonce.yaml") }).WithTimeout(time.Minute).ShouldNot(BeEmpty())
		Eventually(func() string { return show(reviewRef, dir+"tenant.yaml") }).WithTimeout(time.Minute).ShouldNot(BeEmpty())
		Expect(show(reviewRef, dir+"nonce.yaml")).NotTo(BeEmpty(), "the merged review branch restarts from main: its pull request holds tenant.yaml alone")
		Expect(show("main", dir+"tenant.yaml")).To(BeEmpty())

		// The provider never reads the review branch.
		Consistently(func() bool {
			return apierrors.IsNotFound(provider.k8s.Get(ctx, client.ObjectKey{Namespace: tenantNS, Name: consumerID}, &authv1beta1.Tenant{}))
		}).WithTimeout(5 * time.Second).Should(BeTrue())
		Expect(show("main", dir+"identity.yaml")).To(BeEmpty())
	})

	It("issues a working, least-privilege kubeconfig once a reviewer merges the Tenant", func(ctx SpecContext) {
		// The reviewer merges the pull request.
		w := filepath.Join(GinkgoT().TempDir(), "w")
		gitCLI(filepath.Dir(w), "clone", "-q", repo.Dir, w)
		gitCLI(w, "merge", "-q", "--no-ff", "origin/"+reviewRef, "-m", "Merge pull request #1 from "+reviewRef)
		gitCLI(w, "push", "-q", "origin", "HEAD:main")

		Eventually(func() string { return show("main", dir+"identity.yaml") }).WithTimeout(time.Minute).ShouldNot(BeEmpty())
		secret := &corev1.Secret{}
		Eventually(func(g Gomega) {
			g.Expect(consumer.k8s.Get(ctx, client.ObjectKey{Namespace: consumerNS, Name: authv1beta1.KubeconfigSecretName(identityName)}, secret)).To(Succeed())
		}).WithTimeout(time.Minute).Should(Succeed())
		Expect(secret.Labels).To(HaveKeyWithValue(authv1beta1.RemoteClusterIDLabel, providerID))
		Expect(secret.Labels).To(HaveKeyWithValue(authv1beta1.IdentityTypeLabel, string(authv1beta1.ControlPlaneIdentityType)))
		Expect(secret.Annotations).To(HaveKeyWithValue(authv1beta1.RemoteTenantNamespaceAnnotation, tenantNS))
		for c, name := range map[*cluster]string{provider: tenantNS, consumer: consumerNS} {
			ns := &corev1.Namespace{}
			Expect(c.k8s.Get(ctx, client.ObjectKey{Name: name}, ns)).To(Succeed())
			for _, l := range authv1beta1.PodSecurityLabels {
				Expect(ns.Labels).To(HaveKeyWithValue(l, authv1beta1.PodSecurityPrivileged), "tenant namespace %s has Liqo's Pod Security labels", name)
			}
		}
		kubeconfig = secret.Data[authv1beta1.KubeconfigSecretField]

		cs := clientFor(kubeconfig)
		review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(review.Status.UserInfo.Username).To(Equal(consumerID))
		Expect(review.Status.UserInfo.Groups).To(ContainElement("liqo.io"))
		Expect(can(ctx, cs, "create", "authentication.liqo.io", "resourceslices", tenantNS)).To(BeTrue())
		Expect(can(ctx, cs, "list", "", "secrets", "")).To(BeFalse())
		_, err = cs.CoreV1().Secrets("").List(ctx, metav1.ListOptions{})
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "listing secrets: %v", err)

		Eventually(func(g Gomega) {
			obj := &gitpeerv1alpha1.PeeringRepository{}
			g.Expect(consumer.k8s.Get(ctx, client.ObjectKey{Namespace: agentNamespace, Name: "peering"}, obj)).To(Succeed())
			g.Expect(obj.Status.Peerings).To(ContainElement(HaveField("Phase", gitpeerv1alpha1.PhaseReady)))
		}).WithTimeout(30 * time.Second).Should(Succeed())
	})

	It("revokes access when tenant.yaml is deleted from the branch", func(ctx SpecContext) {
		pins := func(g Gomega) map[string]string {
			ns := &corev1.Namespace{}
			g.Expect(consumer.k8s.Get(ctx, client.ObjectKey{Name: consumerNS}, ns)).To(Succeed())
			return ns.Annotations
		}
		Expect(pins(Default)).NotTo(HaveKey(vocabulary.PinnedProviderAnnotation), "the provider is anchored by its CA hash: no first-use pin")
		w := filepath.Join(GinkgoT().TempDir(), "w")
		gitCLI(filepath.Dir(w), "clone", "-q", repo.Dir, w)
		gitCLI(w, "rm", "-q", dir+"tenant.yaml")
		gitCLI(w, "commit", "-q", "-m", "Revoke "+consumerID)
		gitCLI(w, "push", "-q", "origin", "HEAD:main")

		cs := clientFor(kubeconfig)
		Eventually(func() bool {
			return can(ctx, cs, "create", "authentication.liqo.io", "resourceslices", tenantNS)
		}).WithTimeout(time.Minute).Should(BeFalse())
		Eventually(func() string { return show("main", dir+"identity.yaml") }).WithTimeout(time.Minute).Should(BeEmpty())
		Eventually(func() bool {
			return apierrors.IsNotFound(consumer.k8s.Get(ctx, client.ObjectKey{Namespace: consumerNS, Name: authv1beta1.KubeconfigSecretName(identityName)}, &corev1.Secret{}))
		}).WithTimeout(time.Minute).Should(BeTrue())
		Expect(apierrors.IsNotFound(consumer.k8s.Get(ctx, client.ObjectKey{Namespace: consumerNS, Name: identityName}, &authv1beta1.Identity{}))).To(BeTrue())
		Eventually(pins).WithTimeout(time.Minute).ShouldNot(Or(HaveKey(vocabulary.PinnedProviderAnnotation), HaveKey(vocabulary.PinnedCAAnnotation)),
			"revocation clears the pin: a new peering pins anew")
	})

	It("leaves a git log that reads as an audit trail", func() {
		out, err := exec.Command("git", "--git-dir", repo.Dir, "log", "main", "--format=%s|%an|%(trailers:unfold,separator=%x2C)").Output()
		Expect(err).NotTo(HaveOccurred())
		log := string(out)
		GinkgoWriter.Println(log)
		for _, want := range []string{
			"Request peering of consumer-1 with provider-a|gitpeer|Gitpeer-Action: request,Gitpeer-Provider: provider-a,Gitpeer-Consumer: consumer-1",
			"Merge pull request from " + reviewRef + " (request)|Rita Reviewer|",
			// The nonce's commit may also carry the terms the provider published in the same round.
			"Gitpeer-Action: issue-nonce,Gitpeer-Provider: provider-a,Gitpeer-Consumer: consumer-1",
			"Propose Tenant of consumer-1 for provider-a|gitpeer|Gitpeer-Action: propose-tenant",
			"Merge pull request #1 from " + reviewRef + "|Rita Reviewer|",
			"Revoke identity of consumer-1 on provider-a|gitpeer|Gitpeer-Action: revoke",
		} {
			Expect(log).To(ContainSubstring(want))
		}
		Expect(log).To(MatchRegexp(`Issue identity of consumer-1 on provider-a \(serial [0-9a-f]+\)\|gitpeer\|Gitpeer-Action: issue-identity,Gitpeer-Provider: provider-a,Gitpeer-Consumer: consumer-1,Gitpeer-Serial: [0-9a-f]+,Gitpeer-Expires: 20[0-9-]+T`))
	})
})

// mergeRequest waits for the consumer's request.yaml of dir on its review branch of r and merges
// the branch into main as a reviewer merging the request's pull request: the consumer never
// pushes main.
func mergeRequest(r gitserver.Repo, review, dir string) {
	GinkgoHelper()
	Eventually(func() string { return showIn(r, review, dir+"request.yaml") }).WithTimeout(time.Minute).ShouldNot(BeEmpty())
	Expect(showIn(r, "main", dir+"request.yaml")).To(BeEmpty(), "request.yaml committed straight to main")
	reviewerMerges(r, review, "Merge pull request from "+review+" (request)")
	Expect(showIn(r, "main", dir+"request.yaml")).NotTo(BeEmpty())
}

// reviewerMerges merges branch into main of r with a merge commit, as a reviewer would, again
// while an agent's commit to main makes the push lose the race.
func reviewerMerges(r gitserver.Repo, branch, message string) {
	GinkgoHelper()
	Eventually(func() error {
		w := filepath.Join(GinkgoT().TempDir(), "w")
		for _, args := range [][]string{{"clone", "-q", r.Dir, w}, {"-C", w, "merge", "-q", "--no-ff", "origin/" + branch, "-m", message}, {"-C", w, "push", "-q", "origin", "HEAD:main"}} {
			if _, err := sandbox.Git(filepath.Dir(w), args...); err != nil {
				return err
			}
		}
		return nil
	}).WithTimeout(time.Minute).Should(Succeed())
}

func clientFor(kubeconfig []byte) *kubernetes.Clientset {
	GinkgoHelper()
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	Expect(err).NotTo(HaveOccurred())
	return kubernetes.NewForConfigOrDie(cfg)
}

// can asks the provider whether the kubeconfig's user may do verb on resource.
func can(ctx context.Context, cs *kubernetes.Clientset, verb, group, resource, namespace string) bool {
	GinkgoHelper()
	r, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: verb, Group: group, Resource: resource, Namespace: namespace,
		}},
	}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	return r.Status.Allowed
}
