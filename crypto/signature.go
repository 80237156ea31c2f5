package crypto

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
)

// SignNonce signs nonce with the cluster private key as Liqo does: the
// signed message is the nonce string itself (its ASCII bytes), signed with
// pure Ed25519 for Ed25519 keys and over its SHA-256 digest otherwise (PKCS
// #1 v1.5 for RSA, ASN.1 DER for ECDSA). It returns the raw signature bytes
// that go into Tenant.spec.signature.
func SignNonce(key crypto.Signer, nonce string) ([]byte, error) {
	if _, ok := key.Public().(ed25519.PublicKey); ok {
		return key.Sign(rand.Reader, []byte(nonce), crypto.Hash(0))
	}
	digest := sha256.Sum256([]byte(nonce))
	return key.Sign(rand.Reader, digest[:], crypto.SHA256)
}

// VerifyNonceSignature checks that signature is a signature of the nonce
// string by pub, in the scheme SignNonce uses for pub's key type. Failures
// are *Error with RuleSignature.
func VerifyNonceSignature(pub crypto.PublicKey, nonce string, signature []byte) error {
	if err := checkPublicKey(pub, RuleSignature); err != nil {
		return err
	}
	digest := sha256.Sum256([]byte(nonce))
	var ok bool
	switch k := pub.(type) {
	case ed25519.PublicKey:
		ok = ed25519.Verify(k, []byte(nonce), signature)
	case *rsa.PublicKey:
		ok = rsa.VerifyPKCS1v15(k, crypto.SHA256, digest[:], signature) == nil
	case *ecdsa.PublicKey:
		ok = ecdsa.VerifyASN1(k, digest[:], signature)
	}
	if !ok {
		return newError(RuleSignature, nil, "%d-byte signature is not a valid %s signature of the nonce", len(signature), describeKey(pub))
	}
	return nil
}
