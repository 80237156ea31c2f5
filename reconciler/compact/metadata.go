package compact

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Metadata is the compact form of a metav1.PartialObjectMetadata, an object
// the agent watches as metadata only: its name, namespace, resourceVersion
// and the labels the caller chooses, nothing else.
type Metadata struct{ objectMeta }

// NewMetadata returns the compact form of m, with only its labels named by labelKeys.
func NewMetadata(m metav1.Object, labelKeys ...string) *Metadata {
	var kept map[string]string
	for _, k := range labelKeys {
		if v, ok := m.GetLabels()[k]; ok {
			if kept == nil {
				kept = map[string]string{}
			}
			kept[k] = v
		}
	}
	return &Metadata{objectMeta{name: m.GetName(), namespace: Intern(m.GetNamespace()), resourceVersion: m.GetResourceVersion(), labels: pairs(kept, true)}}
}

// Full returns the metav1.PartialObjectMetadata m is the compact form of (without what m does not keep).
func (m *Metadata) Full() *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{ObjectMeta: m.full()}
}

// DeepCopyObject returns the full metadata: what a read of the cache gets.
func (m *Metadata) DeepCopyObject() runtime.Object { return m.Full() }
