package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/test/rawgit"
)

// An attacker with write access to main replaces an issued peering
// directory by something the agents refuse to read. The directory is then
// present but unreadable: it is reported, and nothing is revoked.
var _ = Describe("Hostile trees", Ordered, func() {
	const tProviderID, tConsumerID = "provider-tree", "consumer-tree"
	dir := tProviderID + "/" + tConsumerID
	tenantNS := authv1beta1.TenantNamespaceName(tConsumerID)
	var provider, consumer *cluster
	var kubeconfig []byte

	BeforeAll(func(ctx SpecContext) {
		provider, consumer = peerDirect(tProviderID, tConsumerID)
		kubeconfig = kubeconfigOf(ctx, consumer, tProviderID)
	})

	// expectKept checks for a while that the provider keeps the Tenant and
	// the consumer its kubeconfig, which still works.
	expectKept := func(ctx SpecContext) {
		GinkgoHelper()
		Consistently(func(g Gomega) {
			g.Expect(provider.k8s.Get(ctx, client.ObjectKey{Namespace: tenantNS, Name: tConsumerID}, &authv1beta1.Tenant{})).To(Succeed())
			g.Expect(kubeconfigOf(ctx, consumer, tProviderID)).To(Equal(kubeconfig))
			g.Expect(can(ctx, clientFor(kubeconfig), "create", "authentication.liqo.io", "resourceslices", tenantNS)).To(BeTrue())
		}).WithTimeout(10 * time.Second).Should(Succeed())
	}

	// restore commits on main the tree main had before its last commit,
	// without checking the hostile one out.
	restore := func() {
		GinkgoHelper()
		w := clone()
		restored := strings.TrimSpace(gitCLI(w, "commit-tree", "HEAD~1^{tree}", "-p", "HEAD", "-m", "Restore "+dir))
		gitCLI(w, "update-ref", "HEAD", restored)
		pushMain(w)
	}

	It("never revokes a peering whose directory became a symlink", func(ctx SpecContext) {
		w := clone()
		gitCLI(w, "rm", "-q", "-r", dir)
		Expect(os.MkdirAll(filepath.Join(w, tProviderID), 0o755)).To(Succeed())
		Expect(os.Symlink("../"+tProviderID, filepath.Join(w, dir))).To(Succeed())
		gitCLI(w, "add", "-A")
		gitCLI(w, "commit", "-q", "-m", "Replace "+dir+" by a symlink")
		pushMain(w)
		expectReported(ctx, provider, dir, "not a regular file (symlink)")
		expectFilesInvalid(ctx, consumer, dir+": not a regular file (symlink)")
		expectKept(ctx)
		restore()
	})

	It("never revokes a peering whose directory holds two tenant.yaml entries", func(ctx SpecContext) {
		w := clone()
		raw, head, root := rawHead(w)
		peering, err := root.Tree(dir)
		Expect(err).NotTo(HaveOccurred())
		entries := append(peering.Entries, rawgit.File("tenant.yaml", raw.Blob([]byte("kind: Tenant\n"))))
		sort.SliceStable(entries, func(i, j int) bool { return entries[i].Name < entries[j].Name })
		h := raw.Commit(replaceTree(raw, root, []string{tProviderID, tConsumerID}, raw.Tree(entries...)), head)
		gitCLI(w, "update-ref", "HEAD", h.String())
		pushMain(w)
		expectReported(ctx, provider, dir, `malformed tree (two entries named "tenant.yaml")`)
		expectFilesInvalid(ctx, consumer, dir+`: malformed tree (two entries named "tenant.yaml")`)
		expectKept(ctx)
		restore()
	})

	// Before, the caps of one reading counted the whole repository: more
	// directories than MaxDirectoriesPerRound in a folder sorting first left
	// the agents' own folders over the cap, invalid and skipped every round.
	It("reads its own folders whatever another folder holds", func(ctx SpecContext) {
		w := clone()
		raw, head, root := rawHead(w)
		leaf := raw.Tree(rawgit.File("tenant.yaml", raw.Blob([]byte("kind: Tenant\n"))))
		var junk []object.TreeEntry
		for i := range protocol.MaxTreeEntries {
			junk = append(junk, rawgit.Dir(fmt.Sprintf("consumer-%05d", i), leaf))
		}
		entries := append([]object.TreeEntry{rawgit.Dir("aaaa", raw.Tree(junk...))}, root.Entries...)
		sort.SliceStable(entries, func(i, j int) bool { return entries[i].Name < entries[j].Name })
		h := raw.Commit(raw.Tree(entries...), head)
		gitCLI(w, "update-ref", "HEAD", h.String())
		pushMain(w)
		for _, c := range []*cluster{provider, consumer} {
			Eventually(func(g Gomega) {
				obj := peeringRepository(ctx, g, c)
				g.Expect(obj.Status.LastProcessedCommit).To(Equal(h.String()))
				cond := conditionOf(obj, gitpeerv1alpha1.FilesValidCondition)
				g.Expect(cond).NotTo(BeNil())
				g.Expect(cond.Status).To(BeEquivalentTo("True"), cond.Message)
			}).WithTimeout(time.Minute).Should(Succeed())
		}
		expectKept(ctx)
		restore()
	})
})

// rawHead opens the clone w for rawgit and returns its HEAD commit and root tree.
func rawHead(w string) (*rawgit.Must, plumbing.Hash, *object.Tree) {
	GinkgoHelper()
	repo, err := gogit.PlainOpen(w)
	Expect(err).NotTo(HaveOccurred())
	head, err := repo.Head()
	Expect(err).NotTo(HaveOccurred())
	c, err := repo.CommitObject(head.Hash())
	Expect(err).NotTo(HaveOccurred())
	root, err := c.Tree()
	Expect(err).NotTo(HaveOccurred())
	return &rawgit.Must{T: GinkgoT(), Repo: &rawgit.Repo{Storer: repo.Storer}}, head.Hash(), root
}

// expectFilesInvalid waits until c's FilesValid condition is False and says want.
func expectFilesInvalid(ctx context.Context, c *cluster, want string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		cond := conditionOf(peeringRepository(ctx, g, c), gitpeerv1alpha1.FilesValidCondition)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Status).To(BeEquivalentTo("False"))
		g.Expect(cond.Message).To(ContainSubstring(want))
	}).WithTimeout(time.Minute).Should(Succeed())
}

// replaceTree returns a copy of tree t with the directory at path replaced by sub.
func replaceTree(raw *rawgit.Must, t *object.Tree, path []string, sub plumbing.Hash) plumbing.Hash {
	GinkgoHelper()
	var entries []object.TreeEntry
	for _, e := range t.Entries {
		if e.Name == path[0] {
			e.Hash = sub
			if len(path) > 1 {
				child, err := t.Tree(e.Name)
				Expect(err).NotTo(HaveOccurred())
				e.Hash = replaceTree(raw, child, path[1:], sub)
			}
		}
		entries = append(entries, e)
	}
	return raw.Tree(entries...)
}
