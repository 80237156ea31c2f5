package consumer

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
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
