package crypto

import (
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"strings"
)

// KeyPin is the pin of a public key: the SHA-256 of its PKIX encoding, in
// hex. The provider pins a consumer's key with it; the consumer compares a
// Tenant's key with its own by it.
func KeyPin(key crypto.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(key)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(der)
	return hex.EncodeToString(sum[:]), nil
}

// CACertHashPrefix starts every CACertHash: the hash format, as kubeadm names it.
const CACertHashPrefix = "sha256:"

// CACertHash is the hash a consumer pins a provider's CA by, exactly as
// kubeadm join's --discovery-token-ca-cert-hash: "sha256:" and the hex
// SHA-256 of the certificate's DER SubjectPublicKeyInfo (kubeadm's
// pubkeypin.Hash, which lives in k8s.io/kubernetes). It names the CA's key,
// so a CA re-issued with the same key keeps its hash.
func CACertHash(cert *x509.Certificate) string {
	sum := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
	return CACertHashPrefix + hex.EncodeToString(sum[:])
}

// CACertHashes returns the CACertHash of every certificate of the PEM CA
// bundle data (ParseCACertificates), in order.
func CACertHashes(data []byte) ([]string, error) {
	certs, err := ParseCACertificates(data)
	if err != nil {
		return nil, err
	}
	hashes := make([]string, len(certs))
	for i, cert := range certs {
		hashes[i] = CACertHash(cert)
	}
	return hashes, nil
}

// SameCACertHash reports whether two CACertHash strings name the same key:
// kubeadm accepts upper-case hex, so the comparison ignores case.
func SameCACertHash(a, b string) bool { return strings.EqualFold(a, b) }
