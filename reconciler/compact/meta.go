// Package compact holds the small forms the agent's informer cache keeps of
// the objects it holds thousands of: a typed object's fixed structs and maps
// cost more than the few fields the agent reads (measured: a cached
// corev1.Namespace held ~1,400 B, most of it its ObjectMeta struct and two
// maps of ~340 B each, whatever their few entries).
//
// A compact object is what the cache's transform stores; the cache hands the
// reconciler full objects: DeepCopyObject, which every read of the cache
// calls, returns one. Written by hand: client-go and controller-runtime store
// what the transform returns as it is, and no library provides a smaller
// object that inflates on read.
package compact

import (
	"maps"
	"slices"
	"unique"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// objectMeta is the metadata a compact object keeps: name, namespace, UID,
// resourceVersion, generation, creation and deletion times, finalizers,
// labels and annotations, and for an object kept whole (one the agent
// updates) its generateName, deletion grace period and owner references.
// Managed fields are not kept. Labels and annotations are key, value pairs in one slice (a map
// costs ~340 B however few its entries), their keys and the labels' values
// shared with equal strings of other cached objects.
//
// It makes a compact object a client.Object, so that the informer machinery
// (keys, indexes, label selectors, event handlers) works on it; its setters
// change what it keeps and ignore the rest.
type objectMeta struct {
	name, namespace, resourceVersion string
	uid                              types.UID
	generation                       int64
	created                          metav1.Time
	deleted                          *metav1.Time
	finalizers                       []string
	labels, annotations              []string
	rest                             *restMeta // nil unless kept whole, and there is some
}

// restMeta is the metadata of an object kept whole that the informers never
// read: kept for the full form the agent updates (an update without it would
// remove it).
type restMeta struct {
	generateName    string
	gracePeriod     *int64
	ownerReferences []metav1.OwnerReference
}

// newWholeMeta keeps of m all objectMeta can keep: all its annotations, and restMeta.
func newWholeMeta(m metav1.Object) objectMeta {
	o := newObjectMeta(m, func(string) bool { return true })
	if m.GetGenerateName() != "" || m.GetDeletionGracePeriodSeconds() != nil || len(m.GetOwnerReferences()) > 0 {
		o.rest = &restMeta{generateName: m.GetGenerateName(), gracePeriod: m.GetDeletionGracePeriodSeconds(), ownerReferences: m.GetOwnerReferences()}
	}
	return o
}

// newObjectMeta keeps of m what objectMeta keeps, and of its annotations those for which keep is true.
func newObjectMeta(m metav1.Object, keep func(annotation string) bool) objectMeta {
	annotations := map[string]string{}
	for k, v := range m.GetAnnotations() {
		if keep(k) {
			annotations[k] = v
		}
	}
	return objectMeta{
		name: Intern(m.GetName()), namespace: Intern(m.GetNamespace()), resourceVersion: m.GetResourceVersion(), uid: m.GetUID(),
		generation: m.GetGeneration(), created: m.GetCreationTimestamp(), deleted: m.GetDeletionTimestamp(),
		finalizers: slices.Clip(m.GetFinalizers()), labels: pairs(m.GetLabels(), true), annotations: pairs(annotations, false),
	}
}

// full returns the ObjectMeta o keeps, a copy.
func (o *objectMeta) full() metav1.ObjectMeta {
	m := metav1.ObjectMeta{
		Name: o.name, Namespace: o.namespace, ResourceVersion: o.resourceVersion, UID: o.uid, Generation: o.generation,
		CreationTimestamp: o.created, DeletionTimestamp: o.deleted.DeepCopy(), Finalizers: slices.Clone(o.finalizers),
		Labels: toMap(o.labels), Annotations: toMap(o.annotations),
	}
	if r := o.rest; r != nil {
		m.GenerateName = r.generateName
		if r.gracePeriod != nil {
			m.DeletionGracePeriodSeconds = ptr.To(*r.gracePeriod)
		}
		for i := range r.ownerReferences {
			m.OwnerReferences = append(m.OwnerReferences, *r.ownerReferences[i].DeepCopy())
		}
	}
	return m
}

// GetObjectKind has no kind, as the typed objects of the cache.
func (o *objectMeta) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// GetNamespace returns the namespace.
func (o *objectMeta) GetNamespace() string { return o.namespace }

// SetNamespace sets the namespace.
func (o *objectMeta) SetNamespace(ns string) { o.namespace = Intern(ns) }

// GetName returns the name.
func (o *objectMeta) GetName() string { return o.name }

// SetName sets the name.
func (o *objectMeta) SetName(name string) { o.name = Intern(name) }

// GetGenerateName returns the generateName, if kept.
func (o *objectMeta) GetGenerateName() string {
	if o.rest == nil {
		return ""
	}
	return o.rest.generateName
}

// SetGenerateName is ignored: the informers never set it.
func (o *objectMeta) SetGenerateName(string) {}

// GetUID returns the UID.
func (o *objectMeta) GetUID() types.UID { return o.uid }

// SetUID sets the UID.
func (o *objectMeta) SetUID(uid types.UID) { o.uid = uid }

// GetResourceVersion returns the resourceVersion.
func (o *objectMeta) GetResourceVersion() string { return o.resourceVersion }

// SetResourceVersion sets the resourceVersion.
func (o *objectMeta) SetResourceVersion(v string) { o.resourceVersion = v }

// GetGeneration returns the generation.
func (o *objectMeta) GetGeneration() int64 { return o.generation }

// SetGeneration sets the generation.
func (o *objectMeta) SetGeneration(g int64) { o.generation = g }

// GetSelfLink is empty: not kept (the API server no longer sets it).
func (o *objectMeta) GetSelfLink() string { return "" }

// SetSelfLink is ignored: not kept.
func (o *objectMeta) SetSelfLink(string) {}

// GetCreationTimestamp returns the creation time.
func (o *objectMeta) GetCreationTimestamp() metav1.Time { return o.created }

// SetCreationTimestamp sets the creation time.
func (o *objectMeta) SetCreationTimestamp(t metav1.Time) { o.created = t }

// GetDeletionTimestamp returns the deletion time, nil if none.
func (o *objectMeta) GetDeletionTimestamp() *metav1.Time { return o.deleted }

// SetDeletionTimestamp sets the deletion time.
func (o *objectMeta) SetDeletionTimestamp(t *metav1.Time) { o.deleted = t }

// GetDeletionGracePeriodSeconds returns the deletion grace period, if kept.
func (o *objectMeta) GetDeletionGracePeriodSeconds() *int64 {
	if o.rest == nil {
		return nil
	}
	return o.rest.gracePeriod
}

// SetDeletionGracePeriodSeconds is ignored: the informers never set it.
func (o *objectMeta) SetDeletionGracePeriodSeconds(*int64) {}

// GetLabels returns a new map of the labels.
func (o *objectMeta) GetLabels() map[string]string { return toMap(o.labels) }

// SetLabels sets the labels.
func (o *objectMeta) SetLabels(labels map[string]string) { o.labels = pairs(labels, true) }

// GetAnnotations returns a new map of the annotations kept.
func (o *objectMeta) GetAnnotations() map[string]string { return toMap(o.annotations) }

// SetAnnotations sets the annotations.
func (o *objectMeta) SetAnnotations(annotations map[string]string) {
	o.annotations = pairs(annotations, false)
}

// GetFinalizers returns the finalizers.
func (o *objectMeta) GetFinalizers() []string { return o.finalizers }

// SetFinalizers sets the finalizers.
func (o *objectMeta) SetFinalizers(finalizers []string) { o.finalizers = finalizers }

// GetOwnerReferences returns the owner references, if kept.
func (o *objectMeta) GetOwnerReferences() []metav1.OwnerReference {
	if o.rest == nil {
		return nil
	}
	return o.rest.ownerReferences
}

// SetOwnerReferences is ignored: the informers never set them.
func (o *objectMeta) SetOwnerReferences([]metav1.OwnerReference) {}

// GetManagedFields is nil: not kept.
func (o *objectMeta) GetManagedFields() []metav1.ManagedFieldsEntry { return nil }

// SetManagedFields is ignored: not kept.
func (o *objectMeta) SetManagedFields([]metav1.ManagedFieldsEntry) {}

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
			v = Intern(v)
		}
		out = append(out, Intern(k), v)
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

// Intern returns the string equal to s that other cached objects hold: the
// agent's cache shares it, as the compact forms do.
func Intern(s string) string {
	if s == "" {
		return s
	}
	return unique.Make(s).Value()
}
