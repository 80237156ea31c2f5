package e2e

import (
	gocrypto "crypto"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/test/liqo"
	"github.com/gitpeer/gitpeer/test/liqoreal"
)

// The provider in Liqo mode on Liqo's own authentication module (v1.2.0, the
// liqo-auth-harness of test/liqotools) instead of the double: Liqo's nonce
// creator, tenant controller and Tenant webhooks react to what gitpeer
// creates, and the consumer, simulated as in "Liqo provider", gets a working
// identity.
var _ = Describe("Liqo provider on the real Liqo", Ordered, func() {
	const providerID, consumerID = "real-p", "real-c"
	var provider *cluster
	var liqoKey gocrypto.Signer
	dir := providerID + "/" + consumerID + "/"

	BeforeAll(func(ctx SpecContext) {
		provider = newCluster(providerID)
		h := must(liqoreal.Start(ctx, provider.cp, GinkgoT().TempDir(), liqoreal.Options{ClusterID: providerID, APIServer: provider.cp.URL}))
		DeferCleanup(h.Stop)
		applyLiqoProvider(provider)
		provider.startAgent()
		liqoKey = newClusterKey()
	})

	It("runs one handshake: Liqo fills the nonce, approves the Tenant, and the consumer's identity works", func(ctx SpecContext) {
		commit("Request peering of "+consumerID, map[string][]byte{dir + "request.yaml": requestFor(providerID, consumerID, liqoKey)})
		nonce := waitNonceAt(dir, "")
		tenant := must(protocol.NewTenant(consumerID, liqoKey, nonce))
		commit("Merge pull request: Tenant of "+consumerID, map[string][]byte{dir + "tenant.yaml": tenantDoc(tenant)})

		id := waitIdentity(dir, "")
		kubeconfig := must(crypto.BuildKubeconfig(crypto.KubeconfigParams{ProviderClusterID: providerID, IdentityName: id.Name,
			Namespace: *id.Spec.Namespace, APIServer: id.Spec.AuthParams.APIServer, CA: id.Spec.AuthParams.CA,
			Certificate: id.Spec.AuthParams.SignedCRT, Key: liqoKey}))
		cs := clientFor(kubeconfig)
		review := must(cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{}))
		Expect(review.Status.UserInfo.Username).To(Equal(consumerID))
		Expect(can(ctx, cs, "create", "authentication.liqo.io", "resourceslices", authv1beta1.TenantNamespaceName(consumerID))).To(BeTrue())

		By("the same Identity and RoleBinding as the double gives (test/liqo)")
		applied := &authv1beta1.Tenant{}
		Expect(provider.k8s.Get(ctx, client.ObjectKey{Namespace: authv1beta1.TenantNamespaceName(consumerID), Name: consumerID}, applied)).To(Succeed())
		want := must(liqo.GenerateIdentity(applied, providerID))
		Expect(id.Name).To(Equal(want.Name))
		Expect(id.Spec).To(Equal(want.Spec))
		Expect(roleBindings(ctx, provider, authv1beta1.TenantNamespaceName(consumerID))).To(ConsistOf(liqo.TenantRoleBinding))
	})
})
