package e2e

import (
	"context"
	gocrypto "crypto"
	"crypto/x509"
	"encoding/base64"
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
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	"github.com/gitpeer/gitpeer/crypto"
	planner "github.com/gitpeer/gitpeer/reconciler/plan/provider"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/test/liqo"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// The provider in Liqo mode on Liqo's own authentication module (v1.2.0, the
// liqo-auth-harness of test/liqotools): Liqo's nonce
// creator, tenant controller and Tenant webhooks react to what gitpeer
// creates, and the consumer, simulated as in "Liqo provider", gets a working
// identity.
var _ = Describe("Liqo provider on the real Liqo", Ordered, func() {
	const providerID, consumerID = "real-p", "real-c"
	var provider *cluster
	var liqoKey gocrypto.Signer
	var kubeconfig []byte
	var serials []string // every certificate Liqo issued to the consumer
	dir := providerID + "/" + consumerID + "/"
	tenantNS := authv1beta1.TenantNamespaceName(consumerID)

	BeforeAll(func(ctx SpecContext) {
		provider = startRealLiqoProvider(ctx, providerID)
		liqoKey = newClusterKey()
	})

	It("runs one handshake: Liqo fills the nonce, approves the Tenant, and the consumer's identity works", func(ctx SpecContext) {
		commit("Request peering of "+consumerID, map[string][]byte{dir + "request.yaml": requestFor(providerID, consumerID, liqoKey)})
		nonce := waitNonceAt(dir, "")
		tenant := must(protocol.NewTenant(consumerID, liqoKey, nonce))
		commit("Merge pull request: Tenant of "+consumerID, map[string][]byte{dir + "tenant.yaml": tenantDoc(tenant)})

		id := waitIdentity(dir, "")
		kubeconfig = must(crypto.BuildKubeconfig(crypto.KubeconfigParams{ProviderClusterID: providerID, IdentityName: id.Name,
			Namespace: *id.Spec.Namespace, APIServer: id.Spec.AuthParams.APIServer, CA: id.Spec.AuthParams.CA,
			Certificate: id.Spec.AuthParams.SignedCRT, Key: liqoKey}))
		cs := clientFor(kubeconfig)
		review := must(cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{}))
		Expect(review.Status.UserInfo.Username).To(Equal(consumerID))
		Expect(can(ctx, cs, "create", "authentication.liqo.io", "resourceslices", authv1beta1.TenantNamespaceName(consumerID))).To(BeTrue())

		By("the Identity liqoctl generate identity makes of the Tenant, and Liqo's RoleBinding")
		applied := &authv1beta1.Tenant{}
		Expect(provider.k8s.Get(ctx, client.ObjectKey{Namespace: authv1beta1.TenantNamespaceName(consumerID), Name: consumerID}, applied)).To(Succeed())
		want := must(liqo.GenerateIdentity(applied, providerID))
		Expect(id.Name).To(Equal(want.Name))
		Expect(id.Spec).To(Equal(want.Spec))
		Expect(roleBindings(ctx, provider, authv1beta1.TenantNamespaceName(consumerID))).To(ConsistOf(liqo.TenantRoleBinding))
		serials = append(serials, must(crypto.ParseCertificatePEM(id.Spec.AuthParams.SignedCRT)).SerialNumber.Text(16))
	})

	It("revokes everything Liqo issued or bound: slice certificates, their caches, ResourceSlices, NamespaceMaps, bindings", func(ctx SpecContext) {
		By("the consumer's control plane creates a ResourceSlice and a NamespaceMap in its tenant namespace, as Liqo's CRD replicator does")
		dyn := must(dynamic.NewForConfig(must(clientcmd.RESTConfigFromKubeConfig(kubeconfig))))
		const sliceName = "slice-1"
		slice := replicated(resourceSliceGVR, consumerID, providerID, tenantNS, sliceName, map[string]any{
			"consumerClusterID": consumerID, "providerClusterID": providerID, "class": "default",
			"csr": base64.StdEncoding.EncodeToString(must(liqo.ResourceSliceCSR(liqoKey, sliceName, consumerID))),
		})
		must(dyn.Resource(resourceSliceGVR).Namespace(tenantNS).Create(ctx, slice, metav1.CreateOptions{}))
		nsMap := replicated(namespaceMapGVR, consumerID, providerID, tenantNS, consumerID+"-map", map[string]any{})
		must(dyn.Resource(namespaceMapGVR).Namespace(tenantNS).Create(ctx, nsMap, metav1.CreateOptions{}))

		By("Liqo's remote ResourceSlice controller issues the slice certificate (CN <slice>-<hash>, O <consumer>) and caches it")
		var sliceCert *x509.Certificate
		Eventually(func(g Gomega) {
			got := must(dyn.Resource(resourceSliceGVR).Namespace(tenantNS).Get(ctx, sliceName, metav1.GetOptions{}))
			crt, _, _ := unstructured.NestedString(got.Object, "status", "authParams", "signedCRT")
			g.Expect(crt).NotTo(BeEmpty())
			pem := must(base64.StdEncoding.DecodeString(crt))
			sliceCert = must(crypto.ParseCertificatePEM(pem))
		}).WithTimeout(time.Minute).Should(Succeed())
		Expect(sliceCert.Subject.Organization).To(ConsistOf(consumerID))
		serials = append(serials, sliceCert.SerialNumber.Text(16))
		Expect(provider.k8s.Get(ctx, client.ObjectKey{Namespace: tenantNS, Name: planner.LiqoCertificateCache + "-" + sliceName}, &corev1.Secret{})).To(Succeed())
		Expect(bindingsNaming(ctx, provider, consumerID)).NotTo(BeEmpty(), "Liqo bound the consumer's user and group")

		By("another consumer's tenant namespace holds a NamespaceMap labelled as replicated from the consumer, as Liqo's Drained finds it; so does a namespace that is no tenant's")
		otherNS, elsewhereNS := authv1beta1.TenantNamespaceName("real-d"), "real-elsewhere"
		for _, ns := range []string{otherNS, elsewhereNS} {
			Expect(provider.k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
			Expect(provider.k8s.Create(ctx, replicated(namespaceMapGVR, consumerID, providerID, ns, consumerID+"-map", map[string]any{}))).To(Succeed())
		}

		By("tenant.yaml leaves the branch")
		revokeByGit(dir, consumerID)

		Eventually(func() []string { return bindingsNaming(ctx, provider, consumerID) }).WithTimeout(time.Minute).Should(BeEmpty())
		Eventually(func() []string { return liqoCaches(ctx, provider, tenantNS, sliceName) }).WithTimeout(time.Minute).Should(BeEmpty())
		Consistently(func() []string { return liqoCaches(ctx, provider, tenantNS, sliceName) }).WithTimeout(10*time.Second).Should(BeEmpty(),
			"no cache comes back: the slice's was deleted once the slice was gone, and Liqo's ResourceSlice controller writes one only while its slice exists")
		for _, gvr := range []schema.GroupVersionResource{resourceSliceGVR, namespaceMapGVR} {
			Eventually(func(g Gomega) []string {
				list := &unstructured.UnstructuredList{}
				list.SetGroupVersionKind(gvr.GroupVersion().WithKind(kinds[gvr.Resource] + "List"))
				g.Expect(provider.k8s.List(ctx, list)).To(Succeed())
				var left []string
				for _, obj := range list.Items {
					left = append(left, obj.GetNamespace())
				}
				return left
			}).WithTimeout(time.Minute).Should(ConsistOf(map[bool][]string{true: {elsewhereNS}}[gvr == namespaceMapGVR]), gvr.Resource+
				": drained in every tenant namespace, the other consumer's included; left only outside tenant namespaces, where the agent may not delete")
		}
		expectEvent(ctx, provider, vocabulary.ReasonLiqoObjectsOutsideTenantNamespaces, "NamespaceMap "+elsewhereNS+"/"+consumerID+"-map")
		Eventually(func(g Gomega) {
			g.Expect(revokedSerials(ctx, provider, consumerID)).To(ContainElements(serials))
		}).WithTimeout(time.Minute).Should(Succeed())
	})
})

var (
	resourceSliceGVR = schema.GroupVersionResource{Group: "authentication.liqo.io", Version: "v1beta1", Resource: "resourceslices"}
	namespaceMapGVR  = schema.GroupVersionResource{Group: "offloading.liqo.io", Version: "v1beta1", Resource: "namespacemaps"}
	kinds            = map[string]string{"resourceslices": "ResourceSlice", "namespacemaps": "NamespaceMap"}
)

// replicated is an object of gvr as Liqo's CRD replicator writes it in the
// provider's tenant namespace for the consumer (its origin and replicated
// labels: liqotech/liqo v1.2.0 pkg/consts/replication.go).
func replicated(gvr schema.GroupVersionResource, consumer, provider, ns, name string, spec map[string]any) *unstructured.Unstructured {
	kind := kinds[gvr.Resource]
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gvr.GroupVersion().String(), "kind": kind,
		"metadata": map[string]any{"namespace": ns, "name": name, "labels": map[string]any{
			"liqo.io/originID": consumer, "liqo.io/remoteID": provider, "liqo.io/replicated": "true",
		}},
		"spec": spec,
	}}
}

