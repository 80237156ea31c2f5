package crypto

import (
	"encoding/base64"
	"strings"
	"testing"
)

func TestGenerateNonce(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		nonce := GenerateNonce()
		if len(nonce) != NonceLength {
			t.Fatalf("nonce %q is %d characters, want %d", nonce, len(nonce), NonceLength)
		}
		requireNoError(t, ValidateNonce(nonce))
		if seen[nonce] {
			t.Fatalf("nonce %q generated twice", nonce)
		}
		seen[nonce] = true
	}
}

func TestValidateNonceRejects(t *testing.T) {
	good := GenerateNonce()
	for name, tc := range map[string]struct {
		nonce, want string
	}{
		"empty":             {"", "0 characters"},
		"short":             {good[:87], "87 characters"},
		"trailing newline":  {good + "\n", "89 characters"},
		"URL alphabet":      {strings.Repeat("-", 86) + "==", "not standard base64"},
		"66 bytes":          {base64.StdEncoding.EncodeToString(make([]byte, 66)), "decodes to 66 bytes"},
		"non-canonical pad": {strings.Repeat("A", 85) + "B==", "not standard base64"},
	} {
		t.Run(name, func(t *testing.T) {
			requireRule(t, ValidateNonce(tc.nonce), RuleNonce, tc.want)
		})
	}
}
