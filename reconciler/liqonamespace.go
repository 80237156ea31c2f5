package reconciler

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	"github.com/gitpeer/gitpeer/reconciler/plan/provider"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// adoptLiqoNamespace takes over ns, the tenant namespace Liqo created for
// peer, as a says (ownership.LiqoClaim allowed it): Liqo's nonce, never
// trusted, is deleted (the agent makes its own, which Liqo fills), and the
// namespace gains the owner label and the mode record. It does not gain the
// managed-by label: a revocation never deletes a namespace Liqo made, which
// may hold Liqo's networking.
func (s owning) adoptLiqoNamespace(ctx context.Context, peer string, ns *corev1.Namespace, a provider.AdoptLiqoNamespace) error {
	if a.NonceUID != "" {
		nonce := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: authv1beta1.NonceSecretName}}
		if err := s.r.Delete(ctx, nonce, client.Preconditions{UID: &a.NonceUID}); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	patch := client.MergeFrom(ns.DeepCopy())
	metav1.SetMetaDataLabel(&ns.ObjectMeta, vocabulary.OwnerLabel, string(s.obj.UID))
	metav1.SetMetaDataAnnotation(&ns.ObjectMeta, vocabulary.ModeAnnotation, a.Mode)
	if err := s.r.Patch(ctx, ns, patch); err != nil {
		return err
	}
	s.r.eventAbout(s.obj, corev1.EventTypeNormal, vocabulary.ReasonAdopted, peer,
		"adopted namespace %s, which Liqo created for %s and which holds nothing gitpeer would have to trust; Liqo's nonce, if any, was replaced", ns.Name, peer)
	return nil
}

// liqoNamespaceContent lists what the tenant namespace ns of peer, created
// by Liqo, holds that a peering would have to trust (ownership.LiqoClaim,
// Found), and returns Liqo's own nonce Secret, to be replaced, if it holds
// one. Secrets are read by name: the agent may not list them.
func (s owning) liqoNamespaceContent(ctx context.Context, peer, ns string) (found []string, nonce *corev1.Secret, err error) {
	in := client.InNamespace(ns)
	// From the API server: the agent's cache indexes no Tenant or Identity by namespace (agent/cache.go).
	var tenants authv1beta1.TenantList
	if err := s.r.apiReader().List(ctx, &tenants, in); err != nil {
		return nil, nil, err
	}
	for _, t := range tenants.Items {
		found = append(found, "Tenant "+t.Name)
	}
	var identities authv1beta1.IdentityList
	if err := s.r.apiReader().List(ctx, &identities, in); err != nil {
		return nil, nil, err
	}
	for _, id := range identities.Items {
		found = append(found, "Identity "+id.Name)
	}
	var bindings rbacv1.RoleBindingList
	if err := s.r.List(ctx, &bindings, in); err != nil {
		return nil, nil, err
	}
	for _, rb := range bindings.Items {
		found = append(found, "RoleBinding "+rb.Name)
	}
	for _, gvk := range provider.LiqoDrainedKinds {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		err := s.r.apiReader().List(ctx, list, in)
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		for _, obj := range list.Items {
			found = append(found, gvk.Kind+" "+obj.GetName())
		}
	}
	for _, name := range []string{authv1beta1.SignedNonceSecretName, provider.LiqoCertificateCache, authv1beta1.NonceSecretName} {
		secret := &corev1.Secret{}
		err := s.r.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, secret)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		if name == authv1beta1.NonceSecretName && liqoNonce(secret, peer) {
			nonce = secret
			continue
		}
		found = append(found, "Secret "+name)
	}
	return found, nonce, nil
}

// liqoNonce reports whether secret is a nonce as `liqoctl create nonce`
// makes it for peer: Liqo's nonce labels and none of gitpeer's.
func liqoNonce(secret *corev1.Secret, peer string) bool {
	l := secret.Labels
	_, owned := l[vocabulary.OwnerLabel]
	return !owned && l[vocabulary.ManagedByLabel] == "" && l[authv1beta1.NonceSecretLabel] == authv1beta1.TrueValue && l[authv1beta1.RemoteClusterIDLabel] == peer
}
