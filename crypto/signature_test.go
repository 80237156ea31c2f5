package crypto

import (
	"crypto"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha256"
	"testing"
)

func TestSignVerifyNonce(t *testing.T) {
	nonce := GenerateNonce()
	for name, key := range testKeys(t) {
		t.Run(name, func(t *testing.T) {
			sig, err := SignNonce(key, nonce)
			requireNoError(t, err)
			requireNoError(t, VerifyNonceSignature(key.Public(), nonce, sig))
		})
	}
}

// TestSignNonceFormat pins the exact schemes: the ASCII nonce string is the
// message, pure Ed25519 and RSA PKCS #1 v1.5 over SHA-256.
func TestSignNonceFormat(t *testing.T) {
	nonce := GenerateNonce()
	ed := newEd25519(t)
	sig, err := SignNonce(ed, nonce)
	requireNoError(t, err)
	if len(sig) != ed25519.SignatureSize || !ed25519.Verify(ed.Public().(ed25519.PublicKey), []byte(nonce), sig) {
		t.Fatal("Ed25519 signature is not a pure Ed25519 signature of the nonce string")
	}
	rk := newRSA(t, 2048)
	sig, err = SignNonce(rk, nonce)
	requireNoError(t, err)
	digest := sha256.Sum256([]byte(nonce))
	if err := rsa.VerifyPKCS1v15(&rk.PublicKey, crypto.SHA256, digest[:], sig); err != nil {
		t.Fatalf("RSA signature is not PKCS #1 v1.5 SHA-256 of the nonce string: %v", err)
	}
	again, err := SignNonce(rk, nonce)
	requireNoError(t, err)
	if string(again) != string(sig) {
		t.Fatal("RSA PKCS #1 v1.5 signature is not deterministic")
	}
}

func TestVerifyNonceSignatureRejects(t *testing.T) {
	nonce := GenerateNonce()
	keys := testKeys(t)
	for name, key := range keys {
		sig, err := SignNonce(key, nonce)
		requireNoError(t, err)
		other := newEd25519(t).Public()
		if _, isEd := key.Public().(ed25519.PublicKey); !isEd {
			other = keys["RSA-2048"].Public()
			if name == "RSA-2048" {
				other = &newRSA(t, 2048).PublicKey
			}
		}
		flipped := append([]byte{}, sig...)
		flipped[len(flipped)/2] ^= 1
		for caseName, tc := range map[string]struct {
			pub   crypto.PublicKey
			nonce string
			sig   []byte
		}{
			"other nonce":     {key.Public(), GenerateNonce(), sig},
			"decoded nonce":   {key.Public(), nonce[:64], sig},
			"other key":       {other, nonce, sig},
			"flipped bit":     {key.Public(), nonce, flipped},
			"truncated":       {key.Public(), nonce, sig[:len(sig)-1]},
			"empty signature": {key.Public(), nonce, nil},
		} {
			t.Run(name+"/"+caseName, func(t *testing.T) {
				requireRule(t, VerifyNonceSignature(tc.pub, tc.nonce, tc.sig), RuleSignature, "is not a valid")
			})
		}
	}
	t.Run("RSA-1024 key", func(t *testing.T) {
		small := newRSA(t, 1024)
		digest := sha256.Sum256([]byte(nonce))
		sig, err := rsa.SignPKCS1v15(nil, small, crypto.SHA256, digest[:])
		requireNoError(t, err)
		requireRule(t, VerifyNonceSignature(&small.PublicKey, nonce, sig), RuleSignature, "1024 bits")
	})
	t.Run("short Ed25519 key", func(t *testing.T) {
		requireRule(t, VerifyNonceSignature(ed25519.PublicKey{1, 2}, nonce, nil), RuleSignature, "2 bytes")
	})
	t.Run("nil key", func(t *testing.T) {
		requireRule(t, VerifyNonceSignature(nil, nonce, nil), RuleSignature, "not allowed")
	})
}
