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
		{name: "same URL and CA", annotations: map[string]string{PinnedProviderAnnotation: ProviderPin(url, ca)}, url: url, ca: ca},
		{name: "same URL, empty CA", annotations: map[string]string{PinnedProviderAnnotation: ProviderPin(url, nil)}, url: url},
		{name: "other CA", annotations: map[string]string{PinnedProviderAnnotation: ProviderPin(url, ca)}, url: url, ca: otherCA,
			wantErr: "is not the API server and CA pinned for provider provider-a"},
		{name: "other URL, same CA", annotations: map[string]string{PinnedProviderAnnotation: ProviderPin(url, ca)}, url: attacker, ca: ca,
			wantErr: `API server "https://attacker:6443"`},
		{name: "empty CA, other URL", annotations: map[string]string{PinnedProviderAnnotation: ProviderPin(url, nil)}, url: attacker,
			wantErr: "CA (none: system roots) is not the API server and CA pinned"},
		{name: "CA dropped after a CA was pinned", annotations: map[string]string{PinnedProviderAnnotation: ProviderPin(url, ca)}, url: url,
			wantErr: "is not the API server and CA pinned"},
		{name: "CA appears after an empty CA was pinned (plain Liqo provider switched)", annotations: map[string]string{PinnedProviderAnnotation: ProviderPin(url, nil)}, url: url, ca: ca,
			wantErr: "is not the API server and CA pinned"},
		{name: "legacy CA pin, same CA: migrated", annotations: map[string]string{PinnedCAAnnotation: legacy}, url: url, ca: ca},
		{name: "legacy CA pin, other CA", annotations: map[string]string{PinnedCAAnnotation: legacy}, url: url, ca: otherCA,
			wantErr: "is not the CA pinned for provider provider-a"},
		{name: "legacy CA pin, CA dropped", annotations: map[string]string{PinnedCAAnnotation: legacy}, url: url,
			wantErr: "is not the CA pinned for provider provider-a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pin, err := CheckPin(tc.annotations, "provider-a", tc.url, tc.ca)
			if tc.wantErr != "" {
				if !errors.Is(err, ErrPinMismatch) || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), PinnedProviderAnnotation) {
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

// TestTrust: with a CA configured for the provider, only exactly that CA is
// trusted, whatever the pin; without one, the pin decides.
func TestTrust(t *testing.T) {
	const url = "https://p:6443"
	providerCA, attackerCA, otherCA := caPEM(t, "provider", true), caPEM(t, "attacker", true), caPEM(t, "other", true)
	trusted := &TrustedCA{Secret: "provider-ca", PEM: providerCA}
	pinnedAttacker := map[string]string{PinnedProviderAnnotation: ProviderPin(url, attackerCA)}
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		ca          []byte
		trusted     *TrustedCA
		wantPin     string
		wantErr     string
	}{
		{name: "the configured CA", ca: providerCA, trusted: trusted},
		{name: "the configured CA decides over a pin", annotations: pinnedAttacker, ca: providerCA, trusted: trusted},
		{name: "trusted CA mismatch", ca: attackerCA, trusted: trusted,
			wantErr: "the Identity's CA is not the CA configured for provider provider-a in spec.consumer.trustedCAs (Secret provider-ca)"},
		{name: "trusted CA mismatch, even if pinned", annotations: pinnedAttacker, ca: attackerCA, trusted: trusted, wantErr: "is not the CA configured"},
		{name: "the configured CA and another", ca: append(append([]byte{}, providerCA...), otherCA...), trusted: trusted, wantErr: "is not the CA configured"},
		{name: "only part of the configured bundle", ca: providerCA, trusted: &TrustedCA{Secret: "provider-ca", PEM: append(append([]byte{}, providerCA...), otherCA...)},
			wantErr: "is not the CA configured"},
		{name: "no CA offered (system roots)", trusted: trusted, wantErr: "the Identity offers no CA, but spec.consumer.trustedCAs configures Secret provider-ca for provider provider-a"},
		{name: "offered CA unreadable", ca: []byte("garbage"), trusted: trusted, wantErr: "identity CA:"},
		{name: "offered certificate is no CA", ca: caPEM(t, "leaf", false), trusted: trusted, wantErr: "identity CA:"},
		{name: "configured Secret holds no CA", ca: providerCA, trusted: &TrustedCA{Secret: "provider-ca"},
			wantErr: "trusted CA of provider provider-a: Secret provider-ca, key ca.crt:"},
		{name: "no CA configured: first use pins", ca: attackerCA, wantPin: ProviderPin(url, attackerCA)},
		{name: "no CA configured: pin mismatch", annotations: map[string]string{PinnedProviderAnnotation: ProviderPin(url, providerCA)}, ca: attackerCA,
			wantErr: "is not the API server and CA pinned"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pin, err := Trust(tc.annotations, "provider-a", url, tc.ca, tc.trusted)
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
		"recorded":                        {map[string]string{PinnedProviderAnnotation: "p1"}, "p1", false},
		"another pin":                     {map[string]string{PinnedProviderAnnotation: "p0"}, "p1", true},
		"legacy CA pin left to drop":      {map[string]string{PinnedProviderAnnotation: "p1", PinnedCAAnnotation: "c"}, "p1", true},
		"legacy CA pin, replaced by pin":  {map[string]string{PinnedCAAnnotation: "c"}, "p1", true},
		"legacy CA pin, nothing recorded": {map[string]string{PinnedCAAnnotation: "c"}, "", false},
	} {
		t.Run(name, func(t *testing.T) {
			if got := RecordPin(tc.annotations, tc.pin); got != tc.want {
				t.Errorf("RecordPin = %t, want %t", got, tc.want)
			}
		})
	}
}
