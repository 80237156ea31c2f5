package crypto

import (
	"bytes"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"testing"
)

func TestGenerateKey(t *testing.T) {
	for _, alg := range []KeyAlgorithm{Ed25519, RSA2048} {
		t.Run(string(alg), func(t *testing.T) {
			key, err := GenerateKey(alg)
			requireNoError(t, err)
			if got, ok := AlgorithmOf(key.Public()); !ok || got != alg {
				t.Fatalf("AlgorithmOf = %q, %v; want %q", got, ok, alg)
			}
		})
	}
	if _, err := GenerateKey("DSA"); err == nil {
		t.Fatal("GenerateKey(DSA) succeeded")
	}
}

func TestAlgorithmOf(t *testing.T) {
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	requireNoError(t, err)
	for name, tc := range map[string]struct {
		key  any
		want KeyAlgorithm
		ok   bool
	}{
		"Ed25519":       {newEd25519(t).Public(), Ed25519, true},
		"RSA-2048":      {&newRSA(t, 2048).PublicKey, RSA2048, true},
		"RSA-3072":      {&newRSA(t, 3072).PublicKey, "", false},
		"ECDSA":         {&ec.PublicKey, "", false},
		"short Ed25519": {newEd25519(t).Public().(ed25519.PublicKey)[:31], "", false},
		"nil":           {nil, "", false},
	} {
		t.Run(name, func(t *testing.T) {
			if got, ok := AlgorithmOf(tc.key); got != tc.want || ok != tc.ok {
				t.Fatalf("AlgorithmOf = %q, %v; want %q, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestPrivateKeyPEMRoundTrip(t *testing.T) {
	for name, key := range testKeys(t) {
		t.Run(name, func(t *testing.T) {
			data, err := MarshalPrivateKeyPEM(key)
			requireNoError(t, err)
			if !bytes.HasPrefix(data, []byte("-----BEGIN PRIVATE KEY-----\n")) {
				t.Fatalf("not a PKCS #8 PEM block:\n%s", data)
			}
			parsed, err := ParsePrivateKeyPEM(data)
			requireNoError(t, err)
			if !samePublicKey(parsed.Public(), key.Public()) {
				t.Fatal("parsed key differs")
			}
		})
	}
}

func TestParsePrivateKeyPEMRejects(t *testing.T) {
	good, err := MarshalPrivateKeyPEM(newEd25519(t))
	requireNoError(t, err)
	small, err := x509.MarshalPKCS8PrivateKey(newRSA(t, 1024))
	requireNoError(t, err)
	x25519, err := ecdh.X25519().GenerateKey(rand.Reader)
	requireNoError(t, err)
	xder, err := x509.MarshalPKCS8PrivateKey(x25519)
	requireNoError(t, err)
	for name, tc := range map[string]struct {
		data []byte
		want string
	}{
		"empty":              {nil, "no PRIVATE KEY PEM block"},
		"PKCS #1 type":       {pemOf("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(newRSA(t, 2048))), `"RSA PRIVATE KEY", want "PRIVATE KEY"`},
		"two blocks":         {append(append([]byte{}, good...), good...), "found 2 PRIVATE KEY PEM blocks"},
		"trailing text":      {append(append([]byte{}, good...), "x"...), "data outside"},
		"garbage DER":        {pemOf(pemPrivateKey, []byte{1, 2, 3}), "cannot parse PKCS #8"},
		"RSA-1024":           {pemOf(pemPrivateKey, small), "RSA public key is 1024 bits"},
		"X25519 cannot sign": {pemOf(pemPrivateKey, xder), "cannot sign"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParsePrivateKeyPEM(tc.data)
			requireRule(t, err, RuleKeySecret, tc.want)
		})
	}
}

func TestParsePublicKey(t *testing.T) {
	for name, key := range testKeys(t) {
		t.Run("PEM "+name, func(t *testing.T) {
			data, err := MarshalPublicKeyPEM(key.Public())
			requireNoError(t, err)
			if !bytes.HasPrefix(data, []byte("-----BEGIN PUBLIC KEY-----\n")) {
				t.Fatalf("not a PKIX PEM block:\n%s", data)
			}
			pub, err := ParsePublicKey(data)
			requireNoError(t, err)
			if !samePublicKey(pub, key.Public()) {
				t.Fatal("parsed key differs")
			}
		})
	}
	t.Run("raw Ed25519", func(t *testing.T) {
		key := newEd25519(t)
		raw := []byte(key.Public().(ed25519.PublicKey))
		pub, err := ParsePublicKey(raw)
		requireNoError(t, err)
		if !samePublicKey(pub, key.Public()) {
			t.Fatal("parsed key differs")
		}
		raw[0] ^= 1
		if !samePublicKey(pub, key.Public()) {
			t.Fatal("parsed key aliases its input")
		}
	})
}

func TestParsePublicKeyRejects(t *testing.T) {
	pkix := func(pub any) []byte {
		der, err := x509.MarshalPKIXPublicKey(pub)
		requireNoError(t, err)
		return pemOf(pemPublicKey, der)
	}
	p224, err := ecdsa.GenerateKey(elliptic.P224(), rand.Reader)
	requireNoError(t, err)
	x25519, err := ecdh.X25519().GenerateKey(rand.Reader)
	requireNoError(t, err)
	good := pkix(newEd25519(t).Public())
	raw := []byte(newEd25519(t).Public().(ed25519.PublicKey))
	for name, tc := range map[string]struct {
		data []byte
		want string
	}{
		"empty":            {nil, "no PUBLIC KEY PEM block"},
		"raw 31 bytes":     {raw[:31], "data outside"},
		"raw 33 bytes":     {append(raw, 0), "data outside"},
		"PKCS #1 type":     {pemOf("RSA PUBLIC KEY", x509.MarshalPKCS1PublicKey(&newRSA(t, 2048).PublicKey)), `want "PUBLIC KEY"`},
		"leading text":     {append([]byte("key:\n"), good...), "data outside"},
		"trailing newline": {append(append([]byte{}, good...), '\n'), "data outside"},
		"headers":          {[]byte("-----BEGIN PUBLIC KEY-----\nA: b\n\nAAAA\n-----END PUBLIC KEY-----\n"), "headers"},
		"garbage DER":      {pemOf(pemPublicKey, []byte("nope")), "cannot parse PKIX"},
		"RSA-1024":         {pkix(&newRSA(t, 1024).PublicKey), "RSA public key is 1024 bits, want 2048 to 8192"},
		"ECDSA P-224":      {pkix(&p224.PublicKey), "ECDSA P-224 is not allowed"},
		"X25519":           {pkix(x25519.PublicKey()), "*ecdh.PublicKey is not allowed"},
		"oversized":        {bytes.Repeat([]byte{'A'}, maxPEMSize+1), "more than the"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParsePublicKey(tc.data)
			requireRule(t, err, RulePublicKey, tc.want)
		})
	}
	if _, err := MarshalPublicKeyPEM(&newRSA(t, 1024).PublicKey); err == nil {
		t.Fatal("MarshalPublicKeyPEM accepted an RSA-1024 key")
	}
}
