package consumer

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/vocabulary"
)

func TestProviderPin(t *testing.T) {
	ca := []byte("-----BEGIN CERTIFICATE-----\nMA==\n-----END CERTIFICATE-----\n")
	base := ProviderPin("https://p:6443", ca)
	for name, other := range map[string]string{
		"another URL, same CA":           ProviderPin("https://attacker:6443", ca),
		"same URL, no CA (system roots)": ProviderPin("https://p:6443", nil),
		"bytes moved from URL to CA":     ProviderPin("https://p:644", append([]byte("3"), ca...)),
	} {
		if other == base {
			t.Errorf("%s: pin equals the pin of the first Identity", name)
		}
	}
	if ProviderPin("https://p:6443", nil) == ProviderPin("https://q:6443", nil) {
		t.Error("an empty CA pins nothing: two URLs share one pin")
	}
	if ProviderPin("https://p:6443", ca) != base {
		t.Error("pin is not deterministic")
	}
}

func TestCheckPin(t *testing.T) {
	const url, attacker = "https://p:6443", "https://attacker:6443"
	ca, otherCA := []byte("provider CA"), []byte("attacker CA")
	sum := sha256.Sum256(ca)
	legacy := hex.EncodeToString(sum[:])
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		url         string
		ca          []byte
		wantErr     string
	}{
		{name: "first use", url: url, ca: ca},
		{name: "first use, empty CA", url: url},
		{name: "same URL and CA", annotations: map[string]string{vocabulary.PinnedProviderAnnotation: ProviderPin(url, ca)}, url: url, ca: ca},
		{name: "same URL, empty CA", annotations: map[string]string{vocabulary.PinnedProviderAnnotation: ProviderPin(url, nil)}, url: url},
		{name: "other CA", annotations: map[string]string{vocabulary.PinnedProviderAnnotation: ProviderPin(url, ca)}, url: url, ca: otherCA,
			wantErr: "is not the API server and CA pinned for provider provider-a"},
		{name: "other URL, same CA", annotations: map[string]string{vocabulary.PinnedProviderAnnotation: ProviderPin(url, ca)}, url: attacker, ca: ca,
			wantErr: `API server "https://attacker:6443"`},
		{name: "empty CA, other URL", annotations: map[string]string{vocabulary.PinnedProviderAnnotation: ProviderPin(url, nil)}, url: attacker,
			wantErr: "CA (none: system roots) is not the API server and CA pinned"},
		{name: "CA dropped after a CA was pinned", annotations: map[string]string{vocabulary.PinnedProviderAnnotation: ProviderPin(url, ca)}, url: url,
			wantErr: "is not the API server and CA pinned"},
		{name: "CA appears after an empty CA was pinned (plain Liqo provider switched)", annotations: map[string]string{vocabulary.PinnedProviderAnnotation: ProviderPin(url, nil)}, url: url, ca: ca,
			wantErr: "is not the API server and CA pinned"},
		{name: "legacy CA pin, same CA: migrated", annotations: map[string]string{vocabulary.PinnedCAAnnotation: legacy}, url: url, ca: ca},
		{name: "legacy CA pin, other CA", annotations: map[string]string{vocabulary.PinnedCAAnnotation: legacy}, url: url, ca: otherCA,
			wantErr: "is not the CA pinned for provider provider-a"},
		{name: "legacy CA pin, CA dropped", annotations: map[string]string{vocabulary.PinnedCAAnnotation: legacy}, url: url,
			wantErr: "is not the CA pinned for provider provider-a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pin, err := CheckPin(tc.annotations, "provider-a", tc.url, tc.ca)
			if tc.wantErr != "" {
				if !errors.Is(err, ErrPinMismatch) || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), vocabulary.PinnedProviderAnnotation) {
					t.Fatalf("err = %v, want a pin mismatch containing %q and how to re-pin", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if pin != ProviderPin(tc.url, tc.ca) {
				t.Fatalf("pin = %s, want the pin of URL and CA", pin)
			}
		})
	}
}

