package v1beta1

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Names, labels and annotations Liqo uses for the objects of the authentication handshake. Both
// gitpeer roles and the CLI use them, so that what gitpeer creates is what Liqo would create.
const (
	// RemoteClusterIDLabel is set on every object that belongs to a peering; its value is the
	// ID of the peer cluster (the consumer on a provider, the provider on a consumer).
	RemoteClusterIDLabel = "liqo.io/remote-cluster-id"
	// TenantNamespaceLabel marks a tenant namespace; its value is "true".
	TenantNamespaceLabel = "liqo.io/tenant-namespace"
	// NonceSecretLabel marks the provider's nonce Secret; its value is "true".
	NonceSecretLabel = "liqo.io/nonce"
	// SignedNonceSecretLabel marks the consumer's signed-nonce Secret; its value is "true".
	SignedNonceSecretLabel = "liqo.io/signed-nonce"
	// IdentityTypeLabel is set on the kubeconfig Secret; its value is the IdentityType.
	IdentityTypeLabel = "liqo.io/identity-type"
	// RemoteTenantNamespaceAnnotation is set on the kubeconfig Secret; its value is the tenant
	// namespace of the consumer on the provider cluster (Identity.spec.namespace).
	RemoteTenantNamespaceAnnotation = "liqo.io/remote-tenant-namespace"

	// TrueValue is the value of the marker labels above.
	TrueValue = "true"

	// TenantNamespacePrefix prefixes the peer cluster ID in the name of a tenant namespace.
	TenantNamespacePrefix = "liqo-tenant-"

	// NonceSecretName is the name of the provider's Secret holding the nonce, in the tenant namespace.
	NonceSecretName = "liqo-nonce"
	// SignedNonceSecretName is the name of the consumer's Secret holding the nonce and its
	// signature, in the tenant namespace.
	SignedNonceSecretName = "liqo-signed-nonce"
	// NonceSecretField is the data key of the nonce in both nonce Secrets.
	NonceSecretField = "nonce"
	// SignedNonceSecretField is the data key of the signed nonce in the signed-nonce Secret.
	SignedNonceSecretField = "signedNonce"

	// ControlPlaneIdentityPrefix prefixes the provider cluster ID in the name of a ControlPlane Identity.
	ControlPlaneIdentityPrefix = "controlplane-"
	// KubeconfigSecretPrefix prefixes the Identity name in the name of its kubeconfig Secret.
	KubeconfigSecretPrefix = "kubeconfig-"
	// KubeconfigSecretField is the data key of the kubeconfig in the kubeconfig Secret.
	KubeconfigSecretField = "kubeconfig"

	// RemoteControlPlaneClusterRole is the ClusterRole Liqo binds to a tenant in its tenant
	// namespace (resourceslices, renews, namespacemaps).
	RemoteControlPlaneClusterRole = "liqo-remote-controlplane"
	// RoleBindingPrefix prefixes the ClusterRole name in the name of the tenant's RoleBinding.
	RoleBindingPrefix = "liqo-binding-"

	// CertificateOrganization is the only organization (O) allowed in a tenant's CSR subject;
	// the common name (CN) is the consumer cluster ID.
	CertificateOrganization = "liqo.io"
	// CSRSignerName is the signer of the CertificateSigningRequest the provider creates.
	CSRSignerName = "kubernetes.io/kube-apiserver-client"

	// ClusterIDMaxLength is the maximum length of a cluster ID accepted by gitpeer.
	ClusterIDMaxLength = 63
)

// ValidateClusterID returns an error unless id is an RFC 1123 label of at most 63 characters.
func ValidateClusterID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("cluster ID is empty")
	case len(id) > ClusterIDMaxLength:
		return fmt.Errorf("cluster ID %.20q... is longer than %d characters", id, ClusterIDMaxLength)
	case len(validation.IsDNS1123Label(id)) > 0:
		return fmt.Errorf("cluster ID %q is not an RFC 1123 label (lower-case alphanumerics and '-')", id)
	}
	return nil
}

// TenantNamespaceName returns the name of the tenant namespace for the peer cluster.
func TenantNamespaceName(peerID ClusterID) string { return TenantNamespacePrefix + string(peerID) }

// PodSecurityLabels are the Pod Security admission labels Liqo sets on its own namespaces,
// tenant namespaces included: level privileged for audit, enforce and warn.
var PodSecurityLabels = [...]string{
	"pod-security.kubernetes.io/audit", "pod-security.kubernetes.io/enforce", "pod-security.kubernetes.io/warn",
}

// PodSecurityPrivileged is the Pod Security level of PodSecurityLabels.
const PodSecurityPrivileged = "privileged"

// TenantNamespaceLabels returns the labels Liqo gives the tenant namespace of the peer cluster
// (pkg/tenantNamespace CreateNamespace): its ID, the tenant-namespace marker and PodSecurityLabels.
func TenantNamespaceLabels(peerID ClusterID) map[string]string {
	labels := map[string]string{RemoteClusterIDLabel: string(peerID), TenantNamespaceLabel: TrueValue}
	for _, l := range PodSecurityLabels {
		labels[l] = PodSecurityPrivileged
	}
	return labels
}

// TenantName returns the name of the Tenant of a consumer cluster: its cluster ID.
func TenantName(consumerID ClusterID) string { return string(consumerID) }

// ControlPlaneIdentityName returns the name of the ControlPlane Identity towards a provider.
func ControlPlaneIdentityName(providerID ClusterID) string {
	return ControlPlaneIdentityPrefix + string(providerID)
}

// KubeconfigSecretName returns the name of the kubeconfig Secret of an Identity.
func KubeconfigSecretName(identityName string) string { return KubeconfigSecretPrefix + identityName }

// RoleBindingName returns the name of the RoleBinding of a tenant to a ClusterRole.
func RoleBindingName(clusterRole string) string { return RoleBindingPrefix + clusterRole }
