package crypto

import (
	"bytes"
	"context"
	"crypto"
	"errors"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/gitpeer/gitpeer/test/controlplane"
)

func TestKeySecretRoundTrip(t *testing.T) {
	for _, alg := range []KeyAlgorithm{Ed25519, RSA2048} {
		key, err := GenerateKey(alg)
		requireNoError(t, err)
		secret, err := keySecret("agent", key)
		requireNoError(t, err)
		if secret.Name != KeySecretName || secret.Namespace != "agent" || secret.Immutable == nil || !*secret.Immutable {
			t.Fatalf("Secret metadata is %+v", secret.ObjectMeta)
		}
		loaded, err := keyFromSecret(secret, alg)
		requireNoError(t, err)
		if !samePublicKey(loaded.Public(), key.Public()) {
			t.Fatalf("%s key changed through the Secret", alg)
		}
	}
}

func TestKeyFromSecretRejects(t *testing.T) {
	key := newEd25519(t)
	good, err := keySecret("agent", key)
	requireNoError(t, err)
	otherPub, err := MarshalPublicKeyPEM(newEd25519(t).Public())
	requireNoError(t, err)
	for name, tc := range map[string]struct {
		data map[string][]byte
		alg  KeyAlgorithm
		want string
	}{
		"empty":               {nil, Ed25519, `Secret agent/authentication-keys has no "privateKey"`},
		"no public key":       {map[string][]byte{PrivateKeyField: good.Data[PrivateKeyField]}, Ed25519, `has no "publicKey"`},
		"corrupt private key": {map[string][]byte{PrivateKeyField: []byte("garbage"), PublicKeyField: good.Data[PublicKeyField]}, Ed25519, `has an invalid "privateKey"`},
		"corrupt public key":  {map[string][]byte{PrivateKeyField: good.Data[PrivateKeyField], PublicKeyField: []byte("garbage")}, Ed25519, `has an invalid "publicKey"`},
		"mismatched key pair": {map[string][]byte{PrivateKeyField: good.Data[PrivateKeyField], PublicKeyField: otherPub}, Ed25519, `"publicKey" is not the public key of "privateKey"`},
		"other algorithm":     {good.Data, RSA2048, "holds an Ed25519 key, not RSA-2048; delete the Secret"},
	} {
		t.Run(name, func(t *testing.T) {
			secret := good.DeepCopy()
			secret.Data = tc.data
			_, err := keyFromSecret(secret, tc.alg)
			requireRule(t, err, RuleKeySecret, tc.want)
		})
	}
}

