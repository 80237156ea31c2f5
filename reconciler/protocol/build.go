package protocol

import (
	gocrypto "crypto"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	"github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1/documents"
	"github.com/gitpeer/gitpeer/crypto"
)

// The documents as gitpeer writes them. The agent, `gitpeer request` and the
// test fixtures all build them here, so every writer produces the same bytes.

// RequestDocument renders request.yaml: consumer asks provider for an
// identity, presenting its public key.
func RequestDocument(provider, consumer string, key gocrypto.PublicKey) ([]byte, error) {
	pub, err := crypto.MarshalPublicKeyPEM(key)
	if err != nil {
		return nil, err
	}
	return yaml.Marshal(&documents.PeeringRequest{
		TypeMeta: metav1.TypeMeta{APIVersion: documents.APIVersion, Kind: documents.PeeringRequestKind},
		Spec: documents.PeeringRequestSpec{
			ConsumerClusterID: authv1beta1.ClusterID(consumer), ProviderClusterID: authv1beta1.ClusterID(provider), PublicKey: pub,
		},
	})
}

// NonceDocument renders nonce.yaml: the provider's current nonce for consumer.
func NonceDocument(provider, consumer, nonce string) ([]byte, error) {
	return yaml.Marshal(&documents.Nonce{
		TypeMeta: metav1.TypeMeta{APIVersion: documents.APIVersion, Kind: documents.NonceKind},
		Spec: documents.NonceSpec{
			ProviderClusterID: authv1beta1.ClusterID(provider), ConsumerClusterID: authv1beta1.ClusterID(consumer), Nonce: nonce,
		},
	})
}

// NewTenant returns the Tenant a consumer proposes, as liqoctl generates it:
// its public key, its signature of the provider's nonce and a CSR for
// CN=<consumer>, O=liqo.io, in the provider-side tenant namespace.
func NewTenant(consumer string, key gocrypto.Signer, nonce string) (*authv1beta1.Tenant, error) {
	pub, err := crypto.MarshalPublicKeyPEM(key.Public())
	if err != nil {
		return nil, err
	}
	signature, err := crypto.SignNonce(key, nonce)
	if err != nil {
		return nil, err
	}
	csr, err := crypto.BuildCSR(key, consumer)
	if err != nil {
		return nil, err
	}
	policy := authv1beta1.KeysExchange
	id := authv1beta1.ClusterID(consumer)
	return &authv1beta1.Tenant{
		TypeMeta: metav1.TypeMeta{APIVersion: authv1beta1.GroupVersion.String(), Kind: authv1beta1.TenantKind},
		ObjectMeta: metav1.ObjectMeta{
			Name: authv1beta1.TenantName(id), Namespace: authv1beta1.TenantNamespaceName(id),
			Labels: map[string]string{authv1beta1.RemoteClusterIDLabel: consumer},
		},
		Spec: authv1beta1.TenantSpec{
			ClusterID: id, AuthzPolicy: &policy, PublicKey: pub, CSR: csr,
			Signature: signature, TenantCondition: authv1beta1.TenantConditionActive,
		},
	}, nil
}

// IdentityDocument renders identity.yaml: the Identity a provider issues to
// consumer, as the consumer applies it in its namespace for the provider.
func IdentityDocument(provider, consumer string, params authv1beta1.AuthParams) ([]byte, error) {
	return identityDocument(provider, params, authv1beta1.TenantNamespaceName(authv1beta1.ClusterID(consumer)))
}

// IdentityFromTenant renders identity.yaml as `liqoctl generate identity`
// builds it from a Tenant Liqo's tenant controller issued (liqotech/liqo v1.2.0:
// pkg/liqo-controller-manager/authentication/utils/identity.go):
// Identity controlplane-<provider> whose authParams are the Tenant's status
// unchanged and whose namespace is its status.tenantNamespace. The provider
// uses it in Liqo mode.
func IdentityFromTenant(provider string, tenant *authv1beta1.Tenant) ([]byte, error) {
	if tenant.Status.AuthParams == nil {
		return nil, fmt.Errorf("tenant %s has no authParams yet", tenant.Name)
	}
	return identityDocument(provider, *tenant.Status.AuthParams, tenant.Status.TenantNamespace)
}

func identityDocument(provider string, params authv1beta1.AuthParams, remoteNS string) ([]byte, error) {
	return yaml.Marshal(&authv1beta1.Identity{
		TypeMeta: metav1.TypeMeta{APIVersion: authv1beta1.GroupVersion.String(), Kind: authv1beta1.IdentityKind},
		ObjectMeta: metav1.ObjectMeta{
			Name:      authv1beta1.ControlPlaneIdentityName(authv1beta1.ClusterID(provider)),
			Namespace: authv1beta1.TenantNamespaceName(authv1beta1.ClusterID(provider)),
			Labels:    map[string]string{authv1beta1.RemoteClusterIDLabel: provider},
		},
		Spec: authv1beta1.IdentitySpec{
			ClusterID:  authv1beta1.ClusterID(provider),
			Type:       authv1beta1.ControlPlaneIdentityType,
			AuthParams: params,
			Namespace:  &remoteNS,
		},
	})
}
