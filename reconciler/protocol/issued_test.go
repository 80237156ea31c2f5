package protocol

import (
	gocrypto "crypto"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1/documents"
)

// TestCheckIssued: the provider stores and publishes a signed certificate
// only when it is for the Tenant's key and names exactly CN=<consumer>,
// O=[liqo.io], whatever the signer returned.
func TestCheckIssued(t *testing.T) {
	signer, tenantKey := newKey(t), newKey(t)
	// issue is a certificate for k's public key with subject CN=cn, O=orgs, as a signer returns it.
	issue := func(k gocrypto.Signer, cn string, orgs ...string) []byte {
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn, Organization: orgs},
			NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, k.Public(), signer)
		if err != nil {
			t.Fatal(err)
		}
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	}
	for _, tc := range []struct {
		name    string
		cert    []byte
		wantErr string
	}{
		{"the Tenant's key and subject", issue(tenantKey, "consumer-1", "liqo.io"), ""},
		{"another key", issue(newKey(t), "consumer-1", "liqo.io"), "is not for the Tenant's public key"},
		{"another CN", issue(tenantKey, "consumer-2", "liqo.io"), `identity certificate is for "consumer-2", not "consumer-1"`},
		{"a cluster-admin group", issue(tenantKey, "consumer-1", "kubeadm:cluster-admins"), "organization [kubeadm:cluster-admins] is not [liqo.io]"},
		{"an extra group", issue(tenantKey, "consumer-1", "liqo.io", "system:masters"), "organization [liqo.io system:masters] is not [liqo.io]"},
		{"no group", issue(tenantKey, "consumer-1"), "organization [] is not [liqo.io]"},
		{"not a certificate", []byte("garbage"), "issued certificate:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cert, err := CheckIssued(tc.cert, tenantKey.Public(), consumer)
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

// TestCheckRequestKey: a Tenant must carry the key of request.yaml, and a
// Tenant without a valid request.yaml beside it is refused.
func TestCheckRequestKey(t *testing.T) {
	requested := newKey(t)
	request := &documents.PeeringRequest{Spec: documents.PeeringRequestSpec{PublicKey: pubPEM(t, requested)}}
	for _, tc := range []struct {
		name    string
		request *documents.PeeringRequest
		key     gocrypto.PublicKey
		wantErr string
	}{
		{"the request's key", request, requested.Public(), ""},
		{"another key", request, newKey(t).Public(), "tenant public key is not the key of request.yaml: another key signed this Tenant than the one that requested the peering"},
		{"no request.yaml", nil, requested.Public(), "no valid request.yaml beside it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pe := &Documents{Provider: provider, Consumer: consumer, Request: tc.request}
			err := pe.CheckRequestKey(tc.key)
			if (tc.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("want error %q, got %v", tc.wantErr, err)
			}
		})
	}
}
