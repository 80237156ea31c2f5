// Package check is the one composition of the trust rules a peering
// directory's documents must pass before anything acts on them. The provider
// agent (before it applies a merged Tenant), the consumer agent (before it
// acts on identity.yaml), `gitpeer verify` and the pull-request description
// (through verdict) and `gitpeer records` (before it takes a key pin from
// history) all call Tenant and Identity with the directory's documents as
// read from one commit; they differ only in the Facts they know beyond them,
// and each Fact a caller lacks is checked from the branch instead, never
// skipped.
//
// It holds the composition only: the single-document rules are protocol's,
// the rules on a provider's cluster state (key pins, revoked serials,
// overrides) are the provider planner's, the consumer's anchors its planner's.
package check

import (
	gocrypto "crypto"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"time"

	"k8s.io/utils/ptr"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// Facts is what a caller knows beyond the directory's documents.
type Facts struct {
	// Nonce is, for the provider agent, its own current nonce for the
	// consumer (its Secret), "" when none was issued: the Tenant must be
	// signed over it. Nil offline: the Tenant must be signed over the
	// nonce.yaml beside it or, once that nonce rotated after issuance, be
	// certified by the identity.yaml beside it (the provider's record that it
	// verified the signature against the nonce of its day).
	Nonce *string
	// Key is, for the consumer agent, its own key: identity.yaml counts only
	// beside a tenant.yaml of that key, and must certify it. Nil: it must
	// certify the key of tenant.yaml (or of request.yaml once tenant.yaml is
	// gone, as in a revocation).
	Key gocrypto.PublicKey
	// AllowProxyURL is the provider's spec.provider.allowProxyURL; nil when
	// unknown (offline): a proxyURL must still be well formed.
	AllowProxyURL *bool
	// Now is when certificates must be valid.
	Now time.Time
}

// TenantVerdict is the verdict on a directory's tenant.yaml.
type TenantVerdict struct {
	// Key is the Tenant's public key when it passed.
	Key gocrypto.PublicKey
	// Signed says what vouches for the Tenant's signature when it passed.
	Signed string
	// Err is why it failed; nil when it passed.
	Err error
}

// Tenant checks pe's tenant.yaml (pe.Tenant must be set): what it asks
// for (protocol.CheckTenantSpec: key, authzPolicy, CSR), that its key is the
// key of request.yaml, that its signature is over the nonce (Facts.Nonce),
// that it asks for the namespace the provider's terms give the consumer, and
// that a proxyURL is well formed and, when Facts says so, allowed.
func Tenant(pe *protocol.Documents, f Facts) TenantVerdict {
	t := pe.Tenant
	key, err := protocol.CheckTenantSpec(t, pe.Consumer)
	if err == nil {
		err = pe.CheckRequestKey(key)
	}
	var signed string
	if err == nil {
		signed, err = signature(pe, key, f)
	}
	if err == nil && pe.Terms != nil {
		err = protocol.CheckTenantTerms(pe.Terms, t, pe.Consumer)
	}
	if err == nil {
		err = ProxyURL(t, f.AllowProxyURL)
	}
	if err != nil {
		return TenantVerdict{Err: err}
	}
	return TenantVerdict{Key: key, Signed: signed}
}

// signature checks that the Tenant of key signed the nonce Facts names
// (protocol.CheckTenant), and says what vouches for it.
func signature(pe *protocol.Documents, key gocrypto.PublicKey, f Facts) (string, error) {
	if f.Nonce != nil {
		if *f.Nonce == "" {
			return "", errors.New("no nonce was issued to this consumer (request.yaml missing or revoked)")
		}
		if _, err := protocol.CheckTenant(pe.Tenant, *f.Nonce, pe.Consumer); err != nil {
			return "", err
		}
		return "signed over the provider's current nonce", nil
	}
	sigErr := errors.New("tenant signature: no nonce.yaml beside it to verify against")
	if pe.Nonce != nil && pe.Invalid[vocabulary.NonceFile] == nil {
		if _, sigErr = protocol.CheckTenant(pe.Tenant, pe.Nonce.Spec.Nonce, pe.Consumer); sigErr == nil {
			return "signed over nonce.yaml by its key", nil
		}
	}
	if pe.Identity == nil || pe.Invalid[vocabulary.IdentityFile] != nil {
		return "", sigErr
	}
	cert, err := protocol.CheckIdentity(pe.Identity, key, pe.Consumer, f.Now)
	if err != nil {
		return "", fmt.Errorf("%w, and identity.yaml does not vouch for it (%v)", sigErr, err)
	}
	return fmt.Sprintf("issued: identity.yaml certifies its key (serial %s); the nonce it signed has been rotated", cert.SerialNumber.Text(16)), nil
}

// proxySchemes are the proxy URL schemes client-go dials.
var proxySchemes = []string{"http", "https", "socks5"}

// ProxyURL refuses a Tenant's spec.proxyURL that is not an absolute
// http, https or socks5 URL of a host, and any when allowed (the provider's
// spec.provider.allowProxyURL) is false; nil allowed checks the form only.
// The provider copies an accepted one into the Tenant's status and
// identity.yaml, as Liqo's tenant controller does.
func ProxyURL(t *authv1beta1.Tenant, allowed *bool) error {
	raw := ptr.Deref(t.Spec.ProxyURL, "")
	if raw == "" {
		return nil
	}
	if allowed != nil && !*allowed {
		return fmt.Errorf("tenant spec.proxyURL %q: this provider does not accept proxies named by consumers (spec.provider.allowProxyURL is false); remove it from tenant.yaml", raw)
	}
	u, err := url.Parse(raw)
	if err != nil || !slices.Contains(proxySchemes, u.Scheme) || u.Host == "" {
		return fmt.Errorf("tenant spec.proxyURL %q is not an absolute %v URL of a host", raw, proxySchemes)
	}
	return nil
}

// IdentityVerdict is the verdict on a directory's identity.yaml.
type IdentityVerdict struct {
	// Cert is its certificate when it passed.
	Cert *x509.Certificate
	// Key is the key it was checked against, and For names where that key
	// comes from.
	Key gocrypto.PublicKey
	For string
	// Err is why it failed; nil when it passed.
	Err error
}

// Identity checks pe's identity.yaml (pe.Identity must be set): its
// certificate is for the key Facts.Key names (protocol.CheckIdentity), and it
// points at the API server the provider's terms publish. Terms that cannot be
// read vouch for nothing; a provider without terms (plain Liqo, whose admin
// commits liqoctl's output) passes that rule: the consumer's anchor, not the
// terms, tells its Identity from one whoever could push wrote.
func Identity(pe *protocol.Documents, f Facts) IdentityVerdict {
	v := IdentityVerdict{}
	v.Key, v.For, v.Err = identityKey(pe, f)
	if v.Err != nil {
		return v
	}
	if v.Cert, v.Err = protocol.CheckIdentity(pe.Identity, v.Key, pe.Consumer, f.Now); v.Err != nil {
		v.Err = fmt.Errorf("%w (checked against %s)", v.Err, v.For)
		return v
	}
	switch {
	case pe.Terms != nil:
		v.Err = protocol.CheckIdentityTerms(pe.Terms, pe.Identity)
	case pe.TermsErr != nil && !errors.Is(pe.TermsErr, protocol.ErrNoTerms):
		v.Err = fmt.Errorf("the provider's terms cannot vouch for the Identity's API server: %w", pe.TermsErr)
	}
	if v.Err != nil {
		v.Cert = nil
	}
	return v
}

// identityKey returns the key identity.yaml must certify, and its source.
func identityKey(pe *protocol.Documents, f Facts) (gocrypto.PublicKey, string, error) {
	if f.Key != nil {
		return f.Key, "this cluster's own key", OwnTenant(pe, f.Key)
	}
	switch {
	case pe.Tenant != nil:
		key, err := crypto.ParsePublicKey(pe.Tenant.Spec.PublicKey)
		if err != nil {
			return nil, "", fmt.Errorf("identity: tenant.yaml beside it has no valid key: %w", err)
		}
		return key, "the key of tenant.yaml", nil
	case pe.Request != nil && pe.Invalid[vocabulary.RequestFile] == nil:
		key, err := crypto.ParsePublicKey(pe.Request.Spec.PublicKey)
		return key, "the key of request.yaml", err
	}
	cert, err := crypto.ParseCertificatePEM(pe.Identity.Spec.AuthParams.SignedCRT)
	if err != nil {
		return nil, "", fmt.Errorf("identity certificate: %w", err)
	}
	return cert.PublicKey, "its own key (no tenant.yaml or request.yaml to compare with)", nil
}

// OwnTenant returns an error unless the directory of pe holds a tenant.yaml
// of the key mine: a consumer acts on an Identity only for a provider it
// asked.
func OwnTenant(pe *protocol.Documents, mine gocrypto.PublicKey) error {
	if pe.Tenant == nil {
		return fmt.Errorf("no valid tenant.yaml of this cluster is merged beside it: this cluster did not ask %s for an identity", pe.Provider)
	}
	key, err := crypto.ParsePublicKey(pe.Tenant.Spec.PublicKey)
	if err != nil {
		return fmt.Errorf("tenant.yaml beside it has no valid key: %w", err)
	}
	theirs, err := crypto.KeyPin(key)
	if err != nil {
		return err
	}
	own, err := crypto.KeyPin(mine)
	if err != nil {
		return err
	}
	if theirs != own {
		return fmt.Errorf("tenant.yaml beside it is for key %s, not this cluster's key %s: this cluster did not ask %s for an identity", theirs[:16], own[:16], pe.Provider)
	}
	return nil
}
