package crypto

import (
	"context"
	"crypto"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The Secret holding the cluster key pair, in the agent's namespace, as Liqo
// names it and its keys.
const (
	KeySecretName   = "authentication-keys"
	PrivateKeyField = "privateKey"
	PublicKeyField  = "publicKey"
)

// LoadOrCreateKey returns the cluster private key stored in the Secret
// KeySecretName in namespace. If the Secret does not exist it generates a
// key of algorithm alg and creates the Secret, immutable; if another writer
// created it first, that key wins. An existing key is never replaced: a
// Secret that is corrupt (missing or unparsable fields, a public key that is
// not the private key's) or holds a key of another algorithm is an *Error
// with RuleKeySecret, to be fixed by a person. Use a client that reads from
// the API server, not from a cache, so a fresh Secret is seen.
func LoadOrCreateKey(ctx context.Context, c client.Client, namespace string, alg KeyAlgorithm) (crypto.Signer, error) {
	name := client.ObjectKey{Namespace: namespace, Name: KeySecretName}
	var secret corev1.Secret
	err := c.Get(ctx, name, &secret)
	if apierrors.IsNotFound(err) {
		created, createErr := createKeySecret(ctx, c, namespace, alg)
		if !apierrors.IsAlreadyExists(createErr) {
			return created, createErr
		}
		err = c.Get(ctx, name, &secret)
	}
	if err != nil {
		return nil, fmt.Errorf("cannot get Secret %s/%s: %w", namespace, KeySecretName, err)
	}
	return keyFromSecret(&secret, alg)
}

// createKeySecret generates a key of algorithm alg and stores it in a new
// Secret. An AlreadyExists error means another writer was first.
func createKeySecret(ctx context.Context, c client.Client, namespace string, alg KeyAlgorithm) (crypto.Signer, error) {
	key, err := GenerateKey(alg)
	if err != nil {
		return nil, err
	}
	secret, err := keySecret(namespace, key)
	if err != nil {
		return nil, err
	}
	if err := c.Create(ctx, secret); err != nil {
		return nil, fmt.Errorf("cannot create Secret %s/%s: %w", namespace, KeySecretName, err)
	}
	return key, nil
}

// keySecret returns the immutable Secret storing key.
func keySecret(namespace string, key crypto.Signer) (*corev1.Secret, error) {
	privatePEM, err := MarshalPrivateKeyPEM(key)
	if err != nil {
		return nil, err
	}
	publicPEM, err := MarshalPublicKeyPEM(key.Public())
	if err != nil {
		return nil, err
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: KeySecretName},
		Type:       corev1.SecretTypeOpaque,
		Immutable:  ptr.To(true),
		Data:       map[string][]byte{PrivateKeyField: privatePEM, PublicKeyField: publicPEM},
	}, nil
}

// keyFromSecret parses and cross-checks the key pair stored in secret and
// requires a key of algorithm alg.
func keyFromSecret(secret *corev1.Secret, alg KeyAlgorithm) (crypto.Signer, error) {
	key, err := ParseKeySecret(secret)
	if err != nil {
		return nil, err
	}
	if got, _ := AlgorithmOf(key.Public()); got != alg {
		return nil, newError(RuleKeySecret, nil, "Secret %s/%s holds an %s key, not %s; delete the Secret to replace the key",
			secret.Namespace, secret.Name, describeKey(key.Public()), alg)
	}
	return key, nil
}

// ParseKeySecret parses the key pair of a Secret laid out as Liqo's
// authentication-keys (PrivateKeyField: PKCS #8 PEM, PublicKeyField: PKIX PEM)
// and checks that the public key is the private key's. The key may be of any
// type ParsePrivateKeyPEM allows (Ed25519, RSA, ECDSA). Failures are *Error
// with RuleKeySecret.
func ParseKeySecret(secret *corev1.Secret) (crypto.Signer, error) {
	where := fmt.Sprintf("Secret %s/%s", secret.Namespace, secret.Name)
	for _, field := range []string{PrivateKeyField, PublicKeyField} {
		if len(secret.Data[field]) == 0 {
			return nil, newError(RuleKeySecret, nil, "%s has no %q", where, field)
		}
	}
	key, err := ParsePrivateKeyPEM(secret.Data[PrivateKeyField])
	if err != nil {
		return nil, newError(RuleKeySecret, err, "%s has an invalid %q", where, PrivateKeyField)
	}
	pub, err := ParsePublicKey(secret.Data[PublicKeyField])
	if err != nil {
		return nil, newError(RuleKeySecret, err, "%s has an invalid %q", where, PublicKeyField)
	}
	if !samePublicKey(key.Public(), pub) {
		return nil, newError(RuleKeySecret, nil, "%s: %q is not the public key of %q", where, PublicKeyField, PrivateKeyField)
	}
	return key, nil
}
