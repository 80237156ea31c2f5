// Package repofixture builds the files of a peering repository as the gitpeer
// agents would write them, with reconciler/protocol's document builders, real keys, nonce signatures, CSRs and
// certificates signed by a CA it generates. The examples/ generator and the
// CLI tests (verify, audit) share it, so every fixture is what a real
// handshake produces unless a test deliberately breaks it.
package repofixture

import (
	gocrypto "crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"time"

	git "github.com/go-git/go-git/v5"
	"golang.org/x/crypto/ssh"

	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/gitsync"
)

// CA is a certificate authority standing in for a provider cluster's CA.
type CA struct {
	Cert *x509.Certificate
	Key  gocrypto.Signer
	// PEM is the CA certificate, as in Identity.spec.authParams.ca.
	PEM []byte
}

// NewCA generates an Ed25519 CA valid from notBefore for ttl.
func NewCA(name string, notBefore time.Time, ttl time.Duration) (*CA, error) {
	key, err := crypto.GenerateKey(crypto.Ed25519)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             notBefore,
		NotAfter:              notBefore.Add(ttl),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, Key: key, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// Issue signs the CSR as kube-controller-manager's kube-apiserver-client
// signer does: the CSR's subject and key, client authentication only.
func (ca *CA) Issue(csrPEM []byte, notBefore time.Time, ttl time.Duration) ([]byte, error) {
	block, _ := pem.Decode(csrPEM)
	if block == nil {
		return nil, fmt.Errorf("repofixture: CSR is not PEM")
	}
	csr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      csr.Subject,
		NotBefore:    notBefore,
		NotAfter:     notBefore.Add(ttl),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, csr.PublicKey, ca.Key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 64))
	if err != nil {
		panic(err)
	}
	return n
}

// Write writes data to root/rel (slash-separated), creating directories.
func Write(root, rel string, data []byte) error {
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, data, 0o644)
}

// AgentKey is a commit signing key of an agent (spec.commit.signingKey).
type AgentKey struct {
	// Signer signs commits as gitsync does.
	Signer git.Signer
	// Trusted holds its public key, as `gitpeer records --agent-key` reads it.
	Trusted *gitsync.TrustedKeys
	// AuthorizedKey is its public key in authorized_keys format.
	AuthorizedKey []byte
}

// NewAgentKey generates an Ed25519 SSH commit signing key.
func NewAgentKey() (*AgentKey, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		return nil, err
	}
	signer, err := gitsync.NewSSHSigner(pem.EncodeToMemory(block), nil)
	if err != nil {
		return nil, err
	}
	pub, err := ssh.NewPublicKey(priv.Public())
	if err != nil {
		return nil, err
	}
	authorized := ssh.MarshalAuthorizedKey(pub)
	trusted, err := gitsync.ParseTrustedKeys(map[string][]byte{"agent.sshpub": authorized})
	if err != nil {
		return nil, err
	}
	return &AgentKey{Signer: signer, Trusted: trusted, AuthorizedKey: authorized}, nil
}
