package liqo

import (
	"context"
	gocrypto "crypto"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	"github.com/gitpeer/gitpeer/crypto"
)

// The liqoctl commands an admin runs by hand beside gitpeer (Liqo v1.2.0
// pkg/liqoctl), run against one cluster's client; Liqo's controllers on that
// cluster do the rest (its nonce creator fills the nonce, its nonce signer signs it).

// CreateNonce is `liqoctl create nonce` on the provider: the tenant namespace
// of consumer and the liqo-nonce Secret with labels only; the nonce creator
// fills it, and CreateNonce waits for that and returns the nonce.
func CreateNonce(ctx context.Context, c client.Client, consumer string) (string, error) {
	ns, err := ensureTenantNamespace(ctx, c, consumer)
	if err != nil {
		return "", err
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: authv1beta1.NonceSecretName, Namespace: ns,
		Labels: map[string]string{authv1beta1.NonceSecretLabel: authv1beta1.TrueValue, authv1beta1.RemoteClusterIDLabel: consumer}}}
	if err := createIfAbsent(ctx, c, secret); err != nil {
		return "", err
	}
	data, err := waitForField(ctx, c, client.ObjectKeyFromObject(secret), authv1beta1.NonceSecretField)
	return string(data), err
}

// GenerateTenant is `liqoctl generate tenant --nonce N` on the consumer: the
// liqo-signed-nonce Secret {nonce} in the tenant namespace of provider, signed
// by the nonce signer, then a Tenant named after the consumer with Liqo's key
// (PEM public key, CSR CN = consumer ID, O = liqo.io), the signature and the
// remote-cluster-id label.
func GenerateTenant(ctx context.Context, c client.Client, key gocrypto.Signer, consumer, provider, nonce string) (*authv1beta1.Tenant, error) {
	ns, err := ensureTenantNamespace(ctx, c, provider)
	if err != nil {
		return nil, err
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: authv1beta1.SignedNonceSecretName, Namespace: ns}}
	if _, err := controllerutil.CreateOrUpdate(ctx, c, secret, func() error {
		secret.Labels = map[string]string{authv1beta1.SignedNonceSecretLabel: authv1beta1.TrueValue, authv1beta1.RemoteClusterIDLabel: provider}
		secret.Data = map[string][]byte{authv1beta1.NonceSecretField: []byte(nonce)}
		return nil
	}); err != nil {
		return nil, err
	}
	signature, err := waitForField(ctx, c, client.ObjectKeyFromObject(secret), authv1beta1.SignedNonceSecretField)
	if err != nil {
		return nil, err
	}
	return Tenant(key, consumer, signature)
}

// Tenant is the Tenant `liqoctl generate tenant` prints once it has the
// signature of the provider's nonce by key, Liqo's key of consumer (Liqo
// v1.2.0 A/forge/tenant.go TenantForRemoteCluster): no namespace, the
// admin applies it in the tenant namespace. Without a consumer cluster,
// crypto.SignNonce signs as its nonce signer would.
func Tenant(key gocrypto.Signer, consumer string, signature []byte) (*authv1beta1.Tenant, error) {
	pub, err := crypto.MarshalPublicKeyPEM(key.Public())
	if err != nil {
		return nil, err
	}
	csr, err := crypto.BuildCSR(key, consumer)
	if err != nil {
		return nil, err
	}
	return &authv1beta1.Tenant{
		TypeMeta:   metav1.TypeMeta{APIVersion: authv1beta1.GroupVersion.String(), Kind: authv1beta1.TenantKind},
		ObjectMeta: metav1.ObjectMeta{Name: consumer, Labels: map[string]string{authv1beta1.RemoteClusterIDLabel: consumer}},
		Spec:       authv1beta1.TenantSpec{ClusterID: authv1beta1.ClusterID(consumer), PublicKey: pub, CSR: csr, Signature: signature},
	}, nil
}

// GenerateIdentity is `liqoctl generate identity` on the provider: Identity
// controlplane-<provider> whose authParams are the Tenant's status unchanged and
// whose namespace is the Tenant's status.tenantNamespace.
func GenerateIdentity(tenant *authv1beta1.Tenant, provider string) (*authv1beta1.Identity, error) {
	if tenant.Status.AuthParams == nil {
		return nil, fmt.Errorf("tenant %s has no authParams yet", tenant.Name)
	}
	ns := tenant.Status.TenantNamespace
	return &authv1beta1.Identity{
		TypeMeta: metav1.TypeMeta{APIVersion: authv1beta1.GroupVersion.String(), Kind: authv1beta1.IdentityKind},
		ObjectMeta: metav1.ObjectMeta{Name: authv1beta1.ControlPlaneIdentityPrefix + provider,
			Labels: map[string]string{authv1beta1.RemoteClusterIDLabel: provider}},
		Spec: authv1beta1.IdentitySpec{ClusterID: authv1beta1.ClusterID(provider), Type: authv1beta1.ControlPlaneIdentityType,
			AuthParams: *tenant.Status.AuthParams.DeepCopy(), Namespace: &ns},
	}, nil
}

// ensureTenantNamespace returns the tenant namespace of peer, the one
// namespace labelled for it, creating liqo-tenant-<peer> as Liqo's tenant
// namespace manager forges it when there is none (Liqo v1.2.0
// pkg/tenantNamespace/namespaceManager.go, CreateNamespace and ForgeNamespace).
func ensureTenantNamespace(ctx context.Context, c client.Client, peer string) (string, error) {
	var list corev1.NamespaceList
	if err := c.List(ctx, &list, client.MatchingLabels{authv1beta1.RemoteClusterIDLabel: peer},
		client.HasLabels{authv1beta1.TenantNamespaceLabel}); err != nil {
		return "", err
	}
	switch len(list.Items) {
	case 0:
	case 1:
		return list.Items[0].Name, nil
	default:
		return "", fmt.Errorf("%d tenant namespaces for cluster %s", len(list.Items), peer)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: authv1beta1.TenantNamespaceName(authv1beta1.ClusterID(peer)),
		Labels: map[string]string{authv1beta1.RemoteClusterIDLabel: peer, authv1beta1.TenantNamespaceLabel: authv1beta1.TrueValue,
			"pod-security.kubernetes.io/audit": "privileged", "pod-security.kubernetes.io/enforce": "privileged",
			"pod-security.kubernetes.io/warn": "privileged"}}}
	return ns.Name, c.Create(ctx, ns)
}

// waitForField waits up to 30 s for a controller to fill field of a Secret.
func waitForField(ctx context.Context, c client.Client, key client.ObjectKey, field string) ([]byte, error) {
	var data []byte
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var secret corev1.Secret
		if err := c.Get(ctx, key, &secret); err != nil {
			return false, err
		}
		data = secret.Data[field]
		return len(data) > 0, nil
	})
	if err != nil {
		return nil, fmt.Errorf("waiting for %s of secret %s: %w", field, key, err)
	}
	return data, nil
}
