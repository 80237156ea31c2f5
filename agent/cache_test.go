package agent

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"testing"
	"time"
	"unsafe"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/wait"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitpeer/gitpeer/apis"
	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	"github.com/gitpeer/gitpeer/reconciler/compact"
	"github.com/gitpeer/gitpeer/test/controlplane"
	"github.com/gitpeer/gitpeer/test/crdinstall"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// TestCacheHoldsOnlyLabelledCSRs runs the agent's cache options against a
// real API server: the metadata cache of CSRs holds only the CSRs labelled
// for a consumer by a PeeringRepository, with only those two labels (and its
// name and resourceVersion).
func TestCacheHoldsOnlyLabelledCSRs(t *testing.T) {
	cp := controlplane.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	opts := cacheOptions("")
	opts.Scheme = apis.NewScheme()
	c, err := cache.New(cp.Config, opts)
	if err != nil {
		t.Fatal(err)
	}
	k8s, err := client.New(cp.Config, client.Options{Scheme: opts.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	own := newCSR(t, "own", map[string]string{vocabulary.ConsumerLabel: "c1", vocabulary.OwnerLabel: "uid-1", "other": "x"})
	own.Annotations = map[string]string{vocabulary.TenantSignatureAnnotation: "abc"}
	for _, csr := range []*certificatesv1.CertificateSigningRequest{own, newCSR(t, "kubelet", nil), newCSR(t, "no-owner", map[string]string{vocabulary.ConsumerLabel: "c1"})} {
		if err := k8s.Create(ctx, csr); err != nil {
			t.Fatal(err)
		}
	}
	// The agent's cache reads only informers started with it (the manager's watches): start this one.
	csrMeta := &metav1.PartialObjectMetadata{}
	csrMeta.SetGroupVersionKind(certificatesv1.SchemeGroupVersion.WithKind("CertificateSigningRequest"))
	if _, err := c.GetInformer(ctx, csrMeta); err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("the cache did not start")
	}
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(certificatesv1.SchemeGroupVersion.WithKind("CertificateSigningRequestList"))
	if err := c.List(ctx, list); err != nil { // blocks until the informer has synced
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Name != "own" {
		t.Fatalf("cached CSRs: %v; want only own", names(list.Items))
	}
	got := list.Items[0]
	want := map[string]string{vocabulary.ConsumerLabel: "c1", vocabulary.OwnerLabel: "uid-1"}
	if len(got.Labels) != len(want) || got.Labels[vocabulary.ConsumerLabel] != "c1" || got.Labels[vocabulary.OwnerLabel] != "uid-1" || got.Annotations != nil || got.UID != "" {
		t.Errorf("cached CSR: labels %v, annotations %v, UID %q; want labels %v, no annotations, no UID", got.Labels, got.Annotations, got.UID, want)
	}
}

// TestCacheKeepsWhatTheAgentReads runs the agent's cache options against a
// real API server: a cached Namespace, Tenant and RoleBinding equal the API
// server's, all but the managed fields, a Namespace's spec and status, owner
// references and annotations but gitpeer's, which compactTransform drops (the
// agent never reads them). A RoleBinding updated from the cache keeps what
// others set on it; a List by label finds the Namespace, one in a namespace
// its RoleBindings, but fails for Tenants (newInformer).
func TestCacheKeepsWhatTheAgentReads(t *testing.T) {
	cp := controlplane.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	scheme := apis.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	k8s, err := client.New(cp.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	if err := crdinstall.Install(ctx, k8s); err != nil {
		t.Fatal(err)
	}
	caKey, ca := selfSigned(t, "ca")
	if err := createPeering(ctx, k8s, 1, "owner-uid", caKey, ca); err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{}
	if err := k8s.Get(ctx, client.ObjectKey{Name: authv1beta1.TenantNamespaceName("consumer-00001-7f3a9c2e")}, ns); err != nil {
		t.Fatal(err)
	}
	// Someone else's owner reference and annotation are dropped from a
	// Namespace (only patched), kept on a RoleBinding (updated).
	owner := &corev1.Namespace{} // an owner that exists: the garbage collector deletes the dependents of others
	if err := k8s.Get(ctx, client.ObjectKey{Name: "default"}, owner); err != nil {
		t.Fatal(err)
	}
	foreign := []metav1.OwnerReference{{APIVersion: "v1", Kind: "Namespace", Name: owner.Name, UID: owner.UID}}
	ns.Annotations["example.com/note"] = "dropped"
	ns.OwnerReferences = foreign
	if err := k8s.Update(ctx, ns); err != nil {
		t.Fatal(err)
	}
	rbKey := client.ObjectKey{Namespace: ns.Name, Name: authv1beta1.RoleBindingName("liqo-remote-controlplane")}
	rb := &rbacv1.RoleBinding{}
	if err := k8s.Get(ctx, rbKey, rb); err != nil {
		t.Fatal(err)
	}
	rb.Annotations = map[string]string{"example.com/note": "kept"}
	rb.OwnerReferences = foreign
	if err := k8s.Update(ctx, rb); err != nil {
		t.Fatal(err)
	}
	opts := cacheOptions("")
	opts.Scheme = scheme
	c, err := cache.New(cp.Config, opts)
	if err != nil {
		t.Fatal(err)
	}
	objs := []client.Object{ns, &authv1beta1.Tenant{}, &rbacv1.RoleBinding{}}
	for _, obj := range objs {
		if _, err := c.GetInformer(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("the cache did not start")
	}
	key := client.ObjectKey{Namespace: ns.Name}
	for _, want := range []client.Object{&corev1.Namespace{}, &authv1beta1.Tenant{}, &rbacv1.RoleBinding{}} {
		switch want.(type) {
		case *corev1.Namespace:
			key = client.ObjectKey{Name: ns.Name}
		case *authv1beta1.Tenant:
			key = client.ObjectKey{Namespace: ns.Name, Name: "consumer-00001-7f3a9c2e"}
		case *rbacv1.RoleBinding:
			key = rbKey
		}
		if err := k8s.Get(ctx, key, want); err != nil {
			t.Fatal(err)
		}
		got := want.DeepCopyObject().(client.Object)
		if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			return c.Get(ctx, key, got) == nil && got.GetResourceVersion() == want.GetResourceVersion(), nil
		}); err != nil {
			t.Fatalf("%T %s not cached: %v", want, key, err)
		}
		want.SetManagedFields(nil)
		got.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{}) // the client clears it, the cache not
		if n, ok := want.(*corev1.Namespace); ok {
			if n.Spec.Finalizers == nil || n.Status.Phase == "" {
				t.Fatalf("the API server's namespace has no finalizers or phase: %+v", n)
			}
			n.Spec, n.Status = corev1.NamespaceSpec{}, corev1.NamespaceStatus{}
			if len(n.Annotations) != 3 || len(n.OwnerReferences) != 1 {
				t.Fatalf("the API server's namespace has not three annotations and an owner reference: %+v", n.ObjectMeta)
			}
			delete(n.Annotations, "example.com/note")
			n.OwnerReferences = nil
		}
		if !equality.Semantic.DeepEqual(got, want) {
			t.Errorf("cached %T differs from the API server's:\n%s", want, diff.Diff(want, got))
		}
	}
	// The agent updates a RoleBinding read from the cache (CreateOrUpdate): what others set stays.
	if err := c.Get(ctx, rbKey, rb); err != nil {
		t.Fatal(err)
	}
	rb.Labels["example.com/label"] = "new"
	if err := k8s.Update(ctx, rb); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Get(ctx, rbKey, rb); err != nil || rb.Annotations["example.com/note"] != "kept" || len(rb.OwnerReferences) != 1 || rb.Labels["example.com/label"] != "new" {
		t.Errorf("RoleBinding updated from the cache: %+v, %v; want others' annotation and owner reference kept", rb.ObjectMeta, err)
	}
	var listed corev1.NamespaceList
	if err := c.List(ctx, &listed, client.MatchingLabels{vocabulary.OwnerLabel: "owner-uid"}); err != nil || len(listed.Items) != 1 || listed.Items[0].Name != ns.Name {
		t.Errorf("namespaces listed by owner label: %v, %v; want %s", listed.Items, err, ns.Name)
	}
	// The agent lists RoleBindings in a tenant namespace (syncBinding), and
	// reads Tenants by name only: their informer indexes no namespace.
	var bindings rbacv1.RoleBindingList
	if err := c.List(ctx, &bindings, client.InNamespace(ns.Name)); err != nil || len(bindings.Items) != 1 {
		t.Errorf("RoleBindings listed in %s: %d, %v; want 1", ns.Name, len(bindings.Items), err)
	}
	if err := c.List(ctx, &authv1beta1.TenantList{}, client.InNamespace(ns.Name)); err == nil {
		t.Error("Tenants listed in a namespace from the cache: want an error, their informer keeps no index of namespaces")
	}
}

// TestNamespaceAnnotationsRead lists the annotations the agent reads on a
// Namespace: compactTransform keeps them (isGitpeerAnnotation).
func TestNamespaceAnnotationsRead(t *testing.T) {
	for _, k := range []string{vocabulary.ModeAnnotation, vocabulary.PinnedKeyAnnotation, vocabulary.PinnedCAAnnotation, vocabulary.PinnedProviderAnnotation, vocabulary.RevokedAnnotation} {
		if !isGitpeerAnnotation(k) || isGitpeerAnnotation("example.com/"+k) {
			t.Errorf("%s: not kept, or example.com/%[1]s kept", k)
		}
	}
}

// TestCompactTransform checks that objects decoded apart hold the same
// strings for equal labels, annotation keys, names, namespaces, a Tenant's
// spec and status strings and a RoleBinding's role and subject, and the same
// CA bytes in their Tenant status, without managed fields; a Namespace is
// held in compact form, without spec, status nor others' annotations, a
// Tenant and a RoleBinding in compact form, whole; values stay equal.
func TestCompactTransform(t *testing.T) {
	transform := compactTransform()
	clone := func(s string) string { return string([]byte(s)) } // as decoded: a string of its own
	meta := func() metav1.ObjectMeta {
		return metav1.ObjectMeta{
			Name: clone("c1"), Namespace: clone("liqo-tenant-c1"),
			Labels:        map[string]string{clone(vocabulary.OwnerLabel): clone("uid-1")},
			Annotations:   map[string]string{clone("note"): clone("free text")},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "gitpeer"}},
		}
	}
	tenant := func() *authv1beta1.Tenant {
		return &authv1beta1.Tenant{ObjectMeta: meta(),
			Spec: authv1beta1.TenantSpec{ClusterID: authv1beta1.ClusterID(clone("c1")), TenantCondition: authv1beta1.TenantCondition(clone("Active"))},
			Status: authv1beta1.TenantStatus{TenantNamespace: clone("liqo-tenant-c1"), AuthParams: &authv1beta1.AuthParams{
				CA: []byte("-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n"), APIServer: clone("https://k8s")}},
		}
	}
	binding := func() *rbacv1.RoleBinding {
		return &rbacv1.RoleBinding{ObjectMeta: meta(),
			RoleRef:  rbacv1.RoleRef{APIGroup: clone(rbacv1.GroupName), Kind: clone("ClusterRole"), Name: clone("role")},
			Subjects: []rbacv1.Subject{{APIGroup: clone(rbacv1.GroupName), Kind: clone(rbacv1.UserKind), Name: clone("c1")}},
		}
	}
	inputs := []*authv1beta1.Tenant{tenant(), tenant()}
	tenants := []*authv1beta1.Tenant{cachedAs[*compact.Tenant](t, transform, inputs[0]).Full(), cachedAs[*compact.Tenant](t, transform, inputs[1]).Full()}
	// The transform shares the CA of the Tenant it compacts (the compact form keeps it).
	if &inputs[0].Status.AuthParams.CA[0] != &inputs[1].Status.AuthParams.CA[0] {
		t.Error("equal CAs are not shared")
	}
	a, b := tenants[0], tenants[1]
	rb1, rb2 := cachedAs[*compact.RoleBinding](t, transform, binding()).Full(), cachedAs[*compact.RoleBinding](t, transform, binding()).Full()
	for _, o := range []client.Object{a, b, rb1, rb2} {
		if o.GetManagedFields() != nil || o.GetLabels()[vocabulary.OwnerLabel] != "uid-1" || o.GetName() != "c1" || o.GetAnnotations()["note"] != "free text" {
			t.Fatalf("transformed: %+v", o)
		}
	}
	nsMeta := meta()
	nsMeta.Name, nsMeta.Namespace = clone("liqo-tenant-c1"), ""
	nsMeta.Annotations[vocabulary.ModeAnnotation] = "gitpeer"
	out, err := transform(&corev1.Namespace{ObjectMeta: nsMeta, Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"kubernetes"}},
		Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}})
	if err != nil {
		t.Fatal(err)
	}
	cached, ok := out.(*compact.Namespace)
	if !ok {
		t.Fatalf("a Namespace is cached as %T", out)
	}
	if again, _ := transform(cached); again != cached {
		t.Error("a compact Namespace transformed again changed")
	}
	namespace := cached.Full()
	if namespace.Spec.Finalizers != nil || namespace.Status.Phase != "" || len(namespace.Annotations) != 1 || namespace.Annotations[vocabulary.ModeAnnotation] != "gitpeer" ||
		namespace.Labels[vocabulary.OwnerLabel] != "uid-1" || namespace.ManagedFields != nil {
		t.Errorf("cached namespace: %+v; want only the owner label and gitpeer's annotation", namespace)
	}
	same := func(x, y string) bool { return x == y && unsafe.StringData(x) == unsafe.StringData(y) }
	for _, pair := range [][2]string{
		{a.Labels[vocabulary.OwnerLabel], b.Labels[vocabulary.OwnerLabel]}, {key(a.Labels), key(b.Labels)}, {key(a.Annotations), key(b.Annotations)},
		{a.Name, b.Name}, {a.Name, string(a.Spec.ClusterID)}, {a.Name, rb1.Subjects[0].Name}, {a.Namespace, b.Namespace},
		{a.Namespace, a.Status.TenantNamespace}, {a.Namespace, rb1.Namespace}, {a.Namespace, namespace.Name}, {a.Labels[vocabulary.OwnerLabel], namespace.Labels[vocabulary.OwnerLabel]},
		{string(a.Spec.TenantCondition), string(b.Spec.TenantCondition)}, {a.Status.AuthParams.APIServer, b.Status.AuthParams.APIServer},
		{rb1.RoleRef.APIGroup, rb2.Subjects[0].APIGroup}, {rb1.RoleRef.Kind, rb2.RoleRef.Kind}, {rb1.RoleRef.Name, rb2.RoleRef.Name},
		{rb1.Subjects[0].Kind, rb2.Subjects[0].Kind},
	} {
		if !same(pair[0], pair[1]) {
			t.Errorf("%q and %q are not shared", pair[0], pair[1])
		}
	}
}

func key(m map[string]string) string {
	for k := range m {
		return k
	}
	return ""
}

func names(items []metav1.PartialObjectMetadata) []string {
	var out []string
	for _, o := range items {
		out = append(out, o.Name)
	}
	return out
}

// newCSR is a valid kube-apiserver-client CSR named name with labels.
func newCSR(t *testing.T, name string, labels map[string]string) *certificatesv1.CertificateSigningRequest {
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: name}}, key)
	if err != nil {
		t.Fatal(err)
	}
	return &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: certificatesv1.KubeAPIServerClientSignerName,
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth},
		},
	}
}

// cachedAs is what transform caches of in, which must be a T.
func cachedAs[T any](t *testing.T, transform toolscache.TransformFunc, in any) T {
	t.Helper()
	out, err := transform(in)
	if err != nil {
		t.Fatal(err)
	}
	cached, ok := out.(T)
	if !ok {
		t.Fatalf("a %T is cached as %T", in, out)
	}
	return cached
}
