package protocol_test

import (
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"strings"
	"testing"
	"time"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/test/repofixture"
)

func TestCheckIdentity(t *testing.T) {
	const consumer = "consumer-1"
	now := time.Now()
	key, err := crypto.GenerateKey(crypto.Ed25519)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := repofixture.NewCA("provider CA", now.Add(-time.Minute), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	otherCA, err := repofixture.NewCA("other CA", now.Add(-time.Minute), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	issue := func(cn string, orgs ...string) []byte {
		der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn, Organization: orgs}}, key)
		if err != nil {
			t.Fatal(err)
		}
		cert, err := ca.Issue(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}), now.Add(-time.Minute), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return cert
	}
	good := issue(consumer, authv1beta1.CertificateOrganization)
	for _, tc := range []struct {
		name     string
		cert, ca []byte
		wantErr  string
	}{
		{name: "chains to its CA", cert: good, ca: ca.PEM},
		{name: "empty CA: publicly trusted API server, no chain to check", cert: good},
		{name: "another CA", cert: good, ca: otherCA.PEM, wantErr: "does not chain"},
		{name: "empty CA, another consumer", cert: issue("consumer-2", authv1beta1.CertificateOrganization), wantErr: `is for "consumer-2"`},
		{name: "empty CA, system:masters", cert: issue(consumer, "system:masters"), wantErr: "organization [system:masters] is not [liqo.io]"},
		{name: "extra organization", cert: issue(consumer, authv1beta1.CertificateOrganization, "system:masters"), ca: ca.PEM, wantErr: "organization [liqo.io system:masters]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := &authv1beta1.Identity{Spec: authv1beta1.IdentitySpec{AuthParams: authv1beta1.AuthParams{APIServer: "https://p:6443", CA: tc.ca, SignedCRT: tc.cert}}}
			_, err := protocol.CheckIdentity(id, key.Public(), consumer, now)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}
