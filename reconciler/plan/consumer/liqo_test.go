package consumer

import (
	gocrypto "crypto"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/vocabulary"
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
			metav1.SetMetaDataAnnotation(&s.ObjectMeta, vocabulary.ProposedAnnotation, "branch x")
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
			AuthParams: authv1beta1.AuthParams{APIServer: apiServer, CA: []byte("reviewed CA"), SignedCRT: cert}}
	}
	// with is s changed by change, as Liqo's local renewer or another writer changes it.
	with := func(s *authv1beta1.IdentitySpec, change func(*authv1beta1.AuthParams)) *authv1beta1.IdentitySpec {
		s = s.DeepCopy()
		change(&s.AuthParams)
		return s
	}
	old, renewed := certificate(t, key, t0, 7), certificate(t, key, t0.Add(time.Minute), 3)
	sameTimeHigher := certificate(t, key, t0, 8)
	reviewed := spec(old, "https://a")
	applied := ParamsDigest(reviewed)
	// Liqo's renewal: a newer certificate with the provider's whole authParams.
	liqoRenewal := with(spec(renewed, "https://evil"), func(ap *authv1beta1.AuthParams) {
		ap.CA, ap.ProxyURL = []byte("other CA"), ptr.To("http://proxy")
	})
	for name, tc := range map[string]struct {
		current   *authv1beta1.IdentitySpec
		applied   string
		incoming  *authv1beta1.IdentitySpec
		want      IdentityChange
		wantCert  []byte
		wantWrite bool
		wantDrift []string
		wantAPI   string
	}{
		"no Identity: create":                   {nil, "", reviewed, CreateIdentity, old, true, nil, "https://a"},
		"same spec: nothing to write":           {reviewed, applied, reviewed, IdentityUnchanged, old, false, nil, "https://a"},
		"same spec, not annotated: annotate":    {reviewed, "", reviewed, IdentityUnchanged, old, true, nil, "https://a"},
		"identity.yaml moves the API server":    {reviewed, applied, spec(old, "https://b"), UpdateIdentity, old, true, nil, "https://b"},
		"identity.yaml renewed: update":         {reviewed, applied, spec(renewed, "https://a"), UpdateIdentity, renewed, true, nil, "https://a"},
		"Liqo's renewer moved it on: keep":      {spec(renewed, "https://a"), applied, reviewed, KeepRenewed, renewed, false, nil, "https://a"},
		"same NotBefore, larger serial: update": {reviewed, applied, spec(sameTimeHigher, "https://a"), UpdateIdentity, sameTimeHigher, true, nil, "https://a"},
		"same NotBefore, smaller serial: keep":  {spec(sameTimeHigher, "https://a"), applied, reviewed, KeepRenewed, sameTimeHigher, false, nil, "https://a"},
		"broken certificate in the cluster":     {spec([]byte("garbage"), "https://a"), applied, reviewed, UpdateIdentity, old, true, nil, "https://a"},
		"Liqo's renewal rewrote every parameter: keep its certificate, restore the reviewed ones": {liqoRenewal, applied, reviewed, KeepRenewed, renewed, true,
			[]string{"spec.authParams.apiServer", "spec.authParams.ca", "spec.authParams.proxyURL"}, "https://a"},
		"someone moved the API server, same certificate: restore": {spec(old, "https://evil"), applied, reviewed, UpdateIdentity, old, true,
			[]string{"spec.authParams.apiServer"}, "https://a"},
		"a CA dropped (system roots) outside Git: restore": {with(reviewed, func(ap *authv1beta1.AuthParams) { ap.CA = nil }), applied, reviewed, UpdateIdentity, old, true,
			[]string{"spec.authParams.ca"}, "https://a"},
		"drift and a new identity.yaml together: identity.yaml wins": {liqoRenewal, applied, spec(renewed, "https://b"), UpdateIdentity, renewed, true,
			[]string{"spec.authParams.apiServer", "spec.authParams.ca", "spec.authParams.proxyURL"}, "https://b"},
		"an Identity of an earlier version, changed outside Git": {spec(old, "https://evil"), "", reviewed, UpdateIdentity, old, true,
			[]string{"spec.authParams.apiServer"}, "https://a"},
	} {
		t.Run(name, func(t *testing.T) {
			plan, err := PlanIdentity(tc.current, tc.applied, tc.incoming)
			if err != nil {
				t.Fatal(err)
			}
			if plan.Change != tc.want || plan.Write != tc.wantWrite || !slices.Equal(plan.Drifted, tc.wantDrift) {
				t.Errorf("PlanIdentity = %s, write %v, drifted %v; want %s, write %v, drifted %v", plan.Change, plan.Write, plan.Drifted, tc.want, tc.wantWrite, tc.wantDrift)
			}
			if string(plan.Spec.AuthParams.SignedCRT) != string(tc.wantCert) || plan.Spec.AuthParams.APIServer != tc.wantAPI {
				t.Errorf("spec to hold: API server %s, certificate %q", plan.Spec.AuthParams.APIServer, plan.Spec.AuthParams.SignedCRT)
			}
			// Everything but the certificate is identity.yaml's, always.
			if plan.Digest != ParamsDigest(tc.incoming) || ParamsDigest(&plan.Spec) != plan.Digest {
				t.Errorf("the spec to hold does not pin identity.yaml's parameters")
			}
		})
	}
	if _, err := PlanIdentity(reviewed, applied, spec([]byte("garbage"), "https://a")); err == nil {
		t.Errorf("PlanIdentity took an unreadable certificate from identity.yaml")
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
		"no reference yet":               {identity, kubeconfig(cert), "status.kubeconfigSecretRef"},
		"no Secret yet":                  {withRef, nil, "to write Secret"},
		"built from another cert":        {withRef, kubeconfig(renewed), "to rewrite Secret"},
		"not a kubeconfig":               {withRef, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "kubeconfig-controlplane-provider"}, Data: map[string][]byte{authv1beta1.KubeconfigSecretField: []byte("{")}}, "kubeconfig"},
		"Liqo's kubeconfig, up to date":  {withRef, kubeconfig(cert), ""},
		"built for another API server":   {withRef, rewritten(kubeconfig(cert), func(c *clientcmdapi.Cluster) { c.Server = "https://evil:6443" }), "API server, CA and proxy"},
		"with a CA the Identity has not": {withRef, rewritten(kubeconfig(cert), func(c *clientcmdapi.Cluster) { c.CertificateAuthorityData = []byte("CA") }), "API server, CA and proxy"},
		"through a proxy":                {withRef, rewritten(kubeconfig(cert), func(c *clientcmdapi.Cluster) { c.ProxyURL = "http://proxy" }), "API server, CA and proxy"},
		"without TLS verification":       {withRef, rewritten(kubeconfig(cert), func(c *clientcmdapi.Cluster) { c.InsecureSkipTLSVerify = true }), "API server, CA and proxy"},
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

// rewritten is secret with each cluster of its kubeconfig changed by change.
func rewritten(secret *corev1.Secret, change func(*clientcmdapi.Cluster)) *corev1.Secret {
	cfg, err := clientcmd.Load(secret.Data[authv1beta1.KubeconfigSecretField])
	if err != nil {
		panic(err)
	}
	for _, c := range cfg.Clusters {
		change(c)
	}
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		panic(err)
	}
	secret = secret.DeepCopy()
	secret.Data[authv1beta1.KubeconfigSecretField] = data
	return secret
}
