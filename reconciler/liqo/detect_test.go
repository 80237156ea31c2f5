package liqo_test

import (
	"context"
	gocrypto "crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/reconciler/liqo"
)

const clusterID = "cluster-a"

func newKey(t *testing.T, alg string) gocrypto.Signer {
	t.Helper()
	var key gocrypto.Signer
	var err error
	switch alg {
	case "ECDSA P-256":
		key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	default:
		key, err = crypto.GenerateKey(crypto.KeyAlgorithm(alg))
	}
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func clusterIDConfigMap(ns, id string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: liqo.ClusterIDConfigMap},
		Data: map[string]string{liqo.ClusterIDKey: id}}
}

// keysSecret lays key out as Liqo's authentication-keys; pub, when not nil,
// replaces the public key.
func keysSecret(t *testing.T, ns string, key gocrypto.Signer, pub gocrypto.PublicKey) *corev1.Secret {
	t.Helper()
	if pub == nil {
		pub = key.Public()
	}
	priv, err := crypto.MarshalPrivateKeyPEM(key)
	if err != nil {
		t.Fatal(err)
	}
	pubPEM, err := crypto.MarshalPublicKeyPEM(pub)
	if err != nil {
		t.Fatal(err)
	}
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: crypto.KeySecretName},
		Data: map[string][]byte{crypto.PrivateKeyField: priv, crypto.PublicKeyField: pubPEM}}
}

func spec(mode gitpeerv1alpha1.LiqoMode) *gitpeerv1alpha1.LiqoSpec {
	return &gitpeerv1alpha1.LiqoSpec{Mode: mode}
}

func TestDetect(t *testing.T) {
	ed, rsa, ec := newKey(t, "Ed25519"), newKey(t, "RSA-2048"), newKey(t, "ECDSA P-256")
	liqoNS := gitpeerv1alpha1.DefaultLiqoNamespace
	installed := []client.Object{clusterIDConfigMap(liqoNS, clusterID), keysSecret(t, liqoNS, ed, nil)}
	badKey := keysSecret(t, liqoNS, ed, nil)
	badKey.Data[crypto.PrivateKeyField] = []byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")
	for name, tc := range map[string]struct {
		spec    *gitpeerv1alpha1.LiqoSpec
		objects []client.Object
		// key is Liqo's key when Liqo mode is on; nil for standalone.
		key gocrypto.Signer
		// reason and message are the expected *liqo.Error.
		reason, message string
	}{
		"unset spec, Liqo absent: standalone": {spec: nil},
		"Auto, Liqo absent: standalone":       {spec: spec(gitpeerv1alpha1.LiqoAuto)},
		"Auto, Liqo installed":                {spec: spec(""), objects: installed, key: ed},
		"unset spec, Liqo installed":          {spec: nil, objects: installed, key: ed},
		"Enabled, Liqo absent": {spec: spec(gitpeerv1alpha1.LiqoEnabled), reason: gitpeerv1alpha1.LiqoPrerequisitesMissingReason,
			message: "ConfigMap liqo/liqo-clusterid-configmap and Secret liqo/authentication-keys missing"},
		"Enabled, key Secret missing": {spec: spec(gitpeerv1alpha1.LiqoEnabled), objects: installed[:1],
			reason: gitpeerv1alpha1.LiqoPrerequisitesMissingReason, message: "Secret liqo/authentication-keys missing"},
		"Auto, ConfigMap only: no guess": {spec: spec(gitpeerv1alpha1.LiqoAuto), objects: installed[:1],
			reason: gitpeerv1alpha1.LiqoPrerequisitesMissingReason, message: "half installed in namespace liqo: Secret liqo/authentication-keys is missing"},
		"Auto, Secret only: no guess": {spec: spec(gitpeerv1alpha1.LiqoAuto), objects: installed[1:],
			reason: gitpeerv1alpha1.LiqoPrerequisitesMissingReason, message: "ConfigMap liqo/liqo-clusterid-configmap is missing"},
		"Enabled, Liqo installed":              {spec: spec(gitpeerv1alpha1.LiqoEnabled), objects: installed, key: ed},
		"Disabled, Liqo installed: standalone": {spec: spec(gitpeerv1alpha1.LiqoDisabled), objects: installed},
		"other namespace": {spec: &gitpeerv1alpha1.LiqoSpec{Namespace: "liqo-system"},
			objects: []client.Object{clusterIDConfigMap("liqo-system", clusterID), keysSecret(t, "liqo-system", rsa, nil)}, key: rsa},
		"Liqo in another namespace than spec's: standalone": {spec: &gitpeerv1alpha1.LiqoSpec{Namespace: "liqo-system"}, objects: installed},
		"cluster ID mismatch": {spec: nil, objects: []client.Object{clusterIDConfigMap(liqoNS, "cluster-b"), installed[1]},
			reason: gitpeerv1alpha1.LiqoClusterIDMismatchReason, message: `Liqo's cluster ID is "cluster-b" (ConfigMap liqo/liqo-clusterid-configmap) but spec.clusterID is "cluster-a"`},
		"empty cluster ID": {spec: nil, objects: []client.Object{clusterIDConfigMap(liqoNS, ""), installed[1]},
			reason: gitpeerv1alpha1.LiqoPrerequisitesMissingReason, message: "has no CLUSTER_ID"},
		"RSA key":   {spec: nil, objects: []client.Object{installed[0], keysSecret(t, liqoNS, rsa, nil)}, key: rsa},
		"ECDSA key": {spec: nil, objects: []client.Object{installed[0], keysSecret(t, liqoNS, ec, nil)}, key: ec},
		"unparsable private key": {spec: nil, objects: []client.Object{installed[0], badKey},
			reason: gitpeerv1alpha1.LiqoKeyInvalidReason, message: `invalid "privateKey"`},
		"public key of another key": {spec: nil, objects: []client.Object{installed[0], keysSecret(t, liqoNS, ed, rsa.Public())},
			reason: gitpeerv1alpha1.LiqoKeyInvalidReason, message: `"publicKey" is not the public key of "privateKey"`},
	} {
		t.Run(name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithObjects(tc.objects...).Build()
			mode, err := liqo.Detect(context.Background(), c, tc.spec, clusterID)
			if tc.reason != "" {
				requireError(t, err, tc.reason, tc.message)
				return
			}
			if err != nil {
				t.Fatalf("Detect: %v", err)
			}
			if mode.Active != (tc.key != nil) {
				t.Fatalf("Active = %v, want %v (%s)", mode.Active, tc.key != nil, mode)
			}
			if mode.Namespace != tc.spec.GetNamespace() {
				t.Errorf("Namespace = %q, want %q", mode.Namespace, tc.spec.GetNamespace())
			}
			if tc.key == nil {
				if mode.Key != nil || mode.ClusterID != "" || mode.String() != "standalone" {
					t.Errorf("standalone mode carries Liqo's things: %+v", mode)
				}
				return
			}
			if !tc.key.Public().(interface{ Equal(gocrypto.PublicKey) bool }).Equal(mode.Key.Public()) {
				t.Errorf("Key is not Liqo's key")
			}
			want := "Liqo mode: cluster ID cluster-a, key type " + crypto.KeyType(tc.key.Public())
			if mode.ClusterID != clusterID || mode.String() != want {
				t.Errorf("mode = %q (cluster ID %q), want %q", mode, mode.ClusterID, want)
			}
		})
	}
}

