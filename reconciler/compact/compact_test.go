package compact_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"reflect"
	"runtime"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	"github.com/gitpeer/gitpeer/reconciler/compact"
)

// TestNamespace: the compact form gives back the Namespace's metadata, all
// but its owner references, managed fields and the annotations not kept, and
// neither its spec nor its status; what it gives back is a copy.
func TestNamespace(t *testing.T) {
	deleted := metav1.NewTime(time.Unix(2000, 0))
	full := &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{
			Name: "liqo-tenant-c1", UID: "uid", ResourceVersion: "42", Generation: 3,
			CreationTimestamp: metav1.NewTime(time.Unix(1000, 0)), DeletionTimestamp: &deleted, Finalizers: []string{"f"},
			Labels:          map[string]string{"a": "1", "b": "2"},
			Annotations:     map[string]string{"keep/x": "y", "drop/x": "z"},
			OwnerReferences: []metav1.OwnerReference{{Name: "o"}}, ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}},
		},
		Spec:   corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"kubernetes"}},
		Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating},
	}
	n := compact.NewNamespace(full, func(k string) bool { return k == "keep/x" })
	var obj client.Object = n // the informers need it
	if _, err := meta.Accessor(obj); err != nil {
		t.Fatal(err)
	}
	want := &corev1.Namespace{ObjectMeta: *full.ObjectMeta.DeepCopy()}
	want.Annotations = map[string]string{"keep/x": "y"}
	want.OwnerReferences, want.ManagedFields = nil, nil
	got := n.DeepCopyObject().(*corev1.Namespace)
	if !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("full form differs:\n%s", diff.Diff(want, got))
	}
	got.Labels["a"], got.Finalizers[0], got.DeletionTimestamp.Time = "changed", "changed", time.Time{}
	if again := n.Full(); !equality.Semantic.DeepEqual(again, want) {
		t.Errorf("changing a full form changed the compact one:\n%s", diff.Diff(want, again))
	}
	if n.GetName() != "liqo-tenant-c1" || n.GetNamespace() != "" || n.GetUID() != "uid" || n.GetResourceVersion() != "42" ||
		n.GetLabels()["b"] != "2" || n.GetAnnotations()["keep/x"] != "y" || n.GetDeletionTimestamp() == nil {
		t.Errorf("accessors: %+v", n)
	}
	n.SetLabels(map[string]string{"c": "3"})
	n.SetAnnotations(nil)
	n.SetResourceVersion("43")
	if l := n.GetLabels(); len(l) != 1 || l["c"] != "3" || n.GetAnnotations() != nil || n.GetResourceVersion() != "43" {
		t.Errorf("setters: %+v", n)
	}
}

// TestMetadata: the compact form of watched metadata keeps the name,
// namespace, resourceVersion and the labels named, nothing else.
func TestMetadata(t *testing.T) {
	m := compact.NewMetadata(&metav1.ObjectMeta{Name: "csr", Namespace: "ns", UID: "uid", ResourceVersion: "7",
		Labels: map[string]string{"keep": "1", "drop": "2"}, Annotations: map[string]string{"a": "b"}}, "keep", "absent")
	want := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "csr", Namespace: "ns", ResourceVersion: "7", Labels: map[string]string{"keep": "1"}}}
	if got := m.DeepCopyObject(); !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("full form differs:\n%s", diff.Diff(want, got))
	}
	if none := compact.NewMetadata(&metav1.ObjectMeta{Name: "x", Labels: map[string]string{"drop": "2"}}, "keep"); none.GetLabels() != nil {
		t.Errorf("labels kept: %v", none.GetLabels())
	}
}

// TestRoleBinding: the compact form gives back the whole RoleBinding but its
// managed fields, a copy.
func TestRoleBinding(t *testing.T) {
	full := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns", GenerateName: "b-", UID: "uid", ResourceVersion: "5",
			DeletionGracePeriodSeconds: ptr.To[int64](30), Labels: map[string]string{"l": "1"}, Annotations: map[string]string{"any/a": "x"},
			OwnerReferences: []metav1.OwnerReference{{Name: "o", Controller: ptr.To(true)}}, ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "r"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "c1"}},
	}
	b := compact.NewRoleBinding(full.DeepCopy())
	want := full.DeepCopy()
	want.ManagedFields = nil
	got := b.DeepCopyObject().(*rbacv1.RoleBinding)
	if !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("full form differs:\n%s", diff.Diff(want, got))
	}
	*got.OwnerReferences[0].Controller, *got.DeletionGracePeriodSeconds, got.Subjects[0].Name = false, 0, "changed"
	if again := b.Full(); !equality.Semantic.DeepEqual(again, want) {
		t.Errorf("changing a full form changed the compact one:\n%s", diff.Diff(want, again))
	}
	if b.GetNamespace() != "ns" || b.GetGenerateName() != "b-" || len(b.GetOwnerReferences()) != 1 || *b.GetDeletionGracePeriodSeconds() != 30 {
		t.Errorf("accessors: %+v", b)
	}
}

