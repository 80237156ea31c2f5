// Package compact holds the small forms the agent's informer cache keeps of
// the objects it holds thousands of: a typed object's fixed structs and maps
// cost more than the few fields the agent reads (measured: a cached
// corev1.Namespace holds ~1,400 B, most of it its ObjectMeta struct and two
// maps of ~340 B each, whatever their few entries).
//
// A compact object is what the cache's transform stores; the cache hands the
// reconciler full objects, for DeepCopyObject, which every read of the cache
// calls, returns one. Written by hand: client-go and controller-runtime store
// what the transform returns as it is, and no library provides a smaller
// object that inflates on read.
package compact

import (
	"maps"
	"slices"
	"unique"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Namespace is the compact form of a corev1.Namespace: its name, UID,
// resourceVersion, generation, creation and deletion times, finalizers,
// labels and the annotations kept (the caller chooses). Its spec, status,
// owner references and managed fields are not kept: a Namespace read from
// the cache has none. Labels and annotations are key, value pairs in one
// slice (a map costs ~340 B however few its entries), their keys and the
// labels' values shared with equal strings of other cached objects.
//
// It is a client.Object so that the informer machinery (keys, indexes,
// label selectors, event handlers) works on it; its setters change what it
// keeps and ignore the rest.
type Namespace struct {
	name, resourceVersion string
	uid                   types.UID
	generation            int64
	created               metav1.Time
	deleted               *metav1.Time
	finalizers            []string
	labels, annotations   []string
}

// NewNamespace returns the compact form of ns, with the annotations of ns
// for which keep is true.
func NewNamespace(ns *corev1.Namespace, keep func(annotation string) bool) *Namespace {
	annotations := map[string]string{}
	for k, v := range ns.Annotations {
		if keep(k) {
			annotations[k] = v
		}
	}
	return &Namespace{
		name: intern(ns.Name), resourceVersion: ns.ResourceVersion, uid: ns.UID, generation: ns.Generation,
		created: ns.CreationTimestamp, deleted: ns.DeletionTimestamp, finalizers: slices.Clip(ns.Finalizers),
		labels: pairs(ns.Labels, true), annotations: pairs(annotations, false),
	}
}

// Full returns the corev1.Namespace n is the compact form of (without what n does not keep).
func (n *Namespace) Full() *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: n.name, ResourceVersion: n.resourceVersion, UID: n.uid, Generation: n.generation,
		CreationTimestamp: n.created, DeletionTimestamp: n.deleted.DeepCopy(), Finalizers: slices.Clone(n.finalizers),
		Labels: toMap(n.labels), Annotations: toMap(n.annotations),
	}}
}

// DeepCopyObject returns the full Namespace: what a read of the cache gets.
func (n *Namespace) DeepCopyObject() runtime.Object { return n.Full() }

// GetObjectKind has no kind, as the typed objects of the cache.
func (n *Namespace) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// GetNamespace is empty: a Namespace is cluster-scoped.
func (n *Namespace) GetNamespace() string { return "" }

// SetNamespace is ignored: a Namespace is cluster-scoped.
func (n *Namespace) SetNamespace(string) {}

// GetName returns the name.
func (n *Namespace) GetName() string { return n.name }

// SetName sets the name.
func (n *Namespace) SetName(name string) { n.name = intern(name) }

// GetGenerateName is empty: not kept.
func (n *Namespace) GetGenerateName() string { return "" }

// SetGenerateName is ignored: not kept.
func (n *Namespace) SetGenerateName(string) {}

// GetUID returns the UID.
func (n *Namespace) GetUID() types.UID { return n.uid }

// SetUID sets the UID.
func (n *Namespace) SetUID(uid types.UID) { n.uid = uid }

// GetResourceVersion returns the resourceVersion.
func (n *Namespace) GetResourceVersion() string { return n.resourceVersion }

// SetResourceVersion sets the resourceVersion.
func (n *Namespace) SetResourceVersion(v string) { n.resourceVersion = v }

// GetGeneration returns the generation.
func (n *Namespace) GetGeneration() int64 { return n.generation }

// SetGeneration sets the generation.
func (n *Namespace) SetGeneration(g int64) { n.generation = g }

// GetSelfLink is empty: not kept (the API server no longer sets it).
func (n *Namespace) GetSelfLink() string { return "" }

// SetSelfLink is ignored: not kept.
func (n *Namespace) SetSelfLink(string) {}

// GetCreationTimestamp returns the creation time.
func (n *Namespace) GetCreationTimestamp() metav1.Time { return n.created }

// SetCreationTimestamp sets the creation time.
func (n *Namespace) SetCreationTimestamp(t metav1.Time) { n.created = t }

// GetDeletionTimestamp returns the deletion time, nil if none.
func (n *Namespace) GetDeletionTimestamp() *metav1.Time { return n.deleted }

// SetDeletionTimestamp sets the deletion time.
func (n *Namespace) SetDeletionTimestamp(t *metav1.Time) { n.deleted = t }

// GetDeletionGracePeriodSeconds is nil: not kept.
func (n *Namespace) GetDeletionGracePeriodSeconds() *int64 { return nil }

// SetDeletionGracePeriodSeconds is ignored: not kept.
func (n *Namespace) SetDeletionGracePeriodSeconds(*int64) {}

// GetLabels returns a new map of the labels.
func (n *Namespace) GetLabels() map[string]string { return toMap(n.labels) }

// SetLabels sets the labels.
func (n *Namespace) SetLabels(labels map[string]string) { n.labels = pairs(labels, true) }

// GetAnnotations returns a new map of the annotations kept.
func (n *Namespace) GetAnnotations() map[string]string { return toMap(n.annotations) }

// SetAnnotations sets the annotations.
func (n *Namespace) SetAnnotations(annotations map[string]string) {
	n.annotations = pairs(annotations, false)
}

// GetFinalizers returns the finalizers.
func (n *Namespace) GetFinalizers() []string { return n.finalizers }

// SetFinalizers sets the finalizers.
func (n *Namespace) SetFinalizers(finalizers []string) { n.finalizers = finalizers }

// GetOwnerReferences is nil: not kept.
func (n *Namespace) GetOwnerReferences() []metav1.OwnerReference { return nil }

// SetOwnerReferences is ignored: not kept.
func (n *Namespace) SetOwnerReferences([]metav1.OwnerReference) {}

// GetManagedFields is nil: not kept.
func (n *Namespace) GetManagedFields() []metav1.ManagedFieldsEntry { return nil }

// SetManagedFields is ignored: not kept.
func (n *Namespace) SetManagedFields([]metav1.ManagedFieldsEntry) {}

// pairs returns m as key, value pairs sorted by key, its keys interned, and
// its values if values; nil if m is empty.
func pairs(m map[string]string, values bool) []string {
	if len(m) == 0 {
		return nil
	}
	out := make([]string, 0, 2*len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v := m[k]
		if values {
			v = intern(v)
		}
		out = append(out, intern(k), v)
	}
	return out
}

// toMap returns the map of key, value pairs p; nil if p is empty.
func toMap(p []string) map[string]string {
	if len(p) == 0 {
		return nil
	}
	m := make(map[string]string, len(p)/2)
	for i := 0; i < len(p); i += 2 {
		m[p[i]] = p[i+1]
	}
	return m
}

// intern returns the string equal to s that other cached objects hold.
func intern(s string) string {
	if s == "" {
		return s
	}
	return unique.Make(s).Value()
}
