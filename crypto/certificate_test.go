package crypto

import (
	"bytes"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"testing"
	"time"
)

func TestVerifyClientCertificate(t *testing.T) {
	ca := newTestCA(t, "provider-ca")
	otherCA := newTestCA(t, "other-ca")
	key := newEd25519(t)
	now := time.Now()
	nb, na := now.Add(-time.Minute), now.Add(time.Hour)
	clientAuth := x509.ExtKeyUsageClientAuth
	good := ca.issue(t, key.Public(), consumerID, nb, na, clientAuth)

	t.Run("valid", func(t *testing.T) {
		cert, err := VerifyClientCertificate(good, ca.pem, key.Public(), now)
		requireNoError(t, err)
		if cert.Subject.CommonName != consumerID {
			t.Fatalf("CN = %q", cert.Subject.CommonName)
		}
	})
	t.Run("CA bundle", func(t *testing.T) {
		bundle := append(append(bytes.Clone(otherCA.pem), '\n'), ca.pem...)
		_, err := VerifyClientCertificate(good, append(bundle, "\n\n"...), key.Public(), now)
		requireNoError(t, err)
	})
	t.Run("client and server auth", func(t *testing.T) {
		both := ca.issue(t, key.Public(), consumerID, nb, na, x509.ExtKeyUsageServerAuth, clientAuth)
		_, err := VerifyClientCertificate(both, ca.pem, key.Public(), now)
		requireNoError(t, err)
	})

	t.Run("empty CA: no chain to check", func(t *testing.T) {
		// Liqo's Identity of an API server with a publicly trusted certificate.
		cert, err := VerifyClientCertificate(good, nil, key.Public(), now)
		requireNoError(t, err)
		if cert.Subject.CommonName != consumerID {
			t.Fatalf("CN = %q", cert.Subject.CommonName)
		}
		_, err = VerifyClientCertificate(ca.issue(t, newEd25519(t).Public(), consumerID, nb, na, clientAuth), nil, key.Public(), now)
		requireRule(t, err, RuleCertificateKey, "is not the cluster's")
		_, err = VerifyClientCertificate(ca.issue(t, key.Public(), consumerID, nb, na, x509.ExtKeyUsageServerAuth), nil, key.Public(), now)
		requireRule(t, err, RuleCertificateUsage, "client-auth")
		_, err = VerifyClientCertificate(good, nil, key.Public(), na.Add(time.Second))
		requireRule(t, err, RuleCertificateValidity, "not at")
	})

	for name, tc := range map[string]struct {
		cert, ca []byte
		now      time.Time
		rule     Rule
		want     string
	}{
		"other key":       {ca.issue(t, newEd25519(t).Public(), consumerID, nb, na, clientAuth), ca.pem, now, RuleCertificateKey, "certificate Ed25519 key is not the cluster's Ed25519 public key"},
		"not yet valid":   {good, ca.pem, nb.Add(-time.Second), RuleCertificateValidity, "certificate is valid from"},
		"expired":         {good, ca.pem, na.Add(time.Second), RuleCertificateValidity, "not at"},
		"server auth":     {ca.issue(t, key.Public(), consumerID, nb, na, x509.ExtKeyUsageServerAuth), ca.pem, now, RuleCertificateUsage, "client-auth"},
		"no EKU":          {ca.issue(t, key.Public(), consumerID, nb, na), ca.pem, now, RuleCertificateUsage, "client-auth"},
		"other CA":        {good, otherCA.pem, now, RuleCertificateChain, "does not chain to the CA"},
		"leaf as CA":      {good, good, now, RuleCertificateChain, "CA certificate 1 (CN=cl-consumer,O=liqo.io) is not a CA certificate"},
		"two certs":       {append(bytes.Clone(good), good...), ca.pem, now, RuleCertificateFormat, "found 2 CERTIFICATE PEM blocks"},
		"trailing text":   {append(bytes.Clone(good), 'x'), ca.pem, now, RuleCertificateFormat, "data outside"},
		"garbage cert":    {pemOf(pemCertificate, []byte{0x30, 0}), ca.pem, now, RuleCertificateFormat, "cannot parse certificate"},
		"blank CA":        {good, []byte("\n"), now, RuleCertificateFormat, "no CERTIFICATE PEM block"},
		"garbage CA":      {good, pemOf(pemCertificate, []byte("x")), now, RuleCertificateFormat, "cannot parse CA certificate 1"},
		"text in bundle":  {good, append(append(bytes.Clone(ca.pem), "# comment\n"...), ca.pem...), now, RuleCertificateFormat, "data outside"},
		"key in CA field": {good, pemOf(pemPrivateKey, []byte("x")), now, RuleCertificateFormat, `"PRIVATE KEY", want "CERTIFICATE"`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := VerifyClientCertificate(tc.cert, tc.ca, key.Public(), tc.now)
			requireRule(t, err, tc.rule, tc.want)
		})
	}
}

