package liqo

import (
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"testing"
	"time"

	"github.com/gitpeer/gitpeer/crypto"
)

// TestShouldRenew: Liqo renews at 2/3 of the certificate's life and requeues
// at 110% of the time left to that point (A/utils/identity.go ShouldRenewCertificate).
func TestShouldRenew(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	certPEM := selfSigned(t, start, start.Add(30*time.Hour))
	for _, tc := range []struct {
		now     time.Time
		renew   bool
		requeue time.Duration
	}{
		{start, false, 22 * time.Hour},                       // 20 h left to the 2/3 point, +10%
		{start.Add(19 * time.Hour), false, 66 * time.Minute}, // 1 h left, +10%
		{start.Add(20 * time.Hour), true, 0},
		{start.Add(31 * time.Hour), true, 0},
	} {
		r := &TenantController{Now: func() time.Time { return tc.now }}
		renew, requeue, err := r.shouldRenew(certPEM)
		if err != nil || renew != tc.renew || requeue != tc.requeue {
			t.Errorf("at %s: shouldRenew = %v, %s, %v; want %v, %s", tc.now.Sub(start), renew, requeue, err, tc.renew, tc.requeue)
		}
	}
}

func selfSigned(t *testing.T, notBefore, notAfter time.Time) []byte {
	key, err := crypto.GenerateKey(crypto.Ed25519)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "c"}, NotBefore: notBefore, NotAfter: notAfter}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
