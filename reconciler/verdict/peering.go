package verdict

import (
	gocrypto "crypto"
	"errors"
	"fmt"
	"path"
	"slices"
	"time"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/reconciler/check"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// directory is one <providerID>/<consumerID> folder: the documents that
// decoded (ok) and are now checked against each other.
type directory struct {
	pe protocol.Documents
	ok map[vocabulary.FileKind]bool
}

// newDirectory returns the directory of pe with the documents that decoded.
func newDirectory(pe *protocol.Documents) *directory {
	d := &directory{pe: *pe, ok: map[vocabulary.FileKind]bool{}}
	for _, k := range vocabulary.FileKinds {
		d.ok[k] = pe.Invalid[k] == nil && documentOf(pe, k)
	}
	return d
}

// documentOf reports whether pe holds a decoded document of kind k.
func documentOf(pe *protocol.Documents, k vocabulary.FileKind) bool {
	switch k {
	case vocabulary.RequestFile:
		return pe.Request != nil
	case vocabulary.NonceFile:
		return pe.Nonce != nil
	case vocabulary.TenantFile:
		return pe.Tenant != nil
	case vocabulary.IdentityFile:
		return pe.Identity != nil
	}
	return false
}

// check returns a result for every document of the directory that decoded.
// A Tenant's and an Identity's result say which rules only the provider or
// the consumer can check.
func (d *directory) check(now time.Time) []Result {
	out := []Result{Terms(&d.pe)}
	for _, k := range vocabulary.FileKinds {
		if !d.ok[k] {
			continue
		}
		var reason string
		var err error
		switch k {
		case vocabulary.RequestFile:
			reason = fmt.Sprintf("peering request of %s with %s", d.pe.Consumer, d.pe.Provider)
		case vocabulary.NonceFile:
			reason = fmt.Sprintf("nonce for %s", d.pe.Consumer)
		case vocabulary.TenantFile:
			reason, err = d.checkTenant(now)
			reason += "; " + ProviderChecks
		case vocabulary.IdentityFile:
			reason, err = d.checkIdentity(now)
			reason += "; " + ConsumerChecks
		}
		r := Result{Path: protocol.Path{Provider: d.pe.Provider, Consumer: d.pe.Consumer, Kind: k}.String(), Valid: err == nil, Reason: reason}
		if err != nil {
			r.Reason = err.Error()
		}
		out = append(out, r)
	}
	return append(out, d.verdict(out))
}

// Terms checks that the provider of pe published valid terms: a pull request
// quotes them as what a merge grants, so without them a reviewer cannot tell.
// Missing terms fail only a directory with a tenant.yaml; invalid ones always.
// pe may hold only the provider and its terms, for a provider with no
// peering directory yet.
func Terms(pe *protocol.Documents) Result {
	r := Result{Path: protocol.TermsPath(pe.Provider), Valid: pe.Terms != nil}
	switch t := pe.Terms; {
	case t == nil && (pe.TermsErr == nil || errors.Is(pe.TermsErr, protocol.ErrNoTerms)):
		r.Reason = fmt.Sprintf("terms missing: %s has not published %s; what a merge grants is unknown", pe.Provider, r.Path)
		if pe.Tenant == nil && pe.Invalid[vocabulary.TenantFile] == nil {
			r.Valid, r.Reason = true, r.Reason+" (no tenant.yaml yet: nothing is granted)"
		}
	case pe.TermsErr != nil:
		r.Reason = "terms invalid: " + pe.TermsErr.Error()
	default:
		r.Reason = fmt.Sprintf("terms of %s: ClusterRole %s bound in %s, certificates for %s, renewed %s",
			pe.Provider, t.Spec.ClusterRoleName, t.Spec.TenantNamespacePrefix+"<consumerID>", t.Spec.CertificateTTL.Duration, t.Spec.Renewal)
	}
	return r
}

// verdict says what a provider does with the directory, as far as the branch
// decides it: it reads protocol.Documents as the agent's provider does. results
// are the directory's document results. A verdict is never invalid itself:
// the files it follows from carry the validity.
func (d *directory) verdict(results []Result) Result {
	pe := &d.pe
	r := Result{Path: protocol.Path{Provider: pe.Provider, Consumer: pe.Consumer}.Dir() + "/", Directory: true, Valid: true}
	switch {
	case pe.BuildFailed != nil:
		r.Reason = "directory fails closed: its kustomization yields no valid Tenant; the provider drains an issued Tenant (its RoleBinding goes) and issues and renews nothing until it is fixed"
	case pe.Tenant == nil && pe.Invalid[vocabulary.TenantFile] != nil:
		r.Reason = "directory skipped: tenant.yaml is invalid; nothing is issued or revoked until it is fixed or deleted"
	case pe.Tenant == nil && (pe.Identity != nil || pe.Invalid[vocabulary.IdentityFile] != nil):
		r.Reason = "directory revokes: tenant.yaml is gone; the provider deletes the Tenant and its RoleBinding and removes identity.yaml"
	case pe.Tenant == nil:
		r.Reason = "no tenant.yaml: nothing is issued (waiting for a merged tenant.yaml)"
	case slices.ContainsFunc(results, func(t Result) bool { return t.Valid && path.Base(t.Path) == string(vocabulary.TenantFile) }):
		r.Reason = fmt.Sprintf("directory issues: tenant.yaml is valid; the Tenant is %s", condition(pe.Tenant.Spec.TenantCondition))
	default:
		r.Reason = "directory refused: tenant.yaml does not verify; nothing is issued"
	}
	return r
}

// condition names a Tenant's condition, Active when unset.
func condition(c authv1beta1.TenantCondition) authv1beta1.TenantCondition {
	if c == "" {
		return authv1beta1.TenantConditionActive
	}
	return c
}

// checkTenant applies the rules every checker shares (check.Tenant)
// to tenant.yaml, offline: its signature must be over the nonce.yaml beside
// it or, once the provider rotated that nonce after issuance, be vouched for
// by the identity.yaml beside it. A Tenant over an old nonce without such an
// Identity is a replay.
func (d *directory) checkTenant(now time.Time) (string, error) {
	v := check.Tenant(&d.pe, check.Facts{Now: now})
	if v.Err != nil {
		return "", v.Err
	}
	return fmt.Sprintf("%s; CSR for CN=%s, O=%s", v.Signed, d.pe.Consumer, authv1beta1.CertificateOrganization), nil
}

// checkIdentity applies the rules every checker shares (check.Identity)
// to identity.yaml: its certificate allows client auth, is valid now, names
// the consumer in exactly O=liqo.io, is for the key of tenant.yaml (or of
// request.yaml when tenant.yaml is gone, e.g. in a revoking pull request),
// and its API server is the one the provider's terms publish.
func (d *directory) checkIdentity(now time.Time) (string, error) {
	v := check.Identity(&d.pe, check.Facts{Now: now})
	if v.Err != nil {
		return "", v.Err
	}
	return fmt.Sprintf("certificate %s for CN=%s %s, is for %s, expires %s",
		v.Cert.SerialNumber.Text(16), d.pe.Consumer, issuer(d.pe.Identity, v.Key, now), v.For, v.Cert.NotAfter.UTC().Format(time.RFC3339)), nil
}

// issuer says how the certificate of id relates to the CA id names. Liqo
// promises no CA that signed it: the consumer proves it with a SelfSubjectReview.
func issuer(id *authv1beta1.Identity, key gocrypto.PublicKey, now time.Time) string {
	ap := id.Spec.AuthParams
	switch _, err := crypto.VerifyClientCertificate(ap.SignedCRT, ap.CA, key, now); {
	case len(ap.CA) == 0:
		return "has no CA (the API server must be trusted by the system roots; the consumer proves the certificate with a SelfSubjectReview)"
	case err != nil:
		return "does not chain to its CA (Liqo-legal: that is the API server's serving CA; the consumer proves the certificate with a SelfSubjectReview)"
	}
	return "chains to its CA"
}
