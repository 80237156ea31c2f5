package crypto

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"net/url"
	"slices"
	"testing"
)

const consumerID = "cl-consumer"

// rawCSR signs a CSR for template with key and returns it as PEM.
func rawCSR(t *testing.T, key crypto.Signer, template *x509.CertificateRequest) []byte {
	t.Helper()
	der, err := x509.CreateCertificateRequest(rand.Reader, template, key)
	requireNoError(t, err)
	return pemOf(pemCertificateRequest, der)
}

// liqoSubject is the subject Liqo puts in a control-plane CSR.
func liqoSubject(cn string) pkix.Name {
	return pkix.Name{CommonName: cn, Organization: []string{CSROrganization}}
}

func TestBuildCSR(t *testing.T) {
	for name, key := range testKeys(t) {
		t.Run(name, func(t *testing.T) {
			data, err := BuildCSR(key, consumerID)
			requireNoError(t, err)
			csr, err := ValidateCSR(data, consumerID, key.Public())
			requireNoError(t, err)
			if csr.Subject.CommonName != consumerID || !slices.Equal(csr.Subject.Organization, []string{"liqo.io"}) {
				t.Fatalf("subject is %v", csr.Subject)
			}
			if len(csr.Extensions) != 0 || len(csr.DNSNames)+len(csr.IPAddresses)+len(csr.URIs)+len(csr.EmailAddresses) != 0 {
				t.Fatalf("CSR has extensions %v", csr.Extensions)
			}
			// Same order as Liqo's pkix.Name.ToRDNSequence(): O first, then CN.
			want, err := asn1.Marshal(liqoSubject(consumerID).ToRDNSequence())
			requireNoError(t, err)
			if !bytes.Equal(csr.RawSubject, want) {
				t.Fatal("subject is not encoded as Liqo encodes it")
			}
		})
	}
}

func TestBuildCSRDeterministic(t *testing.T) {
	keys := testKeys(t)
	for _, name := range []string{"Ed25519", "RSA-2048"} {
		first, err := BuildCSR(keys[name], consumerID)
		requireNoError(t, err)
		second, err := BuildCSR(keys[name], consumerID)
		requireNoError(t, err)
		if !bytes.Equal(first, second) {
			t.Fatalf("%s CSR differs between two builds", name)
		}
	}
	first, err := BuildCSR(keys["Ed25519"], consumerID)
	requireNoError(t, err)
	other, err := BuildCSR(newEd25519(t), consumerID)
	requireNoError(t, err)
	if bytes.Equal(first, other) {
		t.Fatal("different keys give the same CSR")
	}
}

func TestBuildCSRRejectsInvalidClusterID(t *testing.T) {
	_, err := BuildCSR(newEd25519(t), "Not_A_Label")
	requireRule(t, err, RuleClusterID)
}

