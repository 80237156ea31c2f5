package verify

import (
	"bytes"
	gocrypto "crypto"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/examples/repofixture"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
)

// TestHostileCheckouts breaks one file of a valid checkout per case and
// expects exactly that file to be reported, with the reason.
func TestHostileCheckouts(t *testing.T) {
	aliasBomb := "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n"
	prev := "a"
	for _, l := range []string{"b", "c", "d", "e", "f", "g", "h", "i"} {
		aliasBomb += l + ": &" + l + " [" + strings.TrimSuffix(strings.Repeat("*"+prev+",", 9), ",") + "]\n"
		prev = l
	}
	for _, tc := range []struct {
		name    string
		path    string // the file expected invalid
		also    string // a file invalid because of it, if any
		mutate  func(t *testing.T, c *checkout)
		wantErr string
	}{
		{name: "tenant signed by another key", path: proposedDir + "tenant.yaml", wantErr: "tenant signature:", mutate: func(t *testing.T, c *checkout) {
			tt := c.tenant(t)
			var err error
			if tt.Spec.Signature, err = crypto.SignNonce(newKey(t), c.proposed.SignedNonce); err != nil {
				t.Fatal(err)
			}
			c.writeYAML(t, proposedDir+"tenant.yaml", tt)
		}},
		// The agent rejects it with the same message (test/e2e csr_test.go), from protocol.Documents.CheckRequestKey.
		{name: "whole tenant made with another key than the request's", path: proposedDir + "tenant.yaml", wantErr: "tenant public key is not the key of request.yaml: another key signed this Tenant than the one that requested the peering", mutate: func(t *testing.T, c *checkout) {
			tt, err := protocol.NewTenant("consumer-2", newKey(t), c.proposed.SignedNonce)
			if err != nil {
				t.Fatal(err)
			}
			c.writeYAML(t, proposedDir+"tenant.yaml", tt)
		}},
		{name: "replayed tenant signed over an older nonce", path: proposedDir + "tenant.yaml", wantErr: "tenant signature:", mutate: func(t *testing.T, c *checkout) {
			doc, err := protocol.NonceDocument("provider-a", "consumer-2", crypto.GenerateNonce())
			if err != nil {
				t.Fatal(err)
			}
			c.write(t, proposedDir+"nonce.yaml", doc)
		}},
		{name: "tenant without request.yaml", path: proposedDir + "tenant.yaml", wantErr: "no valid request.yaml beside it", mutate: func(t *testing.T, c *checkout) {
			c.remove(t, proposedDir+"request.yaml")
		}},
		{name: "tenant without any nonce", path: proposedDir + "tenant.yaml", wantErr: "no nonce.yaml beside it", mutate: func(t *testing.T, c *checkout) {
			c.remove(t, proposedDir+"nonce.yaml")
		}},
		{name: "issued tenant replaced by one over an old nonce with a new key", path: issuedDir + "tenant.yaml", also: issuedDir + "identity.yaml", wantErr: "not the key of request.yaml", mutate: func(t *testing.T, c *checkout) {
			tt, err := protocol.NewTenant("consumer-1", newKey(t), crypto.GenerateNonce())
			if err != nil {
				t.Fatal(err)
			}
			c.writeYAML(t, issuedDir+"tenant.yaml", tt)
		}},
		{name: "CSR with O=system:masters", path: proposedDir + "tenant.yaml", wantErr: "CSR organization [system:masters] is not [liqo.io]", mutate: func(t *testing.T, c *checkout) {
			c.tenantCSR(t, "consumer-2", "system:masters")
		}},
		{name: "CSR with an extra O", path: proposedDir + "tenant.yaml", wantErr: "CSR organization [liqo.io system:masters] is not [liqo.io]", mutate: func(t *testing.T, c *checkout) {
			c.tenantCSR(t, "consumer-2", "liqo.io", "system:masters")
		}},
		{name: "CSR CN is not the consumer", path: proposedDir + "tenant.yaml", wantErr: `CSR common name "consumer-1" is not the cluster ID "consumer-2"`, mutate: func(t *testing.T, c *checkout) {
			c.tenantCSR(t, "consumer-1", "liqo.io")
		}},
		{name: "tenant under another consumer's directory", path: "provider-a/consumer-3/tenant.yaml", wantErr: `Tenant "consumer-2" for cluster "consumer-2" sits in the directory of consumer "consumer-3"`, mutate: func(t *testing.T, c *checkout) {
			c.write(t, "provider-a/consumer-3/tenant.yaml", c.proposed.Files["tenant.yaml"])
		}},
		{name: "IDs in the request are not the path's", path: "provider-a/consumer-3/request.yaml", wantErr: `are not the IDs in its path`, mutate: func(t *testing.T, c *checkout) {
			c.write(t, "provider-a/consumer-3/request.yaml", c.proposed.Files["request.yaml"])
		}},
		{name: "invalid cluster ID in the path", path: "provider-a/Consumer_3/request.yaml", wantErr: `cluster ID "Consumer_3" is not an RFC 1123 label`, mutate: func(t *testing.T, c *checkout) {
			c.write(t, "provider-a/Consumer_3/request.yaml", c.proposed.Files["request.yaml"])
		}},
		{name: "known file at the wrong depth", path: "provider-a/tenant.yaml", wantErr: "wrong depth", mutate: func(t *testing.T, c *checkout) {
			c.write(t, "provider-a/tenant.yaml", c.proposed.Files["tenant.yaml"])
		}},
		{name: "malformed YAML", path: proposedDir + "nonce.yaml", also: proposedDir + "tenant.yaml", wantErr: "malformed YAML", mutate: func(t *testing.T, c *checkout) {
			c.write(t, proposedDir+"nonce.yaml", []byte("spec: [unclosed\n"))
		}},
		{name: "alias bomb", path: proposedDir + "tenant.yaml", wantErr: "anchors and aliases are not allowed", mutate: func(t *testing.T, c *checkout) {
			c.write(t, proposedDir+"tenant.yaml", []byte(aliasBomb))
		}},
		{name: "authzPolicy TolerateNoHandshake", path: proposedDir + "tenant.yaml", wantErr: `spec.authzPolicy is "TolerateNoHandshake": only KeysExchange`, mutate: func(t *testing.T, c *checkout) {
			tt := c.tenant(t)
			policy := authv1beta1.TolerateNoHandshake
			tt.Spec.AuthzPolicy = &policy
			c.writeYAML(t, proposedDir+"tenant.yaml", tt)
		}},
		{name: "multi-document", path: proposedDir + "tenant.yaml", wantErr: "more than one YAML document", mutate: func(t *testing.T, c *checkout) {
			doc := c.proposed.Files["tenant.yaml"]
			c.write(t, proposedDir+"tenant.yaml", append(append(append([]byte{}, doc...), "---\n"...), doc...))
		}},
		{name: "10 MiB file", path: proposedDir + "tenant.yaml", wantErr: "file exceeds size limit (10485760 bytes, limit 65536)", mutate: func(t *testing.T, c *checkout) {
			c.write(t, proposedDir+"tenant.yaml", bytes.Repeat([]byte("#"), 10<<20))
		}},
		{name: "symlink", path: proposedDir + "tenant.yaml", wantErr: "not a regular file (symlink)", mutate: func(t *testing.T, c *checkout) {
			c.remove(t, proposedDir+"tenant.yaml")
			if err := os.Symlink("/etc/passwd", filepath.Join(c.root, proposedDir, "tenant.yaml")); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "symlinked peering directory", path: "provider-a/consumer-3", wantErr: "not a regular file (symlink)", mutate: func(t *testing.T, c *checkout) {
			if err := os.Symlink(filepath.Join(c.root, proposedDir), filepath.Join(c.root, "provider-a/consumer-3")); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "identity for another key", path: issuedDir + "identity.yaml", also: issuedDir + "tenant.yaml", wantErr: "key is not the cluster's", mutate: func(t *testing.T, c *checkout) {
			c.identity(t, c.ca, newKey(t), time.Now().Add(-time.Minute))
		}},
		{name: "identity with a client certificate as its CA", path: issuedDir + "identity.yaml", also: issuedDir + "tenant.yaml", wantErr: "identity CA: CA certificate 1", mutate: func(t *testing.T, c *checkout) {
			cert := c.issue(t, c.ca, c.issued.Key, "consumer-1", time.Now().Add(-time.Minute))
			c.writeIdentity(t, cert, cert)
		}},
		{name: "expired identity", path: issuedDir + "identity.yaml", also: issuedDir + "tenant.yaml", wantErr: "not at", mutate: func(t *testing.T, c *checkout) {
			c.identity(t, c.ca, c.issued.Key, time.Now().Add(-2*time.Hour))
		}},
		{name: "identity for another CN", path: issuedDir + "identity.yaml", also: issuedDir + "tenant.yaml", wantErr: `identity certificate is for "consumer-2", not "consumer-1"`, mutate: func(t *testing.T, c *checkout) {
			c.writeIdentity(t, c.ca.PEM, c.issue(t, c.ca, c.issued.Key, "consumer-2", time.Now().Add(-time.Minute)))
		}},
		{name: "identity with O=system:masters", path: issuedDir + "identity.yaml", also: issuedDir + "tenant.yaml", wantErr: "organization [system:masters] is not [liqo.io]", mutate: func(t *testing.T, c *checkout) {
			cert, err := c.ca.Issue(csrWith(t, c.issued.Key, "consumer-1", "system:masters"), time.Now().Add(-time.Minute), time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			c.writeIdentity(t, c.ca.PEM, cert)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCheckout(t)
			tc.mutate(t, c)
			results, err := resultsOf(Check(commitAll(t, c.root), Options{}))
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range results {
				if r.Path == tc.path {
					if r.Valid || !strings.Contains(r.Reason, tc.wantErr) {
						t.Fatalf("%s: %+v, want invalid with %q", r.Path, r, tc.wantErr)
					}
				} else if !r.Valid && r.Path != tc.also {
					t.Errorf("collateral: %+v", r)
				}
			}
			want := 1
			if tc.also != "" {
				want = 2
			}
			if Invalid(results) != want {
				t.Fatalf("want exactly %s invalid, got %+v", tc.path, results)
			}
		})
	}
}

// TestIdentityNotChainingToItsCA: Liqo's identity.yaml names the API server's
// serving CA, which need not have signed the client certificate; offline the
// verdict is valid and says so, and the consumer proves it with a SelfSubjectReview.
func TestIdentityNotChainingToItsCA(t *testing.T) {
	c := newCheckout(t)
	other, err := repofixture.NewCA("client CA", time.Now().Add(-time.Hour), 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	c.writeIdentity(t, c.ca.PEM, c.issue(t, other, c.issued.Key, "consumer-1", time.Now().Add(-time.Minute)))
	results, err := resultsOf(Check(commitAll(t, c.root), Options{}))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		if r.Path == issuedDir+"identity.yaml" && (!r.Valid || !strings.Contains(r.Reason, "does not chain to its CA (Liqo-legal")) {
			t.Fatalf("%+v, want valid, saying it does not chain to its CA", r)
		}
	}
	if n := Invalid(results); n != 0 {
		t.Fatalf("%d invalid: %+v", n, results)
	}
}

func (c *checkout) remove(t *testing.T, rel string) {
	t.Helper()
	if err := os.Remove(filepath.Join(c.root, rel)); err != nil {
		t.Fatal(err)
	}
}

// tenantCSR replaces consumer-2's CSR, keeping a valid signature.
func (c *checkout) tenantCSR(t *testing.T, cn string, orgs ...string) {
	t.Helper()
	tt := c.tenant(t)
	tt.Spec.CSR = csrWith(t, c.proposed.Key, cn, orgs...)
	c.writeYAML(t, proposedDir+"tenant.yaml", tt)
}

// issue signs a CSR of key for cn with ca, valid for an hour from notBefore.
func (c *checkout) issue(t *testing.T, ca *repofixture.CA, key gocrypto.Signer, cn string, notBefore time.Time) []byte {
	t.Helper()
	cert, err := ca.Issue(csrWith(t, key, cn, authv1beta1.CertificateOrganization), notBefore, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

func (c *checkout) identity(t *testing.T, ca *repofixture.CA, key gocrypto.Signer, notBefore time.Time) {
	t.Helper()
	c.writeIdentity(t, ca.PEM, c.issue(t, ca, key, "consumer-1", notBefore))
}

func (c *checkout) writeIdentity(t *testing.T, caPEM, cert []byte) {
	t.Helper()
	doc, err := protocol.IdentityDocument("provider-a", "consumer-1", authv1beta1.AuthParams{APIServer: "https://provider-a.example:6443", CA: caPEM, SignedCRT: cert})
	if err != nil {
		t.Fatal(err)
	}
	c.write(t, issuedDir+"identity.yaml", doc)
}
