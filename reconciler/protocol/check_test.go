package protocol_test

import (
	gocrypto "crypto"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"strings"
	"testing"
	"time"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/examples/repofixture"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
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
	otherKey, err := crypto.GenerateKey(crypto.Ed25519)
	if err != nil {
		t.Fatal(err)
	}
	issueFor := func(key gocrypto.Signer, cn string, orgs ...string) []byte {
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
	issue := func(cn string, orgs ...string) []byte { return issueFor(key, cn, orgs...) }
	good := issue(consumer, authv1beta1.CertificateOrganization)
	for _, tc := range []struct {
		name     string
		cert, ca []byte
		aws      *authv1beta1.AwsConfig
		at       time.Time
		wantErr  string
	}{
		{name: "valid certificate beside awsConfig (Liqo on EKS with IAM): refused", cert: good, ca: ca.PEM,
			aws:     &authv1beta1.AwsConfig{AwsUserArn: "arn:aws:iam::1:user/liqo", AwsAccessKeyID: "AKIA", AwsSecretAccessKey: "secret", AwsRegion: "eu-west-1", AwsClusterName: "p"},
			wantErr: "authParams carry awsConfig (Liqo on EKS with IAM"},
		{name: "chains to its CA", cert: good, ca: ca.PEM},
		{name: "empty CA: publicly trusted API server, no chain to check", cert: good},
		{name: "signed by a CA it does not name (Liqo: ca is the serving CA)", cert: good, ca: otherCA.PEM},
		{name: "CA field holds the client certificate", cert: good, ca: good, wantErr: "identity CA: CA certificate 1"},
		{name: "CA field is not PEM", cert: good, ca: []byte("not a CA"), wantErr: "identity CA:"},
		{name: "another key", cert: issueFor(otherKey, consumer, authv1beta1.CertificateOrganization), ca: otherCA.PEM, wantErr: "is not the cluster's"},
		{name: "expired", cert: good, ca: ca.PEM, at: now.Add(2 * time.Hour), wantErr: "not at"},
		{name: "empty CA, another consumer", cert: issue("consumer-2", authv1beta1.CertificateOrganization), wantErr: `is for "consumer-2"`},
		{name: "empty CA, system:masters", cert: issue(consumer, "system:masters"), wantErr: "organization [system:masters] is not [liqo.io]"},
		{name: "extra organization", cert: issue(consumer, authv1beta1.CertificateOrganization, "system:masters"), ca: ca.PEM, wantErr: "organization [liqo.io system:masters]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := &authv1beta1.Identity{Spec: authv1beta1.IdentitySpec{AuthParams: authv1beta1.AuthParams{APIServer: "https://p:6443", CA: tc.ca, SignedCRT: tc.cert, AwsConfig: tc.aws}}}
			at := now
			if !tc.at.IsZero() {
				at = tc.at
			}
			_, err := protocol.CheckIdentity(id, key.Public(), consumer, at)
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
