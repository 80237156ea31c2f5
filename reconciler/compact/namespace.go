package compact

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Namespace is the compact form of a corev1.Namespace: the metadata
// objectMeta keeps, with the annotations the caller chooses. Its spec and
// status are not kept: a Namespace read from the cache has none.
type Namespace struct{ objectMeta }

// NewNamespace returns the compact form of ns, with the annotations of ns
// for which keep is true.
func NewNamespace(ns *corev1.Namespace, keep func(annotation string) bool) *Namespace {
	return &Namespace{newObjectMeta(ns, keep)}
}

// Full returns the corev1.Namespace n is the compact form of (without what n does not keep).
func (n *Namespace) Full() *corev1.Namespace { return &corev1.Namespace{ObjectMeta: n.full()} }

// DeepCopyObject returns the full Namespace: what a read of the cache gets.
func (n *Namespace) DeepCopyObject() runtime.Object { return n.Full() }

// GetNamespace is empty: a Namespace is cluster-scoped.
func (n *Namespace) GetNamespace() string { return "" }
