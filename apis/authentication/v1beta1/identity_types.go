package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// IdentityResource is the name of the identity resources.
const IdentityResource = "identities"

// IdentityKind is the kind of the Identity.
const IdentityKind = "Identity"

// IdentityGroupResource is the group resource of Identities.
var IdentityGroupResource = schema.GroupResource{Group: GroupVersion.Group, Resource: IdentityResource}

// IdentityGroupVersionResource is the group version resource of Identities.
var IdentityGroupVersionResource = GroupVersion.WithResource(IdentityResource)

// IdentityType is the type of the Identity. It can be either "ControlPlane" or "ResourceSlice":
//   - ControlPlane: identity that gives the permissions to replicate resources to the remote
//     cluster through the CrdReplicator. This is the identity the gitpeer handshake issues.
//   - ResourceSlice: identity that gives the permissions to use the resources of a ResourceSlice.
type IdentityType string

const (
	// ControlPlaneIdentityType indicates an Identity of type ControlPlane.
	ControlPlaneIdentityType IdentityType = "ControlPlane"
	// ResourceSliceIdentityType indicates an Identity of type ResourceSlice.
	ResourceSliceIdentityType IdentityType = "ResourceSlice"
)

// IdentitySpec defines the desired state of Identity.
type IdentitySpec struct {
	// ClusterID is the identity of the provider cluster.
	ClusterID ClusterID `json:"clusterID,omitempty"`
	// Type is the type of the identity.
	// +kubebuilder:validation:Enum=ControlPlane;ResourceSlice
	Type IdentityType `json:"type,omitempty"`
	// AuthParams contains the parameters to create an Identity to use in the provider cluster.
	AuthParams AuthParams `json:"authParams,omitempty"`
	// Namespace is the namespace where to use the identity.
	// +kubebuilder:validation:Optional
	Namespace *string `json:"namespace,omitempty"`
}

// IdentityStatus defines the observed state of Identity.
type IdentityStatus struct {
	// KubeconfigSecretRef contains the reference to the secret containing the kubeconfig to access the provider cluster.
	KubeconfigSecretRef *corev1.LocalObjectReference `json:"kubeconfigSecretRef,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:categories=liqo,shortName=id
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.type`
// +kubebuilder:printcolumn:name="KubeconfigSecret",type=string,JSONPath=`.status.kubeconfigSecretRef.name`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// Identity contains the information to operate in a remote cluster.
type Identity struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state of the Identity.
	Spec IdentitySpec `json:"spec,omitempty"`
	// Status is the observed state of the Identity.
	Status IdentityStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// IdentityList contains a list of Identities.
type IdentityList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the Identities of the list.
	Items []Identity `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Identity{}, &IdentityList{})
}
