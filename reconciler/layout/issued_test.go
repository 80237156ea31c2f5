package layout_test

import (
	gocrypto "crypto"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"strings"
	"testing"
	"time"

	"github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1/documents"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/reconciler/layout"
	"github.com/gitpeer/gitpeer/test/repofixture"
)

func key(t *testing.T) gocrypto.Signer {
	t.Helper()
	k, err := crypto.GenerateKey(crypto.Ed25519)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestVerifyIssued: the provider stores and publishes a signed certificate
// only when it is for the Tenant's key and names exactly CN=<consumer>,
// O=[liqo.io], whatever the signer returned.
func TestVerifyIssued(t *testing.T) {
	ca, err := repofixture.NewCA("signer", time.Now().Add(-time.Hour), 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	tenantKey := key(t)
	issue := func(k gocrypto.Signer, cn string, orgs ...string) []byte {
		der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn, Organization: orgs}}, k)
		if err != nil {
			t.Fatal(err)
		}
		cert, err := ca.Issue(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}), time.Now().Add(-time.Minute), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return cert
	}
	for _, tc := range []struct {
		name    string
		cert    []byte
		wantErr string
	}{
		{"the Tenant's key and subject", issue(tenantKey, "consumer-1", "liqo.io"), ""},
		{"another key", issue(key(t), "consumer-1", "liqo.io"), "is not for the Tenant's public key"},
		{"another CN", issue(tenantKey, "consumer-2", "liqo.io"), `identity certificate is for "consumer-2", not "consumer-1"`},
		{"a cluster-admin group", issue(tenantKey, "consumer-1", "kubeadm:cluster-admins"), "organization [kubeadm:cluster-admins] is not [liqo.io]"},
		{"an extra group", issue(tenantKey, "consumer-1", "liqo.io", "system:masters"), "organization [liqo.io system:masters] is not [liqo.io]"},
		{"no group", issue(tenantKey, "consumer-1"), "organization [] is not [liqo.io]"},
		{"not a certificate", []byte("garbage"), "issued certificate:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cert, err := layout.VerifyIssued(tc.cert, tenantKey.Public(), "consumer-1")
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("want valid, got %v", err)
			case tc.wantErr == "" && cert == nil:
				t.Fatal("no certificate returned")
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("want an error with %q, got %v", tc.wantErr, err)
			}
		})
	}
}

// TestVerifyRequestKey: a Tenant must carry the key of request.yaml, and a
// Tenant without a valid request.yaml beside it is refused.
func TestVerifyRequestKey(t *testing.T) {
	requested := key(t)
	pub, err := crypto.MarshalPublicKeyPEM(requested.Public())
	if err != nil {
		t.Fatal(err)
	}
	request := &documents.PeeringRequest{Spec: documents.PeeringRequestSpec{PublicKey: pub}}
	for _, tc := range []struct {
		name    string
		request *documents.PeeringRequest
		key     gocrypto.PublicKey
		wantErr string
	}{
		{"the request's key", request, requested.Public(), ""},
		{"another key", request, key(t).Public(), "tenant public key is not the key of request.yaml: another key signed this Tenant than the one that requested the peering"},
		{"no request.yaml", nil, requested.Public(), "no valid request.yaml beside it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pe := &layout.Peering{Provider: "provider-a", Consumer: "consumer-1", Request: tc.request}
			err := pe.VerifyRequestKey(tc.key)
			if (tc.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("want error %q, got %v", tc.wantErr, err)
			}
		})
	}
}
