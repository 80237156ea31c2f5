package crypto

import (
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
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
