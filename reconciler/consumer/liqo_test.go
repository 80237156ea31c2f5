package consumer

import (
	gocrypto "crypto"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	"github.com/gitpeer/gitpeer/crypto"
)

func newKey(t *testing.T) gocrypto.Signer {
	t.Helper()
	key, err := crypto.GenerateKey(crypto.Ed25519)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func sign(t *testing.T, key gocrypto.Signer, nonce string) []byte {
	t.Helper()
	sig, err := crypto.SignNonce(key, nonce)
	if err != nil {
		t.Fatal(err)
	}
	return sig
}

func TestPlanSignedNonce(t *testing.T) {
	liqoKey, otherKey := newKey(t), newKey(t)
	const nonce = "bm9uY2U="
	secret := func(nonce string, signature []byte, proposed bool) *corev1.Secret {
		s := &corev1.Secret{Data: map[string][]byte{authv1beta1.NonceSecretField: []byte(nonce)}}
		if signature != nil {
			s.Data[authv1beta1.SignedNonceSecretField] = signature
		}
		if proposed {
			metav1.SetMetaDataAnnotation(&s.ObjectMeta, ProposedAnnotation, "branch x")
		}
		return s
	}
	good := sign(t, liqoKey, nonce)
	for name, tc := range map[string]struct {
		secret *corev1.Secret
		want   NonceStep
	}{
		"no Secret: write the nonce":                    {nil, WriteNonce},
		"Secret of an older nonce: write the new one":   {secret("old", sign(t, liqoKey, "old"), true), WriteNonce},
		"nonce written, not signed yet: wait":           {secret(nonce, nil, false), WaitForSignature},
		"signed by another key: wait for Liqo's signer": {secret(nonce, sign(t, otherKey, nonce), false), WaitForSignature},
		"signature of another nonce: wait":              {secret(nonce, sign(t, liqoKey, "old"), false), WaitForSignature},
		"signed by Liqo's key: propose":                 {secret(nonce, good, false), ProposeSigned},
		"proposed for this nonce":                       {secret(nonce, good, true), AlreadyProposed},
	} {
		t.Run(name, func(t *testing.T) {
			got, sig := PlanSignedNonce(tc.secret, nonce, liqoKey.Public())
			if got != tc.want {
				t.Fatalf("PlanSignedNonce = %s, want %s", got, tc.want)
			}
			if (got == ProposeSigned) != (sig != nil) || (sig != nil && string(sig) != string(good)) {
				t.Errorf("signature = %q with step %s", sig, got)
			}
		})
	}
}

// certificate returns a PEM certificate for key valid from notBefore with serial.
func certificate(t *testing.T, key gocrypto.Signer, notBefore time.Time, serial int64) []byte {
	t.Helper()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "consumer", Organization: []string{"liqo.io"}},
		NotBefore: notBefore, NotAfter: notBefore.Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func TestPlanIdentity(t *testing.T) {
	key := newKey(t)
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	spec := func(cert []byte, apiServer string) *authv1beta1.IdentitySpec {
		return &authv1beta1.IdentitySpec{ClusterID: "provider", Type: authv1beta1.ControlPlaneIdentityType,
			AuthParams: authv1beta1.AuthParams{APIServer: apiServer, SignedCRT: cert}}
	}
	old, renewed := certificate(t, key, t0, 7), certificate(t, key, t0.Add(time.Minute), 3)
	sameTimeHigher := certificate(t, key, t0, 8)
	for name, tc := range map[string]struct {
		current, incoming *authv1beta1.IdentitySpec
		want              IdentityChange
	}{
		"no Identity: create":                       {nil, spec(old, "https://a"), CreateIdentity},
		"same spec: nothing to write":               {spec(old, "https://a"), spec(old, "https://a"), IdentityUnchanged},
		"same certificate, other API server":        {spec(old, "https://a"), spec(old, "https://b"), UpdateIdentity},
		"identity.yaml renewed: update":             {spec(old, "https://a"), spec(renewed, "https://a"), UpdateIdentity},
		"Liqo's renewer moved it on: keep":          {spec(renewed, "https://a"), spec(old, "https://a"), KeepRenewed},
		"same NotBefore, larger serial: update":     {spec(old, "https://a"), spec(sameTimeHigher, "https://a"), UpdateIdentity},
		"same NotBefore, smaller serial: keep":      {spec(sameTimeHigher, "https://a"), spec(old, "https://a"), KeepRenewed},
		"broken certificate in the cluster: update": {spec([]byte("garbage"), "https://a"), spec(old, "https://a"), UpdateIdentity},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := PlanIdentity(tc.current, tc.incoming)
			if err != nil || got != tc.want {
				t.Errorf("PlanIdentity = %s, %v; want %s", got, err, tc.want)
			}
		})
	}
}

