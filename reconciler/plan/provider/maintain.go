package provider

import (
	"crypto/x509"
	"fmt"
	"slices"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
)

// NonceUsed reports whether the consumer's current nonce was used: the
// applied Tenant's signature verifies against it with the Tenant's key. A
// nonce is used once, so the provider then rotates it; a nonce the Tenant did
// not sign (already rotated, or a Tenant with an unreadable key) stays.
func NonceUsed(tenant *authv1beta1.Tenant, nonce string) bool {
	key, err := crypto.ParsePublicKey(tenant.Spec.PublicKey)
	return err == nil && crypto.VerifyNonceSignature(key, nonce, tenant.Spec.Signature) == nil
}

// Standing is the phase and message of an issued peering holding cert, by
// its Tenant's condition: cordoned, drained (its RBAC removed), or issued.
func Standing(condition authv1beta1.TenantCondition, cert *x509.Certificate) (gitpeerv1alpha1.PeeringPhase, string) {
	switch condition {
	case authv1beta1.TenantConditionCordoned:
		return gitpeerv1alpha1.PhaseCordoned, "tenant cordoned"
	case authv1beta1.TenantConditionDrained:
		return gitpeerv1alpha1.PhaseDrained, "tenant drained: RBAC removed"
	}
	return gitpeerv1alpha1.PhaseIssued, fmt.Sprintf("certificate %s valid until %s", cert.SerialNumber.Text(16), cert.NotAfter.UTC().Format(time.RFC3339))
}

// FirstIdentity reports whether cert is the first certificate committed for
// its key: identity.yaml on the branch (published, nil if none) certifies
// another key (a rekey) or there is none (a first issuance, a revival). A
// renewal's is not.
func FirstIdentity(published *authv1beta1.Identity, cert *x509.Certificate, consumer string) bool {
	if published == nil {
		return true
	}
	_, err := protocol.CheckIssued(published.Spec.AuthParams.SignedCRT, cert.PublicKey, consumer)
	return err != nil
}

// Bindings is what the provider does with the RoleBindings it owns in a
// consumer's tenant namespace.
type Bindings struct {
	// Delete names the owned RoleBindings to delete.
	Delete []string
	// Bind is the RoleBinding to create or update (name, role and subject;
	// the caller adds its labels), nil when the Tenant is drained.
	Bind *rbacv1.RoleBinding
}

// PlanBindings binds consumer (user = its cluster ID, the certificate's CN)
// to the ClusterRole role, and deletes every other RoleBinding of owned (the
// names of those the PeeringRepository created there): one to a previous
// role, or all of them when the Tenant is Drained. A cordoned Tenant keeps
// its binding.
func PlanBindings(owned []string, consumer, role string, condition authv1beta1.TenantCondition) Bindings {
	name := authv1beta1.RoleBindingName(role)
	drained := condition == authv1beta1.TenantConditionDrained
	var b Bindings
	for _, o := range owned {
		if drained || o != name {
			b.Delete = append(b.Delete, o)
		}
	}
	if !drained {
		b.Bind = &rbacv1.RoleBinding{
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: consumer}},
		}
		b.Bind.Name = name
	}
	return b
}

// Deletes reports whether name is one of the RoleBindings b deletes.
func (b Bindings) Deletes(name string) bool { return slices.Contains(b.Delete, name) }

// Closure is what the provider does for a directory whose tenant.yaml yields
// no Tenant it may act on: a kustomized directory that does not build
// (Decide: FailClosed), or a merged Tenant the trust rules refuse (Verify).
// The admin's intent cannot be known, so the Tenant in the cluster (the one
// replaced, or one applied and not issued yet) is drained; nothing is issued
// or renewed; nothing is revoked: the Tenant, its key pin and identity.yaml
// stay, as for any drained Tenant, and a valid tenant.yaml restores access.
type Closure struct {
	// Drain: set the Tenant's condition to Drained (it is not yet).
	Drain bool
	// Unbind: remove every RoleBinding of the consumer (PlanBindings, Drained).
	Unbind bool
	// Message is the peering's message (phase Failed).
	Message string
}

// FailClose returns the closure of a directory whose build failed with
// buildFailed, given the Tenant in the cluster (nil if none).
func FailClose(buildFailed error, tenant *authv1beta1.Tenant) Closure {
	return closing(fmt.Sprintf("%v; failing closed: nothing issued or renewed until the build is fixed", buildFailed), tenant)
}

// Refuse returns the closure of a directory whose tenant.yaml, at path, the
// trust rules refused (why), given the Tenant in the cluster (nil if none).
func Refuse(path, why string, tenant *authv1beta1.Tenant) Closure {
	return closing(fmt.Sprintf("%s rejected, nothing issued: %s; failing closed: nothing issued or renewed until a valid tenant.yaml is merged", path, why), tenant)
}

func closing(msg string, tenant *authv1beta1.Tenant) Closure {
	if tenant == nil {
		return Closure{Message: msg}
	}
	return Closure{
		Drain:   tenant.Spec.TenantCondition != authv1beta1.TenantConditionDrained,
		Unbind:  true,
		Message: msg + "; tenant drained: RBAC removed",
	}
}
