package crypto

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
)

// KeyAlgorithm is the algorithm of a cluster key pair.
type KeyAlgorithm string

const (
	// Ed25519 is Liqo's default cluster key algorithm.
	Ed25519 KeyAlgorithm = "Ed25519"
	// RSA2048 is the algorithm of Liqo's compatibility mode: 2048-bit RSA,
	// signing with PKCS #1 v1.5 and SHA-256.
	RSA2048 KeyAlgorithm = "RSA-2048"
)

// RSA moduli accepted from peers, in bits. The lower bound is the key size
// Liqo generates; the upper bound keeps verification cheap.
const (
	minRSABits = 2048
	maxRSABits = 8192
)

// GenerateKey returns a new cluster private key of the given algorithm.
func GenerateKey(alg KeyAlgorithm) (crypto.Signer, error) {
	switch alg {
	case Ed25519:
		_, key, err := ed25519.GenerateKey(rand.Reader)
		return key, err
	case RSA2048:
		return rsa.GenerateKey(rand.Reader, 2048)
	default:
		return nil, fmt.Errorf("unknown key algorithm %q (want %q or %q)", alg, Ed25519, RSA2048)
	}
}

// AlgorithmOf returns the cluster key algorithm of pub, or false if pub is
// not an Ed25519 or 2048-bit RSA public key.
func AlgorithmOf(pub crypto.PublicKey) (KeyAlgorithm, bool) {
	switch k := pub.(type) {
	case ed25519.PublicKey:
		if len(k) == ed25519.PublicKeySize {
			return Ed25519, true
		}
	case *rsa.PublicKey:
		if k.N.BitLen() == 2048 {
			return RSA2048, true
		}
	}
	return "", false
}

// MarshalPrivateKeyPEM encodes key as a PKCS #8 "PRIVATE KEY" PEM block.
func MarshalPrivateKeyPEM(key crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("cannot marshal private key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: pemPrivateKey, Bytes: der}), nil
}

// ParsePrivateKeyPEM decodes a PKCS #8 "PRIVATE KEY" PEM block holding an
// Ed25519, RSA or ECDSA key of an allowed size. Failures are *Error with
// RuleKeySecret, since the cluster private key lives in the key Secret.
func ParsePrivateKeyPEM(data []byte) (crypto.Signer, error) {
	der, err := decodeSinglePEM(data, pemPrivateKey, RuleKeySecret)
	if err != nil {
		return nil, err
	}
	key, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, newError(RuleKeySecret, err, "cannot parse PKCS #8 private key")
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, newError(RuleKeySecret, nil, "private key of type %T cannot sign", key)
	}
	if err := checkPublicKey(signer.Public(), RuleKeySecret); err != nil {
		return nil, err
	}
	return signer, nil
}

// MarshalPublicKeyPEM encodes pub as a PKIX "PUBLIC KEY" PEM block, the form
// gitpeer writes in Tenant.spec.publicKey (and Liqo since v1.0.2).
func MarshalPublicKeyPEM(pub crypto.PublicKey) ([]byte, error) {
	if err := checkPublicKey(pub, RulePublicKey); err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("cannot marshal public key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: pemPublicKey, Bytes: der}), nil
}

// ParsePublicKey decodes a public key as found in Tenant.spec.publicKey:
// either a PKIX "PUBLIC KEY" PEM block, or the raw 32 bytes of an Ed25519
// key that Liqo wrote before v1.0.2. The key must be Ed25519, RSA of 2048 to
// 8192 bits, or ECDSA on P-256, P-384 or P-521. Failures are *Error with
// RulePublicKey.
func ParsePublicKey(data []byte) (crypto.PublicKey, error) {
	if len(data) == ed25519.PublicKeySize {
		return ed25519.PublicKey(bytes.Clone(data)), nil
	}
	der, err := decodeSinglePEM(data, pemPublicKey, RulePublicKey)
	if err != nil {
		return nil, err
	}
	pub, err := x509.ParsePKIXPublicKey(der)
	if err != nil {
		return nil, newError(RulePublicKey, err, "cannot parse PKIX public key")
	}
	if err := checkPublicKey(pub, RulePublicKey); err != nil {
		return nil, err
	}
	return pub, nil
}

// checkPublicKey reports, under rule, a public key whose type or size is not
// allowed for a cluster key.
func checkPublicKey(pub crypto.PublicKey, rule Rule) error {
	switch k := pub.(type) {
	case ed25519.PublicKey:
		if len(k) != ed25519.PublicKeySize {
			return newError(rule, nil, "Ed25519 public key is %d bytes, want %d", len(k), ed25519.PublicKeySize)
		}
	case *rsa.PublicKey:
		if bits := k.N.BitLen(); bits < minRSABits || bits > maxRSABits {
			return newError(rule, nil, "RSA public key is %d bits, want %d to %d", bits, minRSABits, maxRSABits)
		}
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256(), elliptic.P384(), elliptic.P521():
		default:
			return newError(rule, nil, "public key type %s is not allowed (want P-256, P-384 or P-521)", describeKey(pub))
		}
	default:
		return newError(rule, nil, "public key type %s is not allowed (want Ed25519, RSA or ECDSA)", describeKey(pub))
	}
	return nil
}

// samePublicKey reports whether a and b are the same public key.
func samePublicKey(a, b crypto.PublicKey) bool {
	k, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && k.Equal(b)
}

// KeyType names the type and size of a public key for people: Ed25519,
// RSA-2048, ECDSA P-256...
func KeyType(pub crypto.PublicKey) string { return describeKey(pub) }

// describeKey names the type and size of a public key for messages.
func describeKey(pub crypto.PublicKey) string {
	switch k := pub.(type) {
	case ed25519.PublicKey:
		return "Ed25519"
	case *rsa.PublicKey:
		return fmt.Sprintf("RSA-%d", k.N.BitLen())
	case *ecdsa.PublicKey:
		if k.Curve == nil {
			return "ECDSA"
		}
		return "ECDSA " + k.Curve.Params().Name
	default:
		return fmt.Sprintf("%T", pub)
	}
}