func TestLiqoKubeconfig(t *testing.T) {
	key := newKey(t)
	cert, renewed := certificate(t, key, time.Now(), 1), certificate(t, key, time.Now(), 2)
	identity := &authv1beta1.Identity{ObjectMeta: metav1.ObjectMeta{Name: "controlplane-provider"},
		Spec: authv1beta1.IdentitySpec{ClusterID: "provider", AuthParams: authv1beta1.AuthParams{APIServer: "https://provider:6443", SignedCRT: cert}}}
	withRef := identity.DeepCopy()
	withRef.Status.KubeconfigSecretRef = &corev1.LocalObjectReference{Name: "kubeconfig-controlplane-provider"}
	kubeconfig := func(cert []byte) *corev1.Secret {
		data, err := crypto.BuildKubeconfig(crypto.KubeconfigParams{ProviderClusterID: "provider", IdentityName: identity.Name,
			APIServer: "https://provider:6443", Certificate: cert, Key: key})
		if err != nil {
			t.Fatal(err)
		}
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "kubeconfig-controlplane-provider"},
			Data: map[string][]byte{authv1beta1.KubeconfigSecretField: data}}
	}
	for name, tc := range map[string]struct {
		identity *authv1beta1.Identity
		secret   *corev1.Secret
		wantErr  string
	}{
		"no reference yet":              {identity, kubeconfig(cert), "status.kubeconfigSecretRef"},
		"no Secret yet":                 {withRef, nil, "to write Secret"},
		"built from another cert":       {withRef, kubeconfig(renewed), "to rewrite Secret"},
		"not a kubeconfig":              {withRef, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "kubeconfig-controlplane-provider"}, Data: map[string][]byte{authv1beta1.KubeconfigSecretField: []byte("{")}}, "kubeconfig"},
		"Liqo's kubeconfig, up to date": {withRef, kubeconfig(cert), ""},
		// The Secret of the revoked Identity, held by Liqo's CRD replicator,
		// before Liqo's identity controller could write the new one.
		"held by the CRD replicator's finalizer": {identity, terminating(kubeconfig(cert), ReplicatorFinalizer), "held by finalizers [crdreplicator.liqo.io/operator]; Liqo's identity controller writes the new one once it is gone; crdreplicator.liqo.io/operator is removed by Liqo's CRD replicator"},
		"held by the CRD replicator, referenced": {withRef, terminating(kubeconfig(cert), ReplicatorFinalizer, "other/finalizer"), "Liqo's CRD replicator"},
		"held by another finalizer":              {withRef, terminating(kubeconfig(cert), "other/finalizer"), "held by finalizers [other/finalizer]; Liqo's identity controller writes the new one once it is gone"},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := LiqoKubeconfig(tc.identity, tc.secret)
			if tc.wantErr == "" {
				if err != nil || string(got) != string(tc.secret.Data[authv1beta1.KubeconfigSecretField]) {
					t.Fatalf("LiqoKubeconfig = %v, want the Secret's kubeconfig", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("LiqoKubeconfig error = %v, want %q", err, tc.wantErr)
			}
		})
	}
	if err := LiqoSecretTerminating(terminating(kubeconfig(cert), "other/finalizer")); strings.Contains(err.Error(), "replicator") {
		t.Errorf("without the replicator's finalizer: %v, want no word of the replicator", err)
	}
}

// terminating is secret being deleted, held by finalizers.
func terminating(secret *corev1.Secret, finalizers ...string) *corev1.Secret {
	secret.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	secret.Finalizers = finalizers
	return secret
}
