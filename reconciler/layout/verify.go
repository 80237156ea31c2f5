package layout

import (
	gocrypto "crypto"
	"crypto/x509"
	"fmt"
	"slices"
	"time"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	"github.com/gitpeer/gitpeer/crypto"
)

// VerifyTenant checks a Tenant as the provider must before issuing anything:
// its public key parses, its signature is over nonce (the provider's own
// current nonce), and its CSR passes the strict rules for consumer (CN, O
// exactly liqo.io, no extensions, key equal to the Tenant's key). It returns
// the Tenant's public key.
func VerifyTenant(t *authv1beta1.Tenant, nonce, consumer string) (gocrypto.PublicKey, error) {
	key, err := crypto.ParsePublicKey(t.Spec.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("tenant public key: %w", err)
	}
	if err := crypto.VerifyNonceSignature(key, nonce, t.Spec.Signature); err != nil {
		return nil, fmt.Errorf("tenant signature: %w", err)
	}
	if _, err := crypto.ValidateCSR(t.Spec.CSR, consumer, key); err != nil {
		return nil, fmt.Errorf("tenant CSR: %w", err)
	}
	return key, nil
}

// VerifyIdentity checks that an Identity's certificate belongs to key, chains
// to the CA inside the Identity (unless that CA is empty, as Liqo allows for a
// publicly trusted API server), allows client authentication, is valid at now,
// and names consumer (CN) in exactly the group liqo.io (O).
func VerifyIdentity(id *authv1beta1.Identity, key gocrypto.PublicKey, consumer string, now time.Time) (*x509.Certificate, error) {
	cert, err := crypto.VerifyClientCertificate(id.Spec.AuthParams.SignedCRT, id.Spec.AuthParams.CA, key, now)
	if err != nil {
		return nil, fmt.Errorf("identity certificate: %w", err)
	}
	if cert.Subject.CommonName != consumer {
		return nil, fmt.Errorf("%w: identity certificate is for %q, not %q", ErrInvalid, cert.Subject.CommonName, consumer)
	}
	if !slices.Equal(cert.Subject.Organization, []string{authv1beta1.CertificateOrganization}) {
		return nil, fmt.Errorf("%w: identity certificate organization %v is not [%s]", ErrInvalid, cert.Subject.Organization, authv1beta1.CertificateOrganization)
	}
	return cert, nil
}
