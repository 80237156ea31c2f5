package reconciler

import (
	"context"
	"crypto/x509"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/reconciler/provider"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// An admin's overrides of the provider's trust rules for one consumer
// (gitpeerv1alpha1.RevivalAnnotationPrefix, RekeyAnnotationPrefix) are used
// once: provider.CheckTenant says which ones a Tenant relies on, and once it
// is applied the agent removes them from the PeeringRepository, as it does
// the request-again and mode-switch annotations. Each use is reported (event
// OverrideConsumed, the peering's message), recorded on the Tenant
// (vocabulary.OverridesAnnotation) and named by the commit of the Tenant's
// first identity (vocabulary.TrailerOverride). An override that has no effect
// is left in place and reported (event OverrideUnused).

// recordOverrides sets the overrides a Tenant is applied under on it. A
// Tenant applied again (applied, provider.Applied) keeps those it was first
// applied under; another Tenant has none of them.
func recordOverrides(tenant *authv1beta1.Tenant, used []provider.Override, applied bool) {
	switch {
	case len(used) > 0:
		metav1.SetMetaDataAnnotation(&tenant.ObjectMeta, vocabulary.OverridesAnnotation, joinOverrides(used))
	case !applied:
		delete(tenant.Annotations, vocabulary.OverridesAnnotation)
	}
}

// consumeOverrides removes the overrides the Tenant of consumer, applied,
// used, and reports each; it returns the note for the peering's message.
func (s *session) consumeOverrides(ctx context.Context, consumer string, used []provider.Override) (string, error) {
	if len(used) == 0 {
		return "", nil
	}
	for _, o := range used {
		if err := s.removeAnnotation(ctx, o.Key); err != nil {
			return "", err
		}
		s.r.eventAbout(s.obj, corev1.EventTypeNormal, vocabulary.ReasonOverrideConsumed, consumer, "annotation %s let the Tenant of %s through and was removed: an override is used once", o, consumer)
	}
	return "override(s) used once and removed: " + joinOverrides(used), nil
}

// reportUnusedOverrides reports the overrides of consumer that have no
// effect (provider.TenantVerdict.Unused) and returns the note for the peering's message.
func (s *session) reportUnusedOverrides(consumer string, unused []string) string {
	for _, why := range unused {
		s.r.eventAbout(s.obj, corev1.EventTypeWarning, vocabulary.ReasonOverrideUnused, consumer, "%s: %s", consumer, why)
	}
	return strings.Join(unused, "; ")
}

// overrideTrailers names, on the commit of identity.yaml for cert, the
// overrides tenant was applied under, if it is the first identity of its key
// (provider.FirstIdentity): a renewal names none.
func overrideTrailers(pe *protocol.Documents, tenant *authv1beta1.Tenant, cert *x509.Certificate) []protocol.Trailer {
	used := tenant.Annotations[vocabulary.OverridesAnnotation]
	if used == "" || !provider.FirstIdentity(pe.Identity, cert, pe.Consumer) {
		return nil
	}
	return []protocol.Trailer{{Key: vocabulary.TrailerOverride, Value: used}}
}

func joinOverrides(used []provider.Override) string {
	names := make([]string, len(used))
	for i, o := range used {
		names[i] = o.String()
	}
	return strings.Join(names, ", ")
}
