package compact_test

import (
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
