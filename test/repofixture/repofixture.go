// Package repofixture builds the files of a peering repository as the gitpeer
// agents would write them, with real keys, nonce signatures, CSRs and
// certificates signed by a CA it generates. The examples/ generator and the
// CLI tests (verify, audit) share it, so every fixture is what a real
// handshake produces unless a test deliberately breaks it.
package repofixture

import (
	gocrypto "crypto"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	"github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1/documents"
	"github.com/gitpeer/gitpeer/crypto"
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

// Request returns request.yaml of consumer towards provider.
func Request(provider, consumer string, key gocrypto.PublicKey) ([]byte, error) {
	pub, err := crypto.MarshalPublicKeyPEM(key)
	if err != nil {
		return nil, err
	}
	return yaml.Marshal(&documents.PeeringRequest{
		TypeMeta:   metav1.TypeMeta{APIVersion: documents.APIVersion, Kind: documents.PeeringRequestKind},
		ObjectMeta: metav1.ObjectMeta{Name: consumer},
		Spec: documents.PeeringRequestSpec{
			ProviderClusterID: authv1beta1.ClusterID(provider), ConsumerClusterID: authv1beta1.ClusterID(consumer), PublicKey: pub,
		},
	})
}

// Nonce returns nonce.yaml holding nonce.
func Nonce(provider, consumer, nonce string) ([]byte, error) {
	return yaml.Marshal(&documents.Nonce{
		TypeMeta:   metav1.TypeMeta{APIVersion: documents.APIVersion, Kind: documents.NonceKind},
		ObjectMeta: metav1.ObjectMeta{Name: consumer},
		Spec: documents.NonceSpec{
			ProviderClusterID: authv1beta1.ClusterID(provider), ConsumerClusterID: authv1beta1.ClusterID(consumer), Nonce: nonce,
		},
	})
}

// TenantObject returns the Tenant a consumer agent writes: its public key, its
// signature of nonce and a CSR for CN=consumer, O=liqo.io.
func TenantObject(consumer string, key gocrypto.Signer, nonce string) (*authv1beta1.Tenant, error) {
	pub, err := crypto.MarshalPublicKeyPEM(key.Public())
	if err != nil {
		return nil, err
	}
	sig, err := crypto.SignNonce(key, nonce)
	if err != nil {
		return nil, err
	}
	csr, err := crypto.BuildCSR(key, consumer)
	if err != nil {
		return nil, err
	}
	return &authv1beta1.Tenant{
		TypeMeta: metav1.TypeMeta{APIVersion: authv1beta1.GroupVersion.String(), Kind: authv1beta1.TenantKind},
		ObjectMeta: metav1.ObjectMeta{
			Name:   authv1beta1.TenantName(authv1beta1.ClusterID(consumer)),
			Labels: map[string]string{authv1beta1.RemoteClusterIDLabel: consumer},
		},
		Spec: authv1beta1.TenantSpec{
			ClusterID: authv1beta1.ClusterID(consumer), PublicKey: pub, CSR: csr, Signature: sig,
			TenantCondition: authv1beta1.TenantConditionActive,
		},
	}, nil
}

// Tenant returns tenant.yaml as TenantObject builds it.
func Tenant(consumer string, key gocrypto.Signer, nonce string) ([]byte, error) {
	t, err := TenantObject(consumer, key, nonce)
	if err != nil {
		return nil, err
	}
	return yaml.Marshal(t)
}

// Identity returns identity.yaml as the provider agent writes it.
func Identity(provider, consumer, apiServer string, caPEM, certPEM []byte) ([]byte, error) {
	ns := authv1beta1.TenantNamespaceName(authv1beta1.ClusterID(consumer))
	return yaml.Marshal(&authv1beta1.Identity{
		TypeMeta: metav1.TypeMeta{APIVersion: authv1beta1.GroupVersion.String(), Kind: authv1beta1.IdentityKind},
		ObjectMeta: metav1.ObjectMeta{
			Name:   authv1beta1.ControlPlaneIdentityName(authv1beta1.ClusterID(provider)),
			Labels: map[string]string{authv1beta1.RemoteClusterIDLabel: provider},
		},
		Spec: authv1beta1.IdentitySpec{
			ClusterID: authv1beta1.ClusterID(provider), Type: authv1beta1.ControlPlaneIdentityType, Namespace: &ns,
			AuthParams: authv1beta1.AuthParams{APIServer: apiServer, CA: caPEM, SignedCRT: certPEM},
		},
	})
}

// Write writes data to root/rel (slash-separated), creating directories.
func Write(root, rel string, data []byte) error {
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, data, 0o644)
}