func TestCheckClientCertificate(t *testing.T) {
	ca, otherCA := newTestCA(t, "client-ca"), newTestCA(t, "serving-ca")
	key := newEd25519(t)
	now := time.Now()
	nb, na := now.Add(-time.Minute), now.Add(time.Hour)
	good := ca.issue(t, key.Public(), consumerID, nb, na, x509.ExtKeyUsageClientAuth)

	t.Run("issued by a CA it names nowhere", func(t *testing.T) {
		// Liqo's Identity: ca is the serving CA, the client certificate comes from the client CA.
		_, err := VerifyClientCertificate(good, otherCA.pem, key.Public(), now)
		requireRule(t, err, RuleCertificateChain, "does not chain")
		cert, err := CheckClientCertificate(good, key.Public(), now)
		requireNoError(t, err)
		if cert.Subject.CommonName != consumerID {
			t.Fatalf("CN = %q", cert.Subject.CommonName)
		}
	})
	t.Run("key usage without digital signature", func(t *testing.T) {
		template := &x509.Certificate{
			SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: consumerID, Organization: []string{CSROrganization}},
			NotBefore: nb, NotAfter: na, KeyUsage: x509.KeyUsageKeyEncipherment, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}
		der, err := x509.CreateCertificate(rand.Reader, template, ca.cert, key.Public(), ca.key)
		requireNoError(t, err)
		_, err = CheckClientCertificate(pemOf(pemCertificate, der), key.Public(), now)
		requireRule(t, err, RuleCertificateUsage, "does not allow digital signature")
	})
	for name, tc := range map[string]struct {
		cert []byte
		now  time.Time
		rule Rule
		want string
	}{
		"other key":   {ca.issue(t, newEd25519(t).Public(), consumerID, nb, na, x509.ExtKeyUsageClientAuth), now, RuleCertificateKey, "is not the cluster's"},
		"expired":     {good, na.Add(time.Second), RuleCertificateValidity, "not at"},
		"server auth": {ca.issue(t, key.Public(), consumerID, nb, na, x509.ExtKeyUsageServerAuth), now, RuleCertificateUsage, "client-auth"},
		"garbage":     {pemOf(pemCertificate, []byte{0x30, 0}), now, RuleCertificateFormat, "cannot parse certificate"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := CheckClientCertificate(tc.cert, key.Public(), tc.now)
			requireRule(t, err, tc.rule, tc.want)
		})
	}
}

func TestRenewalTime(t *testing.T) {
	start := time.Date(2024, 7, 22, 6, 42, 41, 0, time.UTC)
	for name, tc := range map[string]struct {
		notAfter, want time.Time
	}{
		"3 hours":     {start.Add(3 * time.Hour), start.Add(2 * time.Hour)},
		"1 year":      {start.AddDate(1, 0, 0), start.Add(365 * 24 * time.Hour * 2 / 3)},
		"zero length": {start, start},
		"year 9999":   {time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC), start.Add(maxDuration - maxDuration/3)},
	} {
		t.Run(name, func(t *testing.T) {
			got := RenewalTime(&x509.Certificate{NotBefore: start, NotAfter: tc.notAfter})
			if !got.Equal(tc.want) {
				t.Fatalf("RenewalTime = %s, want %s", got, tc.want)
			}
		})
	}
}

const maxDuration = time.Duration(1<<63 - 1)