func requireError(t *testing.T, err error, reason, message string) {
	t.Helper()
	var le *liqo.Error
	if !errors.As(err, &le) {
		t.Fatalf("error = %v, want a *liqo.Error with reason %s", err, reason)
	}
	if got, _ := liqo.Reason(err); got != reason || le.Reason != reason {
		t.Errorf("reason = %s, want %s", got, reason)
	}
	if !strings.Contains(err.Error(), message) {
		t.Errorf("error = %q, want it to contain %q", err, message)
	}
}

// TestDetectDisabledReadsNothing: mode Disabled does not even read Liqo's
// objects, so it needs no RBAC on them.
func TestDetectDisabledReadsNothing(t *testing.T) {
	c := interceptor.NewClient(fake.NewClientBuilder().Build(), interceptor.Funcs{
		Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
			t.Error("Disabled read an object")
			return nil
		},
	})
	if mode, err := liqo.Detect(context.Background(), c, spec(gitpeerv1alpha1.LiqoDisabled), clusterID); err != nil || mode.Active {
		t.Fatalf("Detect = %v, %v; want standalone", mode, err)
	}
}

// TestDetectUnreadable: an object the agent may not read stops it (it cannot
// tell the mode); an unavailable API server is returned as it is, to be
// retried.
func TestDetectUnreadable(t *testing.T) {
	for name, tc := range map[string]struct {
		err    error
		reason string
	}{
		"forbidden":   {apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, crypto.KeySecretName, errors.New("no RBAC")), gitpeerv1alpha1.LiqoPrerequisitesMissingReason},
		"unavailable": {apierrors.NewServiceUnavailable("down"), ""},
	} {
		t.Run(name, func(t *testing.T) {
			c := interceptor.NewClient(fake.NewClientBuilder().Build(), interceptor.Funcs{
				Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
					return tc.err
				},
			})
			_, err := liqo.Detect(context.Background(), c, nil, clusterID)
			if tc.reason != "" {
				requireError(t, err, tc.reason, "cannot tell whether Liqo is installed")
				return
			}
			if _, typed := liqo.Reason(err); typed || !errors.Is(err, tc.err) {
				t.Fatalf("error = %v, want %v untyped", err, tc.err)
			}
		})
	}
}
