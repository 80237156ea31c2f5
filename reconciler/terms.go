package reconciler

import (
	"context"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1/documents"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
)

// builtTerms is what a provider's terms were last built from, and them.
type builtTerms struct {
	generation  int64  // of the PeeringRepository
	roleVersion string // resourceVersion of the tenant ClusterRole; "" when there is none
	spec        documents.ProviderTermsSpec
}

// termsSpec returns the provider's terms: its spec's, and the rules of the
// tenant ClusterRole. The ClusterRole is read from the API server only when
// the terms may have changed since they were last built by this process:
// the PeeringRepository's generation or the ClusterRole's resourceVersion
// (in the agent's metadata-only cache of ClusterRoles, whose watch also
// reconciles the providers quoting a ClusterRole that changed: termsRoleUsers)
// differs.
func (s *session) termsSpec(ctx context.Context) (documents.ProviderTermsSpec, error) {
	name := s.obj.Spec.Provider.GetClusterRoleName()
	version, err := s.termsRoleVersion(ctx, name)
	if err != nil {
		return documents.ProviderTermsSpec{}, err
	}
	key := client.ObjectKeyFromObject(s.obj)
	if b, ok := s.r.terms.Load(key); ok && b.(builtTerms).generation == s.obj.Generation && b.(builtTerms).roleVersion == version {
		return b.(builtTerms).spec, nil
	}
	spec := documents.ProviderTermsSpec{
		ProviderClusterID: s.obj.Spec.ClusterID, TenantNamespacePrefix: authv1beta1.TenantNamespacePrefix,
		ClusterRoleName: name, CertificateTTL: metav1.Duration{Duration: s.obj.Spec.Provider.GetCertificateTTL()},
		Renewal: protocol.RenewalTerm, APIServer: s.providerStep().apiServer(),
	}
	role := &rbacv1.ClusterRole{}
	if err := s.r.APIReader.Get(ctx, client.ObjectKey{Name: name}, role); err == nil {
		spec.Rules = role.Rules
	} else if !apierrors.IsNotFound(err) {
		return spec, fmt.Errorf("reading ClusterRole %s for the terms: %w", name, err)
	}
	s.r.terms.Store(key, builtTerms{generation: s.obj.Generation, roleVersion: version, spec: spec})
	return spec, nil
}

// termsRoleVersion returns the resourceVersion of the ClusterRole name from
// the cache, "" when there is none.
func (s *session) termsRoleVersion(ctx context.Context, name string) (string, error) {
	role := &metav1.PartialObjectMetadata{}
	role.SetGroupVersionKind(rbacv1.SchemeGroupVersion.WithKind("ClusterRole"))
	if err := s.r.Get(ctx, client.ObjectKey{Name: name}, role); err != nil {
		if apierrors.IsNotFound(err) {
			return "", nil
		}
		return "", fmt.Errorf("ClusterRole %s for the terms: %w", name, err)
	}
	return role.ResourceVersion, nil
}

// termsRoleUsers maps a ClusterRole to the providers whose terms quote it: a
// change of its rules reconciles them, which publish new terms.
func (r *PeeringRepositoryReconciler) termsRoleUsers(ctx context.Context, role client.Object) []reconcile.Request {
	var all gitpeerv1alpha1.PeeringRepositoryList
	if err := r.List(ctx, &all); err != nil {
		log.FromContext(ctx).Error(err, "mapping a ClusterRole to the providers that publish it", "clusterRole", role.GetName())
		return nil
	}
	var out []reconcile.Request
	for i := range all.Items {
		if pr := &all.Items[i]; pr.IsProvider() && pr.Spec.Provider.GetClusterRoleName() == role.GetName() {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: pr.Namespace, Name: pr.Name}})
		}
	}
	return out
}
