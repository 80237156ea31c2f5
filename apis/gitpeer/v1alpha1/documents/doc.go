// Package documents defines the git-only documents of gitpeer.io/v1alpha1 (PeeringRequest and
// Nonce); their paths, file names and rules are gitpeer's protocol, in reconciler/protocol. These documents
// exist only as files in Git: they are not custom resources, have no CRD, and are not registered
// in any scheme.
//
//	<spec.path>/<providerID>/<consumerID>/
//	  request.yaml    PeeringRequest   written by the consumer
//	  nonce.yaml      Nonce            written by the provider
//	  tenant.yaml     Tenant           written by the consumer, reaches the branch through review
//	  identity.yaml   Identity         written by the provider
//
// +kubebuilder:object:generate=true
// +kubebuilder:skip
package documents
