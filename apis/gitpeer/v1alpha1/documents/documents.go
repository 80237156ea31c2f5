package documents

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
)

const (
	// PeeringRequestKind is the kind of the PeeringRequest document.
	PeeringRequestKind = "PeeringRequest"
	// NonceKind is the kind of the Nonce document.
	NonceKind = "Nonce"
	// ProviderTermsKind is the kind of the ProviderTerms document.
	ProviderTermsKind = "ProviderTerms"
)

// APIVersion is the apiVersion of the git-only documents: gitpeer.io/v1alpha1.
var APIVersion = gitpeerv1alpha1.GroupVersion.String()

// +kubebuilder:object:root=true

// PeeringRequest is written by a consumer, in <providerID>/<consumerID>/request.yaml, to ask a
// provider for a nonce. It grants nothing, so the consumer may push it straight to the branch.
type PeeringRequest struct {
	metav1.TypeMeta `json:",inline"`
	// ObjectMeta is informational only; by convention the name is the consumer cluster ID.
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the content of the request.
	Spec PeeringRequestSpec `json:"spec"`
}

// PeeringRequestSpec is the content of a PeeringRequest.
type PeeringRequestSpec struct {
	// ConsumerClusterID is the ID of the consumer cluster; it must equal the <consumerID> of the path.
	ConsumerClusterID authv1beta1.ClusterID `json:"consumerClusterID"`
	// ProviderClusterID is the ID of the provider cluster; it must equal the <providerID> of the path.
	ProviderClusterID authv1beta1.ClusterID `json:"providerClusterID"`
	// PublicKey is the consumer's cluster public key, encoded as in Tenant.spec.publicKey (a PEM
	// PUBLIC KEY, base64-encoded in YAML).
	PublicKey []byte `json:"publicKey"`
}

// +kubebuilder:object:root=true

// Nonce is written by a provider, in <providerID>/<consumerID>/nonce.yaml, to hand the consumer
// the nonce it must sign. The copy in Git is only a message: the provider verifies signatures
// against the nonce in its own liqo-nonce Secret.
type Nonce struct {
	metav1.TypeMeta `json:",inline"`
	// ObjectMeta is informational only; by convention the name is the consumer cluster ID.
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the content of the nonce document.
	Spec NonceSpec `json:"spec"`
}

// NonceSpec is the content of a Nonce.
type NonceSpec struct {
	// ProviderClusterID is the ID of the provider cluster; it must equal the <providerID> of the path.
	ProviderClusterID authv1beta1.ClusterID `json:"providerClusterID"`
	// ConsumerClusterID is the ID of the consumer cluster; it must equal the <consumerID> of the path.
	ConsumerClusterID authv1beta1.ClusterID `json:"consumerClusterID"`
	// Nonce is the nonce as Liqo prints it: 64 random bytes in standard base64 with padding (an
	// 88-character ASCII string). The consumer signs this string itself, not the decoded bytes.
	Nonce string `json:"nonce"`
}

// +kubebuilder:object:root=true

// ProviderTerms is written by a provider, in <providerID>/terms.yaml, to publish what merging a
// consumer's tenant.yaml grants. Consumers quote it in their pull requests, and the offline checks
// (`gitpeer verify`, the pull request's status) compare proposals with it, so that what a reviewer
// approves comes from the provider, not from the consumer that asks.
type ProviderTerms struct {
	metav1.TypeMeta `json:",inline"`
	// ObjectMeta is informational only; by convention the name is the provider cluster ID.
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the content of the terms.
	Spec ProviderTermsSpec `json:"spec"`
}

// ProviderTermsSpec is the content of a ProviderTerms.
type ProviderTermsSpec struct {
	// ProviderClusterID is the ID of the provider cluster; it must equal the <providerID> of the path.
	ProviderClusterID authv1beta1.ClusterID `json:"providerClusterID"`
	// TenantNamespacePrefix is the prefix of each consumer's tenant namespace on the provider: the
	// namespace is the prefix followed by the consumer cluster ID.
	TenantNamespacePrefix string `json:"tenantNamespacePrefix"`
	// ClusterRoleName is the ClusterRole bound, in its tenant namespace, to each consumer's user.
	ClusterRoleName string `json:"clusterRoleName"`
	// Rules are the rules of that ClusterRole when the terms were published.
	Rules []rbacv1.PolicyRule `json:"rules,omitempty"`
	// CertificateTTL is the lifetime of the client certificates issued to consumers.
	CertificateTTL metav1.Duration `json:"certificateTTL"`
	// Renewal says when a certificate is renewed, e.g. "at 2/3 of its lifetime, without approval".
	Renewal string `json:"renewal"`
	// APIServer is the URL of the provider's API server as consumers reach it, as written to
	// identity.yaml.
	APIServer string `json:"apiServer"`
}
