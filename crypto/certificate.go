package crypto

import (
	"crypto"
	"crypto/x509"
	"slices"
	"time"
)

// ParseCertificatePEM decodes a certificate that must be exactly one PEM
// "CERTIFICATE" block with nothing around it, as in
// Identity.spec.authParams.signedCRT. Failures are *Error with
// RuleCertificateFormat.
func ParseCertificatePEM(data []byte) (*x509.Certificate, error) {
	der, err := decodeSinglePEM(data, pemCertificate, RuleCertificateFormat)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, newError(RuleCertificateFormat, err, "cannot parse certificate")
	}
	return cert, nil
}

// ParseCAPEM decodes a CA bundle, as in Identity.spec.authParams.ca: one or
// more PEM "CERTIFICATE" blocks, with nothing but white space around them,
// each a CA certificate. Failures are *Error with RuleCertificateFormat, or
// RuleCertificateChain for a certificate that is not a CA.
func ParseCAPEM(data []byte) (*x509.CertPool, error) {
	certs, err := ParseCACertificates(data)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	for _, cert := range certs {
		pool.AddCert(cert)
	}
	return pool, nil
}

// liqoCAPadding is the most zero bytes Liqo appends to a CA set with its
// chart's apiServer.ca: it decodes the base64 flag into a buffer of
// base64.StdEncoding.DecodedLen bytes and keeps all of them (liqotech/liqo
// v1.2.0 cmd/liqo-controller-manager/modules/authentication.go), so a CA
// whose base64 is padded gets one or two NUL bytes after its last block.
const liqoCAPadding = 2

// ParseCACertificates is ParseCAPEM returning the certificates, in order.
// Up to liqoCAPadding NUL bytes at the end, as Liqo advertises an
// apiServer.ca, are not data outside the blocks: TLS clients ignore them.
func ParseCACertificates(data []byte) ([]*x509.Certificate, error) {
	for i := 0; i < liqoCAPadding && len(data) > 0 && data[len(data)-1] == 0; i++ {
		data = data[:len(data)-1]
	}
	ders, err := decodePEMBlocks(data, pemCertificate, true, RuleCertificateFormat)
	if err != nil {
		return nil, err
	}
	certs := make([]*x509.Certificate, 0, len(ders))
	for i, der := range ders {
		cert, err := x509.ParseCertificate(der)
		if err != nil {
			return nil, newError(RuleCertificateFormat, err, "cannot parse CA certificate %d", i+1)
		}
		if !cert.BasicConstraintsValid || !cert.IsCA {
			return nil, newError(RuleCertificateChain, nil, "CA certificate %d (%s) is not a CA certificate", i+1, cert.Subject)
		}
		certs = append(certs, cert)
	}
	return certs, nil
}

// CheckClientCertificate checks a client certificate issued to a consumer
// without asking who issued it: it is one PEM certificate for key (the
// consumer's own public key), valid at now, allowing client authentication
// (extended key usage clientAuth and, when the certificate restricts its key
// usage, digital signature: what a TLS client does with its key). Liqo
// promises no CA that signed it (Identity.spec.authParams.ca is the API
// server's serving CA, or empty), so only the API server can vouch for the
// issuer: prove the certificate with a request. Failures are *Error with one
// of the RuleCertificate* rules.
func CheckClientCertificate(certPEM []byte, key crypto.PublicKey, now time.Time) (*x509.Certificate, error) {
	cert, err := ParseCertificatePEM(certPEM)
	if err != nil {
		return nil, err
	}
	if !samePublicKey(cert.PublicKey, key) {
		return nil, newError(RuleCertificateKey, nil, "certificate %s key is not the cluster's %s public key",
			describeKey(cert.PublicKey), describeKey(key))
	}
	if now.Before(cert.NotBefore) || now.After(cert.NotAfter) {
		return nil, newError(RuleCertificateValidity, nil, "certificate is valid from %s to %s, not at %s",
			cert.NotBefore.UTC().Format(time.RFC3339), cert.NotAfter.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	if !slices.Contains(cert.ExtKeyUsage, x509.ExtKeyUsageClientAuth) {
		return nil, newError(RuleCertificateUsage, nil, "certificate does not have the client-auth extended key usage")
	}
	if cert.KeyUsage != 0 && cert.KeyUsage&x509.KeyUsageDigitalSignature == 0 {
		return nil, newError(RuleCertificateUsage, nil, "certificate key usage does not allow digital signature, which client authentication needs")
	}
	return cert, nil
}

// VerifyClientCertificate checks a client certificate as
// CheckClientCertificate does and, when caPEM is not empty, that it chains to
// a certificate in caPEM. An empty caPEM names no CA to chain to. It returns
// the parsed certificate. Failures are *Error with one of the
// RuleCertificate* rules.
func VerifyClientCertificate(certPEM, caPEM []byte, key crypto.PublicKey, now time.Time) (*x509.Certificate, error) {
	cert, err := CheckClientCertificate(certPEM, key, now)
	if err != nil || len(caPEM) == 0 {
		return cert, err
	}
	roots, err := ParseCAPEM(caPEM)
	if err != nil {
		return nil, err
	}
	_, err = cert.Verify(x509.VerifyOptions{
		Roots:       roots,
		CurrentTime: now,
		KeyUsages:   []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return nil, newError(RuleCertificateChain, err, "certificate does not chain to the CA")
	}
	return cert, nil
}

// RenewalTime returns when cert should be renewed: once two thirds of its
// validity period have passed.
func RenewalTime(cert *x509.Certificate) time.Time {
	life := cert.NotAfter.Sub(cert.NotBefore) // saturates rather than overflows
	return cert.NotBefore.Add(life - life/3)
}