// TestAgainstControlPlane runs the key Secret logic, and the CSR path, against
// a real etcd + kube-apiserver + kube-controller-manager.
func TestAgainstControlPlane(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	cp := controlplane.Start(t)
	c, err := client.NewWithWatch(cp.Config, client.Options{})
	requireNoError(t, err)
	ctx := context.Background()
	newNamespace := func(t *testing.T) string {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "agent-"}}
		requireNoError(t, c.Create(ctx, ns))
		return ns.Name
	}
	getSecret := func(t *testing.T, ns string) *corev1.Secret {
		var s corev1.Secret
		requireNoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: KeySecretName}, &s))
		return &s
	}

	t.Run("created once, then loaded", func(t *testing.T) {
		ns := newNamespace(t)
		created, err := LoadOrCreateKey(ctx, c, ns, Ed25519)
		requireNoError(t, err)
		secret := getSecret(t, ns)
		if secret.Immutable == nil || !*secret.Immutable {
			t.Fatal("key Secret is not immutable")
		}
		for range 2 {
			loaded, err := LoadOrCreateKey(ctx, c, ns, Ed25519)
			requireNoError(t, err)
			if !samePublicKey(loaded.Public(), created.Public()) {
				t.Fatal("loading returned another key")
			}
		}
		if again := getSecret(t, ns); again.ResourceVersion != secret.ResourceVersion {
			t.Fatal("loading modified the Secret")
		}
		pub, err := ParsePublicKey(secret.Data[PublicKeyField])
		requireNoError(t, err)
		if !samePublicKey(pub, created.Public()) {
			t.Fatal("stored public key is not the returned key's")
		}
	})

	t.Run("RSA-2048", func(t *testing.T) {
		ns := newNamespace(t)
		key, err := LoadOrCreateKey(ctx, c, ns, RSA2048)
		requireNoError(t, err)
		if alg, _ := AlgorithmOf(key.Public()); alg != RSA2048 {
			t.Fatalf("algorithm is %q", alg)
		}
	})

	t.Run("existing key is kept", func(t *testing.T) {
		ns := newNamespace(t)
		existing := newEd25519(t)
		secret, err := keySecret(ns, existing)
		requireNoError(t, err)
		secret.Immutable = nil // as another tool might have written it
		requireNoError(t, c.Create(ctx, secret))
		loaded, err := LoadOrCreateKey(ctx, c, ns, Ed25519)
		requireNoError(t, err)
		if !samePublicKey(loaded.Public(), existing.Public()) {
			t.Fatal("existing key was not returned")
		}
		_, err = LoadOrCreateKey(ctx, c, ns, RSA2048)
		requireRule(t, err, RuleKeySecret, "holds an Ed25519 key, not RSA-2048")
		if got := getSecret(t, ns); !bytes.Equal(got.Data[PrivateKeyField], secret.Data[PrivateKeyField]) {
			t.Fatal("existing key was replaced")
		}
	})

	t.Run("corrupt Secret is an error and stays", func(t *testing.T) {
		ns := newNamespace(t)
		corrupt := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: KeySecretName},
			Data:       map[string][]byte{PrivateKeyField: []byte("not a key"), PublicKeyField: []byte("nor this")},
		}
		requireNoError(t, c.Create(ctx, corrupt))
		_, err := LoadOrCreateKey(ctx, c, ns, Ed25519)
		requireRule(t, err, RuleKeySecret, "Secret "+ns+`/authentication-keys has an invalid "privateKey"`)
		if got := getSecret(t, ns); string(got.Data[PrivateKeyField]) != "not a key" {
			t.Fatal("corrupt Secret was overwritten")
		}
	})

	t.Run("concurrent agents agree on one key", func(t *testing.T) {
		ns := newNamespace(t)
		keys := make([]crypto.Signer, 4)
		errs := make([]error, len(keys))
		var wg sync.WaitGroup
		for i := range keys {
			wg.Go(func() { keys[i], errs[i] = LoadOrCreateKey(ctx, c, ns, Ed25519) })
		}
		wg.Wait()
		for i := range keys {
			requireNoError(t, errs[i])
			if !samePublicKey(keys[i].Public(), keys[0].Public()) {
				t.Fatal("concurrent callers got different keys")
			}
		}
	})

	t.Run("creation race lost to another writer", func(t *testing.T) {
		ns := newNamespace(t)
		winner := newEd25519(t)
		racing := interceptor.NewClient(c, interceptor.Funcs{
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				other, err := keySecret(ns, winner)
				requireNoError(t, err)
				requireNoError(t, c.Create(ctx, other))
				return c.Create(ctx, obj, opts...)
			},
		})
		loaded, err := LoadOrCreateKey(ctx, racing, ns, Ed25519)
		requireNoError(t, err)
		if !samePublicKey(loaded.Public(), winner.Public()) {
			t.Fatal("the loser's key was returned instead of the stored one")
		}
	})

	t.Run("API errors are not key errors", func(t *testing.T) {
		_, err := LoadOrCreateKey(ctx, c, "Invalid_Namespace", Ed25519)
		if err == nil {
			t.Fatal("no error for an invalid namespace")
		}
		var e *Error
		if errors.As(err, &e) {
			t.Fatalf("API failure reported as a key problem: %v", err)
		}
	})

	t.Run("CSR signed by Kubernetes", func(t *testing.T) { testKubernetesIssuance(t, cp) })
}
