package crypto

import (
	"crypto"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"os"
	"slices"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// Fuzz targets for every parser of untrusted input. Beyond not panicking,
// each checks that failures are *Error and that anything accepted really
// satisfies the rules.

// requireTyped fails unless err is nil or an *Error.
func requireTyped(t *testing.T, err error) {
	t.Helper()
	var e *Error
	if err != nil && !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not an *Error", err, err)
	}
}

// docsTenant reads the documented Tenant for seed corpora.
func docsTenant(f *testing.F) (nonce string, tenant liqoTenant) {
	raw, err := os.ReadFile("testdata/liqo-docs/nonce.txt")
	if err != nil {
		f.Fatal(err)
	}
	data, err := os.ReadFile("testdata/liqo-docs/tenant.yaml")
	if err != nil {
		f.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &tenant); err != nil {
		f.Fatal(err)
	}
	return string(raw), tenant
}

func FuzzParsePublicKey(f *testing.F) {
	_, tenant := docsTenant(f)
	f.Add(tenant.Spec.PublicKey)
	for _, key := range []crypto.Signer{mustKey(f, Ed25519), mustKey(f, RSA2048)} {
		data, err := MarshalPublicKeyPEM(key.Public())
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		pub, err := ParsePublicKey(data)
		requireTyped(t, err)
		if err != nil {
			return
		}
		requireNoError(t, checkPublicKey(pub, RulePublicKey))
		if _, err := MarshalPublicKeyPEM(pub); err != nil {
			t.Fatalf("accepted key does not marshal: %v", err)
		}
	})
}

func FuzzVerifyNonceSignature(f *testing.F) {
	nonce, tenant := docsTenant(f)
	f.Add(tenant.Spec.PublicKey, nonce, tenant.Spec.Signature)
	key := mustKey(f, RSA2048)
	sig, err := SignNonce(key, nonce)
	if err != nil {
		f.Fatal(err)
	}
	pub, err := MarshalPublicKeyPEM(key.Public())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(pub, nonce, sig)
	f.Fuzz(func(t *testing.T, keyData []byte, nonce string, signature []byte) {
		pub, err := ParsePublicKey(keyData)
		if err != nil {
			return
		}
		requireTyped(t, VerifyNonceSignature(pub, nonce, signature))
	})
}

func FuzzValidateCSR(f *testing.F) {
	_, tenant := docsTenant(f)
	f.Add(tenant.Spec.CSR, docCN, tenant.Spec.PublicKey)
	key := mustKey(f, Ed25519)
	csr, err := BuildCSR(key, consumerID)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(csr, consumerID, []byte(key.Public().(ed25519.PublicKey)))
	f.Fuzz(func(t *testing.T, csrPEM []byte, clusterID string, keyData []byte) {
		pub, err := ParsePublicKey(keyData)
		if err != nil {
			return
		}
		csr, err := ValidateCSR(csrPEM, clusterID, pub)
		requireTyped(t, err)
		if err != nil {
			return
		}
		if csr.Subject.CommonName != clusterID || !slices.Equal(csr.Subject.Organization, []string{CSROrganization}) ||
			len(csr.Subject.Names) != 2 || len(csr.Extensions) != 0 || !samePublicKey(csr.PublicKey, pub) ||
			csr.CheckSignature() != nil {
			t.Fatalf("accepted CSR breaks a rule: subject %v, %d extensions", csr.Subject, len(csr.Extensions))
		}
	})
}

func FuzzVerifyClientCertificate(f *testing.F) {
	data, err := os.ReadFile("testdata/liqo-docs/identity.yaml")
	if err != nil {
		f.Fatal(err)
	}
	var identity liqoIdentity
	if err := yaml.Unmarshal(data, &identity); err != nil {
		f.Fatal(err)
	}
	_, tenant := docsTenant(f)
	f.Add(identity.Spec.AuthParams.SignedCRT, identity.Spec.AuthParams.CA)
	pub, err := ParsePublicKey(tenant.Spec.PublicKey)
	if err != nil {
		f.Fatal(err)
	}
	at := time.Date(2024, 8, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, certPEM, caPEM []byte) {
		cert, err := VerifyClientCertificate(certPEM, caPEM, pub, at)
		requireTyped(t, err)
		if err != nil {
			return
		}
		if !samePublicKey(cert.PublicKey, pub) || at.Before(cert.NotBefore) || at.After(cert.NotAfter) ||
			!slices.Contains(cert.ExtKeyUsage, x509.ExtKeyUsageClientAuth) {
			t.Fatal("accepted certificate breaks a rule")
		}
		RenewalTime(cert)
	})
}

func FuzzValidateNonce(f *testing.F) {
	nonce, _ := docsTenant(f)
	f.Add(nonce)
	f.Add(GenerateNonce())
	f.Fuzz(func(t *testing.T, nonce string) {
		err := ValidateNonce(nonce)
		requireTyped(t, err)
		if err != nil {
			return
		}
		raw, err := base64.StdEncoding.DecodeString(nonce)
		if err != nil || len(raw) != NonceSize || base64.StdEncoding.EncodeToString(raw) != nonce {
			t.Fatalf("accepted non-canonical nonce %q", nonce)
		}
	})
}

// mustKey generates a key for a seed corpus.
func mustKey(f *testing.F, alg KeyAlgorithm) crypto.Signer {
	key, err := GenerateKey(alg)
	if err != nil {
		f.Fatal(err)
	}
	return key
}
