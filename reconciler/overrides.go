package reconciler

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	"github.com/gitpeer/gitpeer/reconciler/plan/provider"
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

// recordOverrides sets the overrides a Tenant is applied under on it
// (provider.AppliedOverrides).
func recordOverrides(tenant *authv1beta1.Tenant, used []provider.Override, applied bool) {
	if v := provider.AppliedOverrides(used, applied, tenant.Annotations[vocabulary.OverridesAnnotation]); v != "" {
		metav1.SetMetaDataAnnotation(&tenant.ObjectMeta, vocabulary.OverridesAnnotation, v)
	} else {
		delete(tenant.Annotations, vocabulary.OverridesAnnotation)
	}
}