// TestTenant: the compact form gives back the whole Tenant but its managed
// fields, byte for byte (PEM kept as DER only when it encodes back the
// same), a copy; it is smaller than the Tenant.
func TestTenant(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		t.Fatal(err)
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	csrPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: bytes.Repeat([]byte{7}, 700)})
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: bytes.Repeat([]byte{9}, 900)})
	policy := authv1beta1.KeysExchange
	full := &authv1beta1.Tenant{
		ObjectMeta: metav1.ObjectMeta{Name: "c1", Namespace: "liqo-tenant-c1", UID: "uid", ResourceVersion: "9",
			Labels: map[string]string{"l": "1"}, Annotations: map[string]string{"any/a": "x"},
			OwnerReferences: []metav1.OwnerReference{{Name: "o"}}, ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}}},
		Spec: authv1beta1.TenantSpec{ClusterID: "c1", AuthzPolicy: &policy, PublicKey: keyPEM, CSR: csrPEM, Signature: []byte("sig"),
			ProxyURL: ptr.To("http://proxy"), TenantCondition: authv1beta1.TenantConditionActive},
		Status: authv1beta1.TenantStatus{TenantNamespace: "liqo-tenant-c1", AuthParams: &authv1beta1.AuthParams{
			CA: []byte("ca"), SignedCRT: certPEM, APIServer: "https://p:6443", ProxyURL: ptr.To("http://proxy"),
			AwsConfig: &authv1beta1.AwsConfig{AwsRegion: "r"}}},
	}
	odd := []struct {
		name string
		b    []byte
	}{
		{"empty", []byte{}},
		{"not PEM", []byte("raw bytes")},
		{"two blocks", append(slices.Clone(certPEM), certPEM...)},
		{"text before", append([]byte("junk\n"), certPEM...)},
		{"no final newline", certPEM[:len(certPEM)-1]},
		{"headers", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Headers: map[string]string{"h": "v"}, Bytes: []byte{1}})},
		{"no type", []byte("-----BEGIN -----\nAQID\n-----END -----\n")},
		{"long lines", []byte("-----BEGIN CERTIFICATE-----\n" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{3}, 90)) + "\n-----END CERTIFICATE-----\n")},
	}
	cases := []*authv1beta1.Tenant{full, {ObjectMeta: metav1.ObjectMeta{Name: "bare"}}}
	for _, o := range odd {
		c := full.DeepCopy()
		c.Name, c.Spec.CSR, c.Status.AuthParams.SignedCRT, c.Spec.PublicKey = o.name, o.b, o.b, o.b
		cases = append(cases, c)
	}
	for _, tc := range cases {
		want := tc.DeepCopy()
		want.ManagedFields = nil
		c := compact.NewTenant(tc.DeepCopy())
		got := c.DeepCopyObject().(*authv1beta1.Tenant)
		if !equality.Semantic.DeepEqual(got, want) || !reflect.DeepEqual(got.Spec, want.Spec) || !reflect.DeepEqual(got.Status, want.Status) {
			t.Errorf("%s: full form differs:\n%s", tc.Name, diff.Diff(want, got))
			continue
		}
		if len(got.Spec.CSR) > 0 {
			got.Spec.CSR[0], got.Spec.Signature[0], got.Status.AuthParams.SignedCRT[0], *got.Spec.ProxyURL = 'X', 'X', 'X', "changed"
			if again := c.Full(); !reflect.DeepEqual(again.Spec, want.Spec) || !reflect.DeepEqual(again.Status, want.Status) {
				t.Errorf("%s: changing a full form changed the compact one:\n%s", tc.Name, diff.Diff(want, again))
			}
		}
	}
	retained := func(f func() any) uint64 {
		const n = 1000
		kept := make([]any, n)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := range kept {
			kept[i] = f()
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(kept)
		return (after.HeapAlloc - before.HeapAlloc) / n
	}
	typed := retained(func() any { return full.DeepCopy() })
	small := retained(func() any { return compact.NewTenant(full.DeepCopy()) })
	t.Logf("retained per Tenant: typed %d B, compact %d B", typed, small)
	if small >= typed*4/5 {
		t.Errorf("compact Tenant retains %d B, the typed one %d B", small, typed)
	}
}