// bindingsNaming lists the RoleBindings and ClusterRoleBindings of the
// cluster that name subject as a User or a Group.
func bindingsNaming(ctx context.Context, c *cluster, subject string) []string {
	GinkgoHelper()
	names := func(kind, ns, name string, subjects []rbacv1.Subject) []string {
		for _, s := range subjects {
			if (s.Kind == rbacv1.UserKind || s.Kind == rbacv1.GroupKind) && s.Name == subject {
				return []string{kind + " " + ns + "/" + name}
			}
		}
		return nil
	}
	var out []string
	var rbs rbacv1.RoleBindingList
	Expect(c.k8s.List(ctx, &rbs)).To(Succeed())
	for _, rb := range rbs.Items {
		out = append(out, names("RoleBinding", rb.Namespace, rb.Name, rb.Subjects)...)
	}
	var crbs rbacv1.ClusterRoleBindingList
	Expect(c.k8s.List(ctx, &crbs)).To(Succeed())
	for _, crb := range crbs.Items {
		out = append(out, names("ClusterRoleBinding", "", crb.Name, crb.Subjects)...)
	}
	return out
}

// liqoCaches lists which of Liqo's certificate caches, for the control plane
// and for the slices, remain in ns.
func liqoCaches(ctx context.Context, c *cluster, ns string, slices ...string) []string {
	GinkgoHelper()
	var out []string
	for _, name := range append([]string{""}, slices...) {
		name = strings.TrimSuffix(planner.LiqoCertificateCache+"-"+name, "-")
		err := c.k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &corev1.Secret{})
		if !apierrors.IsNotFound(err) {
			out = append(out, name)
		}
	}
	return out
}

// revokedSerials lists the serials the provider's records mark revoked for consumer.
func revokedSerials(ctx context.Context, c *cluster, consumer string) []string {
	GinkgoHelper()
	secret := &corev1.Secret{}
	Expect(c.k8s.Get(ctx, client.ObjectKey{Namespace: agentNamespace, Name: vocabulary.RecordsSecretName("peering", consumer)}, secret)).To(Succeed())
	records := must(vocabulary.DecodeRecords(secret, consumer))
	var out []string
	for _, r := range records.Certificates {
		if r.RevokedAt != nil {
			out = append(out, r.Serial)
		}
	}
	return out
}
