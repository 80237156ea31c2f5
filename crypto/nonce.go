package crypto

import (
	"crypto/rand"
	"encoding/base64"
)

// Nonce sizes: NonceSize random bytes, written as a NonceLength-character
// standard base64 string. The string, not the bytes, is what gets signed.
const (
	NonceSize   = 64
	NonceLength = 88
)

// GenerateNonce returns a fresh nonce: NonceSize bytes from crypto/rand in
// standard base64 with padding, as Liqo's nonce Secret holds it.
func GenerateNonce() string {
	raw := make([]byte, NonceSize)
	rand.Read(raw) // never fails: crypto/rand crashes the program instead
	return base64.StdEncoding.EncodeToString(raw)
}

// ValidateNonce checks that nonce has the form GenerateNonce produces: the
// canonical standard base64 encoding of NonceSize bytes. Failures are *Error
// with RuleNonce.
func ValidateNonce(nonce string) error {
	if len(nonce) != NonceLength {
		return newError(RuleNonce, nil, "nonce is %d characters, want %d", len(nonce), NonceLength)
	}
	raw, err := base64.StdEncoding.Strict().DecodeString(nonce)
	if err != nil {
		return newError(RuleNonce, err, "nonce is not standard base64")
	}
	if len(raw) != NonceSize {
		return newError(RuleNonce, nil, "nonce decodes to %d bytes, want %d", len(raw), NonceSize)
	}
	return nil
}
