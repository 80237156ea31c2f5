package liqo

import (
	"context"
	gocrypto "crypto"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	"github.com/gitpeer/gitpeer/crypto"
)

// Names of the objects an installed Liqo keeps in its namespace
// (Liqo v1.2.0 pkg/consts/clusterid.go, A/keys.go).
const (
	// DefaultNamespace is Liqo's namespace unless --liqo-namespace says otherwise.
	DefaultNamespace = "liqo"
	// ClusterIDConfigMap holds the cluster ID under ClusterIDKey.
	ClusterIDConfigMap = "liqo-clusterid-configmap"
	// ClusterIDConfigMapLabel marks that ConfigMap: app.kubernetes.io/name=clusterid-configmap.
	ClusterIDConfigMapLabel = "app.kubernetes.io/name"
	// VersionLabel on ClusterIDConfigMap holds the Liqo version, as Liqo's chart labels what it
	// installs (deployments/liqo/templates/_helpers.tpl, "liqo.labels").
	VersionLabel = "app.kubernetes.io/version"
	// Version is the Liqo version the double behaves as.
	Version = "v1.2.0"
	// ClusterIDKey is the ConfigMap key of the cluster ID.
	ClusterIDKey = "CLUSTER_ID"
	// KeysSecret holds Liqo's cluster key pair (PrivateKeyField, PublicKeyField).
	KeysSecret = "authentication-keys"
	// PrivateKeyField is the PKCS#8 PEM private key in KeysSecret.
	PrivateKeyField = "privateKey"
	// PublicKeyField is the PKIX PEM public key in KeysSecret.
	PublicKeyField = "publicKey"
	// RemoteControlPlaneRoleLabel is the value of app.kubernetes.io/name on the ClusterRole the
	// tenant controller binds in the tenant namespace.
	RemoteControlPlaneRoleLabel = "remote-controlplane"
	// ClusterWideRoleLabel is the value of app.kubernetes.io/name on the ClusterRole the tenant
	// controller binds cluster-wide to the tenant's group.
	ClusterWideRoleLabel = "virtual-kubelet-remote-clusterwide"
	// ClusterWideRole is the name Liqo's chart gives that ClusterRole.
	ClusterWideRole = "liqo-virtual-kubelet-remote-clusterwide"
)

// Options are the flags of the double's controller manager.
type Options struct {
	// Namespace is Liqo's namespace (--liqo-namespace); DefaultNamespace when empty.
	Namespace string
	// ClusterID is the local cluster ID written in the cluster-ID ConfigMap.
	ClusterID string
	// Algorithm of the cluster key: Ed25519 by default, RSA-2048 with --tls-compatibility-mode.
	Algorithm crypto.KeyAlgorithm
	// APIServer is --advertise-api-server-address: the apiServer put in Tenant status.
	APIServer string
	// CA is the CA override put in Tenant status; when empty, the CA of the double's
	// rest config, unless TrustedCA.
	CA []byte
	// TrustedCA is --advertise-api-server-trusted-ca: Tenant status carries an empty CA.
	TrustedCA bool
}

func (o Options) namespace() string {
	if o.Namespace == "" {
		return DefaultNamespace
	}
	return o.Namespace
}

// Install creates what Liqo's chart and its authentication module create at
// start: the Liqo namespace, the cluster-ID ConfigMap, the cluster key Secret
// (InitClusterKeys: created only when absent, never replaced) and the two
// ClusterRoles the tenant controller looks up by label. It returns Liqo's key.
// (Liqo v1.2.0 pkg/consts/clusterid.go, A/keys.go; A/keys.go.)
func Install(ctx context.Context, c client.Client, o Options) (gocrypto.Signer, error) {
	ns := o.namespace()
	if err := createIfAbsent(ctx, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return nil, err
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: ClusterIDConfigMap, Namespace: ns,
			Labels: map[string]string{ClusterIDConfigMapLabel: "clusterid-configmap", VersionLabel: Version}},
		Data: map[string]string{ClusterIDKey: o.ClusterID},
	}
	if err := createIfAbsent(ctx, c, cm); err != nil {
		return nil, err
	}
	key, err := initClusterKeys(ctx, c, ns, o.Algorithm)
	if err != nil {
		return nil, err
	}
	for name, label := range map[string]string{
		authv1beta1.RemoteControlPlaneClusterRole: RemoteControlPlaneRoleLabel,
		ClusterWideRole: ClusterWideRoleLabel,
	} {
		role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels: map[string]string{ClusterIDConfigMapLabel: label}}}
		if err := createIfAbsent(ctx, c, role); err != nil {
			return nil, err
		}
	}
	return key, nil
}

// initClusterKeys creates the key Secret when it is absent and returns the key
// it holds (A/keys.go InitClusterKeys: Ed25519 by default, RSA-2048 in
// compatibility mode; an existing Secret is used as is).
func initClusterKeys(ctx context.Context, c client.Client, ns string, alg crypto.KeyAlgorithm) (gocrypto.Signer, error) {
	if alg == "" {
		alg = crypto.Ed25519
	}
	key, err := crypto.GenerateKey(alg)
	if err != nil {
		return nil, err
	}
	priv, err := crypto.MarshalPrivateKeyPEM(key)
	if err != nil {
		return nil, err
	}
	pub, err := crypto.MarshalPublicKeyPEM(key.Public())
	if err != nil {
		return nil, err
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: KeysSecret, Namespace: ns},
		Data: map[string][]byte{PrivateKeyField: priv, PublicKeyField: pub}}
	if err := createIfAbsent(ctx, c, secret); err != nil {
		return nil, err
	}
	return ClusterKey(ctx, c, ns)
}

// ClusterKey reads Liqo's cluster private key from the key Secret in ns.
func ClusterKey(ctx context.Context, c client.Reader, ns string) (gocrypto.Signer, error) {
	var secret corev1.Secret
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: KeysSecret}, &secret); err != nil {
		return nil, err
	}
	key, err := crypto.ParsePrivateKeyPEM(secret.Data[PrivateKeyField])
	if err != nil {
		return nil, fmt.Errorf("secret %s/%s: %w", ns, KeysSecret, err)
	}
	return key, nil
}

func createIfAbsent(ctx context.Context, c client.Client, obj client.Object) error {
	if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create %T %s: %w", obj, obj.GetName(), err)
	}
	return nil
}

var errMultipleNamespaces = fmt.Errorf("multiple tenant namespaces found")
