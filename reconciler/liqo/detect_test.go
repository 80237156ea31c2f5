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

// clusterIDConfigMap is Liqo's cluster-ID ConfigMap as Liqo's chart
// (liqo.TestedVersion) installs it.
func clusterIDConfigMap(ns, id string) *corev1.ConfigMap {
	return versioned(ns, id, liqo.TestedVersion)
}

// versioned is Liqo's cluster-ID ConfigMap with version label v (none if "").
func versioned(ns, id, v string) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: liqo.ClusterIDConfigMap},
		Data: map[string]string{liqo.ClusterIDKey: id}}
	if v != "" {
		cm.Labels = map[string]string{liqo.VersionLabel: v}
	}
	return cm
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
		// version and warning are Mode's when Liqo's ConfigMap is not clusterIDConfigMap's.
		version, warning string
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
		"Liqo v1.1.2: refused": {spec: nil, objects: []client.Object{versioned(liqoNS, clusterID, "v1.1.2"), installed[1]},
			reason: gitpeerv1alpha1.LiqoVersionUnsupportedReason, message: "Liqo v1.1.2 is installed (label app.kubernetes.io/version on ConfigMap liqo-clusterid-configmap) but gitpeer needs Liqo v1.1.3 or later"},
		"Liqo v1.0.0 with mode Enabled: refused": {spec: spec(gitpeerv1alpha1.LiqoEnabled), objects: []client.Object{versioned(liqoNS, clusterID, "v1.0.0"), installed[1]},
			reason: gitpeerv1alpha1.LiqoVersionUnsupportedReason, message: "panic on the PEM keys"},
		"Liqo version unknown: runs, warned": {spec: nil, objects: []client.Object{versioned(liqoNS, clusterID, ""), installed[1]}, key: ed,
			version: "", warning: "Liqo's version is unknown (no label app.kubernetes.io/version on ConfigMap liqo-clusterid-configmap): not checked"},
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
			want := "Liqo mode: cluster ID cluster-a, key type " + crypto.KeyType(tc.key.Public()) + ", Liqo " + liqo.TestedVersion
			if tc.warning != "" {
				want = "Liqo mode: cluster ID cluster-a, key type " + crypto.KeyType(tc.key.Public()) + "; warning: " + mode.VersionWarning
				if mode.Version != tc.version || !strings.HasPrefix(mode.VersionWarning, tc.warning) {
					t.Errorf("version %q, warning %q; want %q, %q…", mode.Version, mode.VersionWarning, tc.version, tc.warning)
				}
			}
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

// TestCheckVersion: the Liqo versions gitpeer refuses, with why, and those it
// runs with a warning.
func TestCheckVersion(t *testing.T) {
	for _, tc := range []struct {
		version string
		// refused is in the message of a refusal; warning in the warning of a version run anyway.
		refused, warning string
	}{
		{version: "v0.10.3", refused: "Liqo before v1.0.0 has no authentication.liqo.io Tenants"},
		{version: "v1.0.0-rc.3", refused: "Liqo before v1.0.0"},
		{version: "v1.0.0", refused: "panic on the PEM keys"},
		{version: "v1.0.1", refused: "panic on the PEM keys"},
		{version: "v1.0.2", refused: "never renews the control-plane certificates"},
		{version: "v1.1.0", refused: "never renews"},
		{version: "v1.1.2", refused: "never renews"},
		{version: "1.1.2", refused: "never renews"},
		{version: "v1.1.3-rc.1", refused: "never renews"},
		{version: "v1.1.3"},
		{version: "v1.2.0-rc.1"},
		{version: liqo.TestedVersion},
		{version: "v1.2.1", warning: "Liqo v1.2.1 is newer than v1.2.0, the version gitpeer is tested with"},
		{version: "v2.0.0", warning: "newer than v1.2.0"},
		{version: "", warning: "Liqo's version is unknown"},
		{version: "e9f4428d32fdf97705a0b9fecb6cda59ccd11e4e", warning: `Liqo's version "e9f4428d32fdf97705a0b9fecb6cda59ccd11e4e" (label app.kubernetes.io/version on ConfigMap liqo-clusterid-configmap) is no release version: not checked`},
	} {
		t.Run(tc.version, func(t *testing.T) {
			warning, err := liqo.CheckVersion(tc.version)
			if tc.refused != "" {
				requireError(t, err, gitpeerv1alpha1.LiqoVersionUnsupportedReason, tc.refused)
				if !strings.Contains(err.Error(), "upgrade Liqo (tested: v1.2.0), or set spec.liqo.mode Disabled") {
					t.Errorf("error %q does not say what to do", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("CheckVersion(%q): %v", tc.version, err)
			}
			if tc.warning == "" && warning != "" || !strings.Contains(warning, tc.warning) {
				t.Errorf("warning = %q, want %q", warning, tc.warning)
			}
		})
	}
}
