package protocol

import (
	gocrypto "crypto"
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
	"time"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	"github.com/gitpeer/gitpeer/crypto"
)

// CheckTenant checks a Tenant as the provider must before issuing anything:
// CheckTenantSpec, and its signature is over nonce (the provider's own
// current nonce). It returns the Tenant's public key.
func CheckTenant(t *authv1beta1.Tenant, nonce, consumer string) (gocrypto.PublicKey, error) {
	key, err := crypto.ParsePublicKey(t.Spec.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("tenant public key: %w", err)
	}
	if err := crypto.VerifyNonceSignature(key, nonce, t.Spec.Signature); err != nil {
		return nil, fmt.Errorf("tenant signature: %w", err)
	}
	return CheckTenantSpec(t, consumer)
}

// CheckTenantSpec checks what a Tenant asks for, whatever nonce it signed:
// its public key parses, its authzPolicy is KeysExchange (or unset, which the
// CRD defaults to it), and its CSR passes the strict rules for consumer (CN, O
// exactly liqo.io, no extensions, key equal to the Tenant's key). It returns
// the Tenant's public key. The provider agent and `gitpeer verify` both use it.
func CheckTenantSpec(t *authv1beta1.Tenant, consumer string) (gocrypto.PublicKey, error) {
	key, err := crypto.ParsePublicKey(t.Spec.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("tenant public key: %w", err)
	}
	if p := authv1beta1.GetAuthzPolicyValue(t.Spec.AuthzPolicy); p != authv1beta1.KeysExchange {
		return nil, fmt.Errorf("%w: tenant spec.authzPolicy is %q: only %s is accepted from Git (%s would make Liqo skip the handshake checks)",
			ErrInvalid, p, authv1beta1.KeysExchange, authv1beta1.TolerateNoHandshake)
	}
	if _, err := crypto.ValidateCSR(t.Spec.CSR, consumer, key); err != nil {
		return nil, fmt.Errorf("tenant CSR: %w", err)
	}
	return key, nil
}

// CheckIdentity checks an Identity as a consumer must before it proves it
// with a SelfSubjectReview: its certificate is for key, valid at now, allows
// client authentication and names consumer (CN) in exactly the group liqo.io
// (O); its CA, when not empty, is a bundle of CA certificates. The
// certificate need not chain to that CA: in Liqo it is the API server's
// serving CA, or empty for a publicly trusted API server (the system roots
// verify it), and never promised to be the CA that signed the certificate.
func CheckIdentity(id *authv1beta1.Identity, key gocrypto.PublicKey, consumer string, now time.Time) (*x509.Certificate, error) {
	if err := CheckNoAWSConfig(&id.Spec.AuthParams); err != nil {
		return nil, err
	}
	cert, err := crypto.CheckClientCertificate(id.Spec.AuthParams.SignedCRT, key, now)
	if err != nil {
		return nil, fmt.Errorf("identity certificate: %w", err)
	}
	if ca := id.Spec.AuthParams.CA; len(ca) > 0 {
		if _, err := crypto.ParseCAPEM(ca); err != nil {
			return nil, fmt.Errorf("identity CA: %w", err)
		}
	}
	if err := CheckSubject(cert, consumer); err != nil {
		return nil, err
	}
	return cert, nil
}

// ErrAWSConfig refuses authParams carrying awsConfig: Liqo on EKS with IAM
// (authentication.awsConfig in Liqo's chart) hands the consumer an IAM
// user's secret access key instead of a certificate, a secret that must
// never be committed to Git, and gitpeer has no way to verify or revoke it.
var ErrAWSConfig = errors.New("authParams carry awsConfig (Liqo on EKS with IAM, authentication.awsConfig in Liqo's chart): gitpeer does not support it, as it would put an IAM secret access key in Git; " +
	"peer this provider with liqoctl, or install its Liqo without authentication.awsConfig (docs/liqo.md)")

// CheckNoAWSConfig fails with ErrAWSConfig when a carries awsConfig.
func CheckNoAWSConfig(a *authv1beta1.AuthParams) error {
	if a != nil && a.AwsConfig != nil {
		return ErrAWSConfig
	}
	return nil
}

// CheckRequestKey checks that key, the public key of the peering's Tenant,
// is the key of its request.yaml: the key that asked for the peering is the
// only one a Tenant may carry. It fails when request.yaml is absent or
// invalid. The provider agent and `gitpeer verify` both use it.
func (pe *Documents) CheckRequestKey(key gocrypto.PublicKey) error {
	if pe.Request == nil {
		return fmt.Errorf("%w: tenant public key: no valid request.yaml beside it to compare with", ErrInvalid)
	}
	requested, err := crypto.ParsePublicKey(pe.Request.Spec.PublicKey)
	if err != nil {
		return fmt.Errorf("%w: request.yaml public key: %v", ErrInvalid, err)
	}
	if !sameKey(key, requested) {
		return fmt.Errorf("%w: tenant public key is not the key of request.yaml: another key signed this Tenant than the one that requested the peering", ErrInvalid)
	}
	return nil
}

// CheckIssued checks a certificate the provider's signer issued for a
// consumer before the provider stores or publishes it: it is one PEM
// certificate, for key (the verified Tenant's key), with the subject
// CheckSubject requires.
func CheckIssued(certPEM []byte, key gocrypto.PublicKey, consumer string) (*x509.Certificate, error) {
	cert, err := crypto.ParseCertificatePEM(certPEM)
	if err != nil {
		return nil, fmt.Errorf("issued certificate: %w", err)
	}
	if !sameKey(cert.PublicKey, key) {
		return nil, fmt.Errorf("%w: issued certificate %s is not for the Tenant's public key", ErrInvalid, cert.SerialNumber.Text(16))
	}
	if err := CheckSubject(cert, consumer); err != nil {
		return nil, err
	}
	return cert, nil
}

// CheckSubject requires a consumer's certificate to name exactly what its CSR
// may ask for: CN=consumer and the organization [liqo.io], so that it never
// carries a group such as system:masters.
func CheckSubject(cert *x509.Certificate, consumer string) error {
	if err := checkCommonName(cert, consumer); err != nil {
		return err
	}
	if !slices.Equal(cert.Subject.Organization, []string{authv1beta1.CertificateOrganization}) {
		return fmt.Errorf("%w: identity certificate organization %v is not [%s]", ErrInvalid, cert.Subject.Organization, authv1beta1.CertificateOrganization)
	}
	return nil
}

func checkCommonName(cert *x509.Certificate, consumer string) error {
	if cert.Subject.CommonName != consumer {
		return fmt.Errorf("%w: identity certificate is for %q, not %q", ErrInvalid, cert.Subject.CommonName, consumer)
	}
	return nil
}

// sameKey reports whether a and b are the same public key.
func sameKey(a, b gocrypto.PublicKey) bool {
	eq, ok := a.(interface{ Equal(gocrypto.PublicKey) bool })
	return ok && eq.Equal(b)
}