// caPEM is a self-signed CA certificate named cn, in PEM (isCA false: a leaf).
func caPEM(t *testing.T, cn string, isCA bool) []byte {
	t.Helper()
	key, err := crypto.GenerateKey(crypto.Ed25519)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: isCA, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// hashOf is the crypto.CACertHash of the one certificate of caPEM.
func hashOf(t *testing.T, caPEM []byte) string {
	t.Helper()
	hashes, err := crypto.CACertHashes(caPEM)
	if err != nil || len(hashes) != 1 {
		t.Fatalf("CACertHashes = %v, %v", hashes, err)
	}
	return hashes[0]
}

// TestTrust: a provider's Identity is trusted only by the anchor the admin
// configured for it (CA hashes, else a CA bundle), whatever the pin; a
// provider without one is refused, unless trust on first use is set, when
// the pin decides.
func TestTrust(t *testing.T) {
	const url = "https://p:6443"
	providerCA, attackerCA, otherCA := caPEM(t, "provider", true), caPEM(t, "attacker", true), caPEM(t, "other", true)
	both := append(append([]byte{}, providerCA...), otherCA...)
	trusted := Anchor{CA: &TrustedCA{Secret: "provider-ca", PEM: providerCA}}
	hashed := Anchor{Hashes: []string{hashOf(t, providerCA)}}
	pinnedAttacker := map[string]string{vocabulary.PinnedProviderAnnotation: ProviderPin(url, attackerCA)}
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		ca          []byte
		anchor      Anchor
		wantPin     string
		wantErr     string
	}{
		{name: "the configured CA", ca: providerCA, anchor: trusted},
		{name: "the configured CA decides over a pin", annotations: pinnedAttacker, ca: providerCA, anchor: trusted},
		{name: "trusted CA mismatch", ca: attackerCA, anchor: trusted,
			wantErr: "the Identity's CA is not the CA configured for provider provider-a in spec.consumer.trustedCAs (Secret provider-ca)"},
		{name: "trusted CA mismatch, even if pinned", annotations: pinnedAttacker, ca: attackerCA, anchor: trusted, wantErr: "is not the CA configured"},
		{name: "the configured CA and another", ca: both, anchor: trusted, wantErr: "is not the CA configured"},
		{name: "only part of the configured bundle", ca: providerCA, anchor: Anchor{CA: &TrustedCA{Secret: "provider-ca", PEM: both}},
			wantErr: "is not the CA configured"},
		{name: "no CA offered (system roots)", anchor: trusted, wantErr: "the Identity offers no CA, but spec.consumer.trustedCAs configures Secret provider-ca for provider provider-a"},
		{name: "offered CA unreadable", ca: []byte("garbage"), anchor: trusted, wantErr: "identity CA:"},
		{name: "offered certificate is no CA", ca: caPEM(t, "leaf", false), anchor: trusted, wantErr: "identity CA:"},
		{name: "configured Secret holds no CA", ca: providerCA, anchor: Anchor{CA: &TrustedCA{Secret: "provider-ca"}},
			wantErr: "trusted CA of provider provider-a: Secret provider-ca, key ca.crt:"},

		{name: "the CA of the pinned hash", ca: providerCA, anchor: hashed},
		{name: "the CA of the pinned hash decides over a pin and first use", annotations: pinnedAttacker, ca: providerCA,
			anchor: Anchor{Hashes: hashed.Hashes, FirstUse: true}},
		{name: "hash in upper case (kubeadm accepts it)", ca: providerCA, anchor: Anchor{Hashes: []string{"sha256:" + strings.ToUpper(strings.TrimPrefix(hashOf(t, providerCA), "sha256:"))}}},
		{name: "one of two pinned hashes (rotation)", ca: providerCA, anchor: Anchor{Hashes: []string{hashOf(t, otherCA), hashOf(t, providerCA)}}},
		{name: "the attacker's CA against the pinned hash", ca: attackerCA, anchor: hashed,
			wantErr: "CA certificate 1 of the Identity has hash " + hashOf(t, attackerCA) + ", not one of the caCertHashes of provider provider-a"},
		{name: "the attacker's CA, even pinned, with first use", annotations: pinnedAttacker, ca: attackerCA, anchor: Anchor{Hashes: hashed.Hashes, FirstUse: true},
			wantErr: "not one of the caCertHashes"},
		{name: "the pinned CA beside the attacker's", ca: append(append([]byte{}, providerCA...), attackerCA...), anchor: hashed,
			wantErr: "CA certificate 2 of the Identity has hash " + hashOf(t, attackerCA)},
		{name: "no CA offered against a hash (system roots)", anchor: hashed, wantErr: "the Identity offers no CA (system roots), but spec.consumer.trustedCAs pins the CA hashes of provider provider-a"},
		{name: "offered CA unreadable against a hash", ca: []byte("garbage"), anchor: hashed, wantErr: "identity CA:"},

		{name: "no anchor: refused by default", ca: attackerCA,
			wantErr: "spec.consumer.trustedCAs has no entry for provider provider-a and spec.consumer.trustOnFirstUse is off"},
		{name: "no anchor: refused by default, even pinned by an earlier version", annotations: pinnedAttacker, ca: attackerCA,
			wantErr: "provider not anchored"},
		{name: "no anchor: the refusal says how to get the hash", ca: attackerCA, wantErr: "openssl x509 -in ca.crt -noout -pubkey | openssl pkey -pubin -outform DER | sha256sum"},
		{name: "no anchor: the refusal names the offered CA for comparison", ca: attackerCA, wantErr: "it offers CA " + hashOf(t, attackerCA) + ": compare it"},
		{name: "no anchor, no CA offered", wantErr: "it offers no CA: system roots"},
		{name: "trust on first use pins", ca: attackerCA, anchor: Anchor{FirstUse: true}, wantPin: ProviderPin(url, attackerCA)},
		{name: "trust on first use: pin mismatch", annotations: map[string]string{vocabulary.PinnedProviderAnnotation: ProviderPin(url, providerCA)}, ca: attackerCA,
			anchor: Anchor{FirstUse: true}, wantErr: "is not the API server and CA pinned"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pin, err := Trust(tc.annotations, "provider-a", url, tc.ca, tc.anchor)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || pin != tc.wantPin {
				t.Fatalf("pin %q, err %v; want %q", pin, err, tc.wantPin)
			}
		})
	}
}

func TestRecordPin(t *testing.T) {
	for name, tc := range map[string]struct {
		annotations map[string]string
		pin         string
		want        bool
	}{
		"nothing to record (trusted CA)":  {nil, "", false},
		"first use":                       {nil, "p1", true},
		"recorded":                        {map[string]string{vocabulary.PinnedProviderAnnotation: "p1"}, "p1", false},
		"another pin":                     {map[string]string{vocabulary.PinnedProviderAnnotation: "p0"}, "p1", true},
		"legacy CA pin left to drop":      {map[string]string{vocabulary.PinnedProviderAnnotation: "p1", vocabulary.PinnedCAAnnotation: "c"}, "p1", true},
		"legacy CA pin, replaced by pin":  {map[string]string{vocabulary.PinnedCAAnnotation: "c"}, "p1", true},
		"legacy CA pin, nothing recorded": {map[string]string{vocabulary.PinnedCAAnnotation: "c"}, "", false},
	} {
		t.Run(name, func(t *testing.T) {
			if got := RecordPin(tc.annotations, tc.pin); got != tc.want {
				t.Errorf("RecordPin = %t, want %t", got, tc.want)
			}
		})
	}
}
