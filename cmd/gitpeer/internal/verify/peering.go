package verify

import (
	gocrypto "crypto"
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
	"time"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/reconciler/layout"
)

// directory is one <providerID>/<consumerID> folder: the documents that
// decoded (ok) and are now checked against each other.
type directory struct {
	pe layout.Peering
	ok map[layout.Kind]bool
}

// newDirectory returns the directory of pe with the documents that decoded.
func newDirectory(pe *layout.Peering) *directory {
	d := &directory{pe: *pe, ok: map[layout.Kind]bool{}}
	for _, k := range layout.Kinds {
		d.ok[k] = pe.Invalid[k] == nil && documentOf(pe, k)
	}
	return d
}

// documentOf reports whether pe holds a decoded document of kind k.
func documentOf(pe *layout.Peering, k layout.Kind) bool {
	switch k {
	case layout.Request:
		return pe.Request != nil
	case layout.Nonce:
		return pe.Nonce != nil
	case layout.Tenant:
		return pe.Tenant != nil
	case layout.Identity:
		return pe.Identity != nil
	}
	return false
}

// check returns a result for every document of the directory that decoded.
// A Tenant's and an Identity's result say which rules only the provider or
// the consumer can check.
func (d *directory) check(now time.Time) []Result {
	var out []Result
	for _, k := range layout.Kinds {
		if !d.ok[k] {
			continue
		}
		var reason string
		var err error
		switch k {
		case layout.Request:
			reason = fmt.Sprintf("peering request of %s with %s", d.pe.Consumer, d.pe.Provider)
		case layout.Nonce:
			reason = fmt.Sprintf("nonce for %s", d.pe.Consumer)
		case layout.Tenant:
			reason, err = d.checkTenant(now)
			reason += "; " + ProviderChecks
		case layout.Identity:
			reason, err = d.checkIdentity(now)
			reason += "; " + ConsumerChecks
		}
		r := Result{Path: layout.Path{Provider: d.pe.Provider, Consumer: d.pe.Consumer, Kind: k}.String(), Valid: err == nil, Reason: reason}
		if err != nil {
			r.Reason = err.Error()
		}
		out = append(out, r)
	}
	return out
}

// checkTenant applies the provider's rules to tenant.yaml. The signature must
// be over the nonce.yaml beside it. After issuance the provider rotates
// nonce.yaml (a nonce is used once), so a Tenant whose signature does not
// verify against the current nonce is still valid when identity.yaml beside
// it is valid and certifies the Tenant's own key: that Identity is the
// provider's record that it verified the signature against the nonce of its
// day. A Tenant over an old nonce without such an Identity is a replay.
func (d *directory) checkTenant(now time.Time) (string, error) {
	t, consumer := d.pe.Tenant, d.pe.Consumer
	key, err := crypto.ParsePublicKey(t.Spec.PublicKey)
	if err != nil {
		return "", fmt.Errorf("tenant public key: %w", err)
	}
	if d.ok[layout.Request] {
		if err := sameKey(key, d.pe.Request.Spec.PublicKey); err != nil {
			return "", fmt.Errorf("tenant public key is not the key of request.yaml: %w", err)
		}
	}
	if _, err := crypto.ValidateCSR(t.Spec.CSR, consumer, key); err != nil {
		return "", fmt.Errorf("tenant CSR: %w", err)
	}
	sigErr := errors.New("tenant signature: no nonce.yaml beside it to verify against")
	if d.ok[layout.Nonce] {
		if _, sigErr = layout.VerifyTenant(t, d.pe.Nonce.Spec.Nonce, consumer); sigErr == nil {
			return fmt.Sprintf("signed over nonce.yaml by its key; CSR for CN=%s, O=%s", consumer, authv1beta1.CertificateOrganization), nil
		}
	}
	if d.ok[layout.Identity] {
		cert, err := d.verifyIdentity(key, now)
		if err == nil {
			return fmt.Sprintf("issued: identity.yaml certifies its key (serial %s); the nonce it signed has been rotated", cert.SerialNumber.Text(16)), nil
		}
		return "", fmt.Errorf("%w, and identity.yaml does not vouch for it (%v)", sigErr, err)
	}
	return "", sigErr
}

// checkIdentity verifies identity.yaml's certificate: it chains to the CA in
// the Identity, allows client auth, is valid now, names the consumer in
// exactly O=liqo.io, and is for the key of tenant.yaml (or of request.yaml
// when tenant.yaml is gone, e.g. in a revoking pull request).
func (d *directory) checkIdentity(now time.Time) (string, error) {
	id := d.pe.Identity
	cert, err := crypto.ParseCertificatePEM(id.Spec.AuthParams.SignedCRT)
	if err != nil {
		return "", fmt.Errorf("identity certificate: %w", err)
	}
	var key gocrypto.PublicKey = cert.PublicKey
	source := "its own key (no tenant.yaml or request.yaml to compare with)"
	switch {
	case d.pe.Tenant != nil:
		if key, err = crypto.ParsePublicKey(d.pe.Tenant.Spec.PublicKey); err != nil {
			return "", fmt.Errorf("identity: tenant.yaml beside it has no valid key: %w", err)
		}
		source = "the key of tenant.yaml"
	case d.ok[layout.Request]:
		if key, err = crypto.ParsePublicKey(d.pe.Request.Spec.PublicKey); err != nil {
			return "", err
		}
		source = "the key of request.yaml"
	}
	if cert, err = d.verifyIdentity(key, now); err != nil {
		return "", fmt.Errorf("%w (checked against %s)", err, source)
	}
	return fmt.Sprintf("certificate %s for CN=%s chains to its CA, is for %s, expires %s",
		cert.SerialNumber.Text(16), d.pe.Consumer, source, cert.NotAfter.UTC().Format(time.RFC3339)), nil
}

// verifyIdentity is layout.VerifyIdentity plus the organization the provider
// must have kept from the CSR: exactly liqo.io.
func (d *directory) verifyIdentity(key gocrypto.PublicKey, now time.Time) (*x509.Certificate, error) {
	cert, err := layout.VerifyIdentity(d.pe.Identity, key, d.pe.Consumer, now)
	if err != nil {
		return nil, err
	}
	if !slices.Equal(cert.Subject.Organization, []string{authv1beta1.CertificateOrganization}) {
		return nil, fmt.Errorf("identity certificate organization %v is not [%s]", cert.Subject.Organization, authv1beta1.CertificateOrganization)
	}
	return cert, nil
}

// sameKey returns an error unless other (a key as in spec.publicKey) is key.
func sameKey(key gocrypto.PublicKey, other []byte) error {
	k, err := crypto.ParsePublicKey(other)
	if err != nil {
		return err
	}
	if eq, ok := key.(interface{ Equal(gocrypto.PublicKey) bool }); !ok || !eq.Equal(k) {
		return errors.New("another key signed this Tenant than the one that requested the peering")
	}
	return nil
}
