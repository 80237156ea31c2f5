package crypto

import (
	"os"
	"testing"
)

// TestCACertHashIsKubeadms: the hash of kubeadm's pubkeypin test certificate
// is the one kubeadm's test expects (and openssl prints: testdata/README.md),
// so a hash an admin took for `kubeadm join` pins the same CA here.
func TestCACertHashIsKubeadms(t *testing.T) {
	const kubeadm = "sha256:345959acb2c3b2feb87d281961c893f62a314207ef02599f1cc4a5fb255480b3"
	pemData, err := os.ReadFile("testdata/kubeadm-pubkeypin-cert.pem")
	if err != nil {
		t.Fatal(err)
	}
	cert, err := ParseCertificatePEM(pemData)
	if err != nil {
		t.Fatal(err)
	}
	if got := CACertHash(cert); got != kubeadm {
		t.Fatalf("CACertHash = %s, want kubeadm's %s", got, kubeadm)
	}
	twice := append(append([]byte{}, pemData...), pemData...)
	if hashes, err := CACertHashes(twice); err != nil || len(hashes) != 2 || hashes[0] != kubeadm || hashes[1] != kubeadm {
		t.Fatalf("CACertHashes of a two-certificate bundle = %v, %v", hashes, err)
	}
	if !SameCACertHash(kubeadm, "sha256:345959ACB2C3B2FEB87D281961C893F62A314207EF02599F1CC4A5FB255480B3") {
		t.Fatal("upper-case hex, which kubeadm accepts, names another key")
	}
	if _, err := CACertHashes([]byte("not PEM")); err == nil {
		t.Fatal("CACertHashes accepted garbage")
	}
	// Liqo's apiServer.ca, decoded into base64.StdEncoding.DecodedLen bytes.
	for pad, ok := range map[int]bool{1: true, 2: true, 3: false} {
		padded := append(append([]byte{}, twice...), make([]byte, pad)...)
		if hashes, err := CACertHashes(padded); (err == nil && len(hashes) == 2) != ok {
			t.Errorf("CACertHashes of a bundle and %d NUL bytes = %v, %v; accepted: want %v", pad, hashes, err, ok)
		}
	}
}