func TestValidateCSRRejects(t *testing.T) {
	key := newEd25519(t)
	pub := key.Public()
	good, err := BuildCSR(key, consumerID)
	requireNoError(t, err)
	withSubject := func(subject pkix.Name) []byte {
		return rawCSR(t, key, &x509.CertificateRequest{Subject: subject})
	}
	der, err := decodeSinglePEM(good, pemCertificateRequest, RuleCSRFormat)
	requireNoError(t, err)
	der = bytes.Clone(der)
	der[len(der)-1] ^= 1 // the signature is last
	badSignature := pemOf(pemCertificateRequest, der)
	small := newRSA(t, 1024)
	p224, err := ecdsa.GenerateKey(elliptic.P224(), rand.Reader)
	requireNoError(t, err)
	oidChallengePassword := asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 7}

	for name, tc := range map[string]struct {
		csr       []byte
		tenantKey crypto.PublicKey
		rule      Rule
		want      string
	}{
		// Format: exactly one PEM block, nothing else, valid self-signature.
		"empty":            {nil, pub, RuleCSRFormat, "no CERTIFICATE REQUEST PEM block"},
		"two blocks":       {append(bytes.Clone(good), good...), pub, RuleCSRFormat, "found 2"},
		"trailing text":    {append(bytes.Clone(good), "extra"...), pub, RuleCSRFormat, "data outside"},
		"trailing newline": {append(bytes.Clone(good), '\n'), pub, RuleCSRFormat, "data outside"},
		"leading text":     {append([]byte("csr: "), good...), pub, RuleCSRFormat, "data outside"},
		"wrong type":       {bytes.ReplaceAll(good, []byte("CERTIFICATE REQUEST"), []byte("CERTIFICATE")), pub, RuleCSRFormat, `"CERTIFICATE", want "CERTIFICATE REQUEST"`},
		"garbage DER":      {pemOf(pemCertificateRequest, []byte("nope")), pub, RuleCSRFormat, "cannot parse CSR"},
		"bad signature":    {badSignature, pub, RuleCSRFormat, "self-signature is invalid"},
		// Common name.
		"other CN": {withSubject(liqoSubject("cl-other")), pub, RuleCSRCommonName, `CSR common name "cl-other" is not the cluster ID "cl-consumer"`},
		"no CN":    {withSubject(pkix.Name{Organization: []string{"liqo.io"}}), pub, RuleCSRCommonName, "0 common names"},
		"two CNs":  {withSubject(pkix.Name{Organization: []string{"liqo.io"}, ExtraNames: []pkix.AttributeTypeAndValue{{Type: oidCommonName, Value: consumerID}, {Type: oidCommonName, Value: "admin"}}}), pub, RuleCSRCommonName, "2 common names"},
		"CN case":  {withSubject(liqoSubject("CL-consumer")), pub, RuleCSRCommonName, "is not the cluster ID"},
		// Organization: exactly [liqo.io].
		"system:masters too": {withSubject(pkix.Name{CommonName: consumerID, Organization: []string{"liqo.io", "system:masters"}}), pub, RuleCSROrganization, "CSR organization [liqo.io system:masters] is not [liqo.io]"},
		"system:masters":     {withSubject(pkix.Name{CommonName: consumerID, Organization: []string{"system:masters"}}), pub, RuleCSROrganization, "[system:masters] is not [liqo.io]"},
		"no O":               {withSubject(pkix.Name{CommonName: consumerID}), pub, RuleCSROrganization, "CSR organization [] is not [liqo.io]"},
		"O twice":            {withSubject(pkix.Name{CommonName: consumerID, Organization: []string{"liqo.io", "liqo.io"}}), pub, RuleCSROrganization, "[liqo.io liqo.io]"},
		// Nothing else in the subject.
		"OU":            {withSubject(pkix.Name{CommonName: consumerID, Organization: []string{"liqo.io"}, OrganizationalUnit: []string{"system:masters"}}), pub, RuleCSRSubject, `2.5.4.11="system:masters"`},
		"country":       {withSubject(pkix.Name{CommonName: consumerID, Organization: []string{"liqo.io"}, Country: []string{"IT"}}), pub, RuleCSRSubject, "2.5.4.6"},
		"serial number": {withSubject(pkix.Name{CommonName: consumerID, Organization: []string{"liqo.io"}, SerialNumber: "1"}), pub, RuleCSRSubject, "only CN and O"},
		// No extensions, SANs or attributes.
		"DNS SAN":   {rawCSR(t, key, &x509.CertificateRequest{Subject: liqoSubject(consumerID), DNSNames: []string{"kubernetes"}}), pub, RuleCSRExtensions, "[2.5.29.17]"},
		"URI SAN":   {rawCSR(t, key, &x509.CertificateRequest{Subject: liqoSubject(consumerID), URIs: []*url.URL{{Scheme: "spiffe", Host: "x"}}}), pub, RuleCSRExtensions, "no extensions or SANs"},
		"extension": {rawCSR(t, key, &x509.CertificateRequest{Subject: liqoSubject(consumerID), ExtraExtensions: []pkix.Extension{{Id: asn1.ObjectIdentifier{1, 2, 3}, Value: []byte{5, 0}}}}), pub, RuleCSRExtensions, "[1.2.3]"},
		"attribute": {rawCSR(t, key, &x509.CertificateRequest{Subject: liqoSubject(consumerID), Attributes: []pkix.AttributeTypeAndValueSET{{Type: oidChallengePassword, Value: [][]pkix.AttributeTypeAndValue{{{Type: oidCommonName, Value: "x"}}}}}}), pub, RuleCSRExtensions, "CSR has attributes"},
		// Key: allowed type, the Tenant's key.
		"other key":       {good, newEd25519(t).Public(), RuleCSRKey, "CSR Ed25519 key is not the Tenant's Ed25519 public key"},
		"other key type":  {good, &newRSA(t, 2048).PublicKey, RuleCSRKey, "not the Tenant's RSA-2048 public key"},
		"RSA-1024 CSR":    {rawCSR(t, small, &x509.CertificateRequest{Subject: liqoSubject(consumerID)}), &small.PublicKey, RuleCSRKey, "1024 bits"},
		"ECDSA P-224 CSR": {rawCSR(t, p224, &x509.CertificateRequest{Subject: liqoSubject(consumerID)}), &p224.PublicKey, RuleCSRKey, "P-224"},
		"nil tenant key":  {good, nil, RuleCSRKey, "not the Tenant's"},
	} {
		t.Run(name, func(t *testing.T) {
			csr, err := ValidateCSR(tc.csr, consumerID, tc.tenantKey)
			requireRule(t, err, tc.rule, tc.want)
			if csr != nil {
				t.Fatal("rejected CSR was returned")
			}
		})
	}
}
