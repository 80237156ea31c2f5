// Package v1alpha1 holds gitpeer's own API, gitpeer.io/v1alpha1: the PeeringRepository custom
// resource that configures an agent. The git-only documents of the same group and version
// (PeeringRequest, Nonce), which are never stored in a cluster, live in the documents subpackage.
//
// +kubebuilder:object:generate=true
// +groupName=gitpeer.io
package v1alpha1
