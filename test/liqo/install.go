package liqo

import (
	"context"
	gocrypto "crypto"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitpeer/gitpeer/crypto"
	reconcilerliqo "github.com/gitpeer/gitpeer/reconciler/liqo"
)

// Names of the objects an installed Liqo keeps in its namespace
// (Liqo v1.2.0 pkg/consts/clusterid.go, A/keys.go).
const (
	// DefaultNamespace is Liqo's namespace unless --liqo-namespace says otherwise.
	DefaultNamespace = "liqo"
	// KeysSecret holds Liqo's cluster key pair (crypto.PrivateKeyField, crypto.PublicKeyField).
	KeysSecret = "authentication-keys"
)

// Options say how Install lays Liqo's objects out.
type Options struct {
	// Namespace is Liqo's namespace (--liqo-namespace); DefaultNamespace when empty.
	Namespace string
	// ClusterID is the cluster ID written in the cluster-ID ConfigMap.
	ClusterID string
	// Algorithm of the cluster key: Ed25519 by default, RSA-2048 with --tls-compatibility-mode.
	Algorithm crypto.KeyAlgorithm
}

// Install creates what Liqo's chart and its authentication module create at
// start in Liqo's namespace, and runs no controller: the namespace, the
// cluster-ID ConfigMap labelled with the version Liqo's chart gives it, and the
// cluster key Secret (InitClusterKeys: created only when absent, never
// replaced). It returns Liqo's key. (Liqo v1.2.0 pkg/consts/clusterid.go, A/keys.go.)
func Install(ctx context.Context, c client.Client, o Options) (gocrypto.Signer, error) {
	ns := o.Namespace
	if ns == "" {
		ns = DefaultNamespace
	}
	if err := createIfAbsent(ctx, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return nil, err
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: reconcilerliqo.ClusterIDConfigMap, Namespace: ns,
			Labels: map[string]string{"app.kubernetes.io/name": "clusterid-configmap", reconcilerliqo.VersionLabel: reconcilerliqo.TestedVersion}},
		Data: map[string]string{reconcilerliqo.ClusterIDKey: o.ClusterID},
	}
	if err := createIfAbsent(ctx, c, cm); err != nil {
		return nil, err
	}
	alg := o.Algorithm
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
		Data: map[string][]byte{crypto.PrivateKeyField: priv, crypto.PublicKeyField: pub}}
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
	key, err := crypto.ParsePrivateKeyPEM(secret.Data[crypto.PrivateKeyField])
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
