package repofixture

import (
	gocrypto "crypto"
	"path"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	"github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1/documents"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// Stage is how far a peering directory got in the handshake.
type Stage int

// The stages, in handshake order.
const (
	// Requested: request.yaml only.
	Requested Stage = iota
	// NonceIssued: request.yaml and nonce.yaml.
	NonceIssued
	// TenantProposed: tenant.yaml signed over the nonce.yaml beside it.
	TenantProposed
	// Issued: identity.yaml certifies the Tenant's key and nonce.yaml holds a
	// fresh nonce, as the provider leaves it after issuance.
	Issued
)

// StagedDirectory is the files of one <provider>/<consumer> directory at a stage.
type StagedDirectory struct {
	Provider, Consumer string
	// Key is the consumer's cluster key.
	Key gocrypto.Signer
	// SignedNonce is the nonce the Tenant signed (empty before TenantProposed).
	SignedNonce string
	// Files maps a file name (request.yaml, ...) to its content.
	Files map[string][]byte
}

// Options of Build for the Issued stage.
type Options struct {
	CA        *CA
	APIServer string
	NotBefore time.Time
	TTL       time.Duration
}

// Build generates a consumer key and the files of the directory at stage.
func Build(provider, consumer string, stage Stage, o Options) (*StagedDirectory, error) {
	key, err := crypto.GenerateKey(crypto.Ed25519)
	if err != nil {
		return nil, err
	}
	p := &StagedDirectory{Provider: provider, Consumer: consumer, Key: key, Files: map[string][]byte{}}
	if p.Files[string(vocabulary.RequestFile)], err = protocol.RequestDocument(provider, consumer, key.Public()); err != nil || stage < NonceIssued {
		return p, err
	}
	nonce := crypto.GenerateNonce()
	if p.Files[string(vocabulary.NonceFile)], err = protocol.NonceDocument(provider, consumer, nonce); err != nil || stage < TenantProposed {
		return p, err
	}
	p.SignedNonce = nonce
	t, err := protocol.NewTenant(consumer, key, nonce)
	if err != nil {
		return nil, err
	}
	if p.Files[string(vocabulary.TenantFile)], err = yaml.Marshal(t); err != nil || stage < Issued {
		return p, err
	}
	cert, err := o.CA.Issue(t.Spec.CSR, o.NotBefore, o.TTL)
	if err != nil {
		return nil, err
	}
	if p.Files[string(vocabulary.IdentityFile)], err = protocol.IdentityDocument(provider, consumer, authv1beta1.AuthParams{APIServer: o.APIServer, CA: o.CA.PEM, SignedCRT: cert}); err != nil {
		return nil, err
	}
	p.Files[string(vocabulary.NonceFile)], err = protocol.NonceDocument(provider, consumer, crypto.GenerateNonce())
	return p, err
}

// WriteTo writes the files under root/<provider>/<consumer>/.
func (p *StagedDirectory) WriteTo(root string) error {
	for name, data := range p.Files {
		if err := Write(root, path.Join(p.Provider, p.Consumer, name), data); err != nil {
			return err
		}
	}
	return nil
}

// Terms renders the terms.yaml a provider agent with the default settings
// publishes (no API server URL).
func Terms(provider string) ([]byte, error) {
	return protocol.TermsDocument(documents.ProviderTermsSpec{
		ProviderClusterID: authv1beta1.ClusterID(provider), TenantNamespacePrefix: authv1beta1.TenantNamespacePrefix,
		ClusterRoleName: authv1beta1.RemoteControlPlaneClusterRole, CertificateTTL: metav1.Duration{Duration: 24 * time.Hour},
		Renewal: protocol.RenewalTerm,
	})
}
