package crypto

import (
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"fmt"
	"slices"

	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"
)

// CSROrganization is the only organization a control-plane CSR may carry.
// Kubernetes maps it to the group of the consumer's user, so anything else
// (system:masters above all) would grant more than the Tenant's RBAC.
const CSROrganization = "liqo.io"

var (
	oidCommonName   = asn1.ObjectIdentifier{2, 5, 4, 3}
	oidOrganization = asn1.ObjectIdentifier{2, 5, 4, 10}
)

// BuildCSR returns the PEM "CERTIFICATE REQUEST" for a consumer's identity
// on a provider, as Liqo builds it: subject CN=<clusterID>, O=liqo.io, no
// extensions, signed with the cluster key. Ed25519 and RSA PKCS #1 v1.5
// signatures are deterministic, so the same key and ID give the same bytes.
func BuildCSR(key crypto.Signer, clusterID string) ([]byte, error) {
	if err := ValidateClusterID(clusterID); err != nil {
		return nil, err
	}
	template := &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: clusterID, Organization: []string{CSROrganization}},
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, template, key)
	if err != nil {
		return nil, fmt.Errorf("cannot create certificate request: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: pemCertificateRequest, Bytes: der}), nil
}

// ValidateCSR checks a consumer's CSR as the provider must before signing
// it: exactly one PEM block and nothing else, a valid self-signature, an
// allowed key type, a subject of exactly CN=<clusterID> and O=liqo.io, no
// extensions (so no SANs) nor other attributes, and a key equal to
// tenantKey, the public key of the Tenant carrying the CSR. It returns the
// parsed request. Failures are *Error with one of the RuleCSR* rules.
func ValidateCSR(csrPEM []byte, clusterID string, tenantKey crypto.PublicKey) (*x509.CertificateRequest, error) {
	der, err := decodeSinglePEM(csrPEM, pemCertificateRequest, RuleCSRFormat)
	if err != nil {
		return nil, err
	}
	csr, err := x509.ParseCertificateRequest(der)
	if err != nil {
		return nil, newError(RuleCSRFormat, err, "cannot parse CSR")
	}
	if err := csr.CheckSignature(); err != nil {
		return nil, newError(RuleCSRFormat, err, "CSR self-signature is invalid")
	}
	if err := checkCSRSubject(csr, clusterID); err != nil {
		return nil, err
	}
	if err := checkCSRExtensions(csr); err != nil {
		return nil, err
	}
	if err := checkCSRKey(csr, tenantKey); err != nil {
		return nil, err
	}
	return csr, nil
}

// checkCSRSubject requires the subject to be exactly one CN equal to
// clusterID and the organization [liqo.io], in whatever RDN layout.
func checkCSRSubject(csr *x509.CertificateRequest, clusterID string) error {
	var commonNames []string
	for _, attr := range csr.Subject.Names {
		value, isString := attr.Value.(string)
		switch {
		case !isString:
			return newError(RuleCSRSubject, nil, "CSR subject attribute %v has a non-string value", attr.Type)
		case attr.Type.Equal(oidCommonName):
			commonNames = append(commonNames, value)
		case !attr.Type.Equal(oidOrganization):
			return newError(RuleCSRSubject, nil, "CSR subject has attribute %v=%q; only CN and O are allowed", attr.Type, value)
		}
	}
	if len(commonNames) != 1 {
		return newError(RuleCSRCommonName, nil, "CSR has %d common names, want exactly one", len(commonNames))
	}
	if commonNames[0] != clusterID {
		return newError(RuleCSRCommonName, nil, "CSR common name %q is not the cluster ID %q", commonNames[0], clusterID)
	}
	if org := csr.Subject.Organization; !slices.Equal(org, []string{CSROrganization}) {
		return newError(RuleCSROrganization, nil, "CSR organization %v is not [%s]", org, CSROrganization)
	}
	return nil
}

// checkCSRExtensions rejects requested extensions (SANs among them) and any
// other CSR attribute, including those the x509 parser skips.
func checkCSRExtensions(csr *x509.CertificateRequest) error {
	if len(csr.Extensions) > 0 {
		oids := make([]string, len(csr.Extensions))
		for i, ext := range csr.Extensions {
			oids[i] = ext.Id.String()
		}
		return newError(RuleCSRExtensions, nil, "CSR requests extensions %v; no extensions or SANs are allowed", oids)
	}
	// CertificationRequestInfo ::= SEQUENCE { version, subject, subjectPKInfo, [0] attributes }
	tbs := cryptobyte.String(csr.RawTBSCertificateRequest)
	var info, attributes cryptobyte.String
	if !tbs.ReadASN1(&info, cbasn1.SEQUENCE) ||
		!info.SkipASN1(cbasn1.INTEGER) || !info.SkipASN1(cbasn1.SEQUENCE) || !info.SkipASN1(cbasn1.SEQUENCE) ||
		!info.ReadASN1(&attributes, cbasn1.Tag(0).ContextSpecific().Constructed()) {
		return newError(RuleCSRFormat, nil, "CSR request info is malformed")
	}
	if !attributes.Empty() {
		return newError(RuleCSRExtensions, nil, "CSR has attributes; none are allowed")
	}
	return nil
}

// checkCSRKey requires an allowed key type equal to the Tenant's key.
func checkCSRKey(csr *x509.CertificateRequest, tenantKey crypto.PublicKey) error {
	if err := checkPublicKey(csr.PublicKey, RuleCSRKey); err != nil {
		return err
	}
	if !samePublicKey(csr.PublicKey, tenantKey) {
		return newError(RuleCSRKey, nil, "CSR %s key is not the Tenant's %s public key", describeKey(csr.PublicKey), describeKey(tenantKey))
	}
	return nil
}
