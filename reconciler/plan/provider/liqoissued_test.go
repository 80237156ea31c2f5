package provider

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/gitpeer/gitpeer/vocabulary"
)

// testCA is a CA as the cluster's signer is one, issuing client certificates.
type testCA struct {
	cert *x509.Certificate
	key  ed25519.PrivateKey
}

func newTestCA(t *testing.T) testCA {
	t.Helper()
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kubernetes"}, IsCA: true, BasicConstraintsValid: true,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return testCA{cert: cert, key: key}
}

// issue returns a client certificate for cn and orgs, signed by ca, or
// self-signed when ca is nil; usage, when set, replaces client auth.
func issue(t *testing.T, ca *testCA, serial int64, cn string, orgs []string, usage ...x509.ExtKeyUsage) *x509.Certificate {
	t.Helper()
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if usage == nil {
		usage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn, Organization: orgs},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour), ExtKeyUsage: usage}
	parent, signer := tmpl, key
	if ca != nil {
		parent, signer = ca.cert, ca.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, signer)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// TestCheckLiqoIssued: a certificate found where Liqo keeps what it issued
// for a consumer counts only when the cluster's signer issued it, for
// client auth, with the subject Liqo gives it for that consumer.
func TestCheckLiqoIssued(t *testing.T) {
	ca, other := newTestCA(t), newTestCA(t)
	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	sliceCN := SliceCommonName("slice-1", "c1")
	if sliceCN != "slice-1-d0f631ca1ddb" { // sha256("c1") = d0f631ca1ddb...
		t.Fatalf("SliceCommonName = %q, want slice-1-d0f631ca1ddb", sliceCN)
	}
	for _, tc := range []struct {
		name, slice string
		cert        *x509.Certificate
		rejected    string // substring; "" accepts
	}{
		{"the control plane's", "", issue(t, &ca, 2, "c1", []string{"liqo.io"}), ""},
		{"a slice's", "slice-1", issue(t, &ca, 3, sliceCN, []string{"c1"}), ""},
		{"self-signed", "slice-1", issue(t, nil, 4, sliceCN, []string{"c1"}), "does not chain"},
		{"another CA's", "slice-1", issue(t, &other, 5, sliceCN, []string{"c1"}), "does not chain"},
		{"server auth only", "slice-1", issue(t, &ca, 6, sliceCN, []string{"c1"}, x509.ExtKeyUsageServerAuth), "does not chain"},
		{"another consumer's slice", "slice-1", issue(t, &ca, 7, SliceCommonName("slice-1", "c2"), []string{"c2"}), "not CN="},
		{"another slice", "slice-1", issue(t, &ca, 8, SliceCommonName("slice-2", "c1"), []string{"c1"}), "not CN="},
		{"a group more", "slice-1", issue(t, &ca, 9, sliceCN, []string{"c1", "system:masters"}), "not CN="},
		{"the control plane's as a slice's", "slice-1", issue(t, &ca, 10, "c1", []string{"liqo.io"}), "not CN="},
		{"a slice's as the control plane's", "", issue(t, &ca, 11, sliceCN, []string{"c1"}), "is for"},
		{"another consumer's control plane", "", issue(t, &ca, 12, "c2", []string{"liqo.io"}), "is for"},
	} {
		err := CheckLiqoIssued(tc.cert, roots, "c1", tc.slice, time.Now())
		switch {
		case tc.rejected == "" && err != nil:
			t.Errorf("%s: rejected: %v", tc.name, err)
		case tc.rejected != "" && (err == nil || !strings.Contains(err.Error(), tc.rejected)):
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.rejected)
		}
	}
}

// TestWithSliceCertificates: slice certificates are recorded by slice up to
// MaxSliceCertificates records naming a slice; one already recorded is
// never over the cap; those over it are named.
func TestWithSliceCertificates(t *testing.T) {
	var records []vocabulary.IssuedRecord
	var certs []SliceCert
	for i := range MaxSliceCertificates + 2 {
		certs = append(certs, SliceCert{Slice: "s" + big.NewInt(int64(i)).String(), Cert: &x509.Certificate{SerialNumber: big.NewInt(int64(100 + i)), NotAfter: time.Now().Add(time.Hour)}})
	}
	records, changed, over := WithSliceCertificates(records, certs)
	if !changed || namingSlices(records) != MaxSliceCertificates || strings.Join(over, ",") != "s32,s33" {
		t.Fatalf("WithSliceCertificates: %d naming a slice, changed %v, over %v", namingSlices(records), changed, over)
	}
	again, changed, over := WithSliceCertificates(records, certs[:1])
	if changed || len(over) != 0 || len(again) != len(records) {
		t.Errorf("a recorded certificate seen again: changed %v, over %v", changed, over)
	}
	cleared, changed := WithCachesDeleted(records, []string{"s0", "s1"})
	if !changed || namingSlices(cleared) != MaxSliceCertificates-2 || len(cleared) != len(records) || records[0].ResourceSlice != "s0" {
		t.Fatalf("WithCachesDeleted: %d naming a slice of %d, changed %v", namingSlices(cleared), len(cleared), changed)
	}
	if _, _, over := WithSliceCertificates(cleared, certs[32:]); len(over) != 0 {
		t.Errorf("room made by deleted caches: over %v", over)
	}
}

// TestSliceCachesToDelete: the cache of a recorded slice is deleted once the
// slice is gone, each once, in order; a slice still present waits.
func TestSliceCachesToDelete(t *testing.T) {
	records := []vocabulary.IssuedRecord{{Serial: "1"}, {Serial: "2", ResourceSlice: "gone"}, {Serial: "3", ResourceSlice: "kept"}, {Serial: "4", ResourceSlice: "gone"}, {Serial: "5", ResourceSlice: "a"}}
	if got := strings.Join(SliceCachesToDelete(records, []string{"kept", "new"}), ","); got != "a,gone" {
		t.Errorf("SliceCachesToDelete = %s, want a,gone", got)
	}
	if got := SliceCachesToDelete(records[:1], nil); len(got) != 0 {
		t.Errorf("no slice recorded: %v", got)
	}
}
