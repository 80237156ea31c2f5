package crypto

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"strings"
	"testing"
	"time"
)

// requireRule fails unless err is an *Error for rule whose message contains
// every one of want.
func requireRule(t *testing.T, err error, rule Rule, want ...string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not an *Error with rule %s", err, err, rule)
	}
	if e.Rule != rule {
		t.Fatalf("rule is %s, want %s (error: %v)", e.Rule, rule, err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Fatalf("error %q does not contain %q", err, w)
		}
	}
}

// requireNoError fails on err.
func requireNoError(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
}

// testKeys returns one key of every type the package allows, by name.
func testKeys(t *testing.T) map[string]crypto.Signer {
	t.Helper()
	edKey, err := GenerateKey(Ed25519)
	requireNoError(t, err)
	rsaKey, err := GenerateKey(RSA2048)
	requireNoError(t, err)
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	requireNoError(t, err)
	return map[string]crypto.Signer{"Ed25519": edKey, "RSA-2048": rsaKey, "ECDSA P-256": ecKey}
}

// newEd25519 returns a fresh Ed25519 key.
func newEd25519(t *testing.T) ed25519.PrivateKey {
	t.Helper()
	_, key, err := ed25519.GenerateKey(rand.Reader)
	requireNoError(t, err)
	return key
}

// newRSA returns a fresh RSA key of the given size.
func newRSA(t *testing.T, bits int) *rsa.PrivateKey {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, bits)
	requireNoError(t, err)
	return key
}

// pemOf encodes der as one PEM block of type typ.
func pemOf(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// testCA is a certificate authority for tests.
type testCA struct {
	cert *x509.Certificate
	key  crypto.Signer
	pem  []byte
}

// newTestCA returns a self-signed CA valid from an hour ago for a year.
func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key := newEd25519(t)
	template := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, key.Public(), key)
	requireNoError(t, err)
	cert, err := x509.ParseCertificate(der)
	requireNoError(t, err)
	return &testCA{cert: cert, key: key, pem: pemOf(pemCertificate, der)}
}

// issue signs a certificate for pub, valid in [notBefore, notAfter], with
// the given extended key usages, and returns it as PEM.
func (ca *testCA) issue(t *testing.T, pub crypto.PublicKey, cn string, notBefore, notAfter time.Time, usages ...x509.ExtKeyUsage) []byte {
	t.Helper()
	template := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: cn, Organization: []string{CSROrganization}},
		NotBefore:    notBefore,
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  usages,
	}
	der, err := x509.CreateCertificate(rand.Reader, template, ca.cert, pub, ca.key)
	requireNoError(t, err)
	return pemOf(pemCertificate, der)
}

// replaySigner is a crypto.Signer that answers with a recorded signature: it
// lets a test rebuild an artifact signed with a key it does not have.
type replaySigner struct {
	pub       crypto.PublicKey
	signature []byte
}

func (s replaySigner) Public() crypto.PublicKey { return s.pub }

func (s replaySigner) Sign(io.Reader, []byte, crypto.SignerOpts) ([]byte, error) {
	return s.signature, nil
}
