package reconciler

import (
	"bytes"
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/reconciler/provider"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// The provider in Liqo mode: gitpeer moves the files and gates approval, and
// Liqo's tenant controller does the crypto. The nonce is created as `liqoctl
// create nonce` creates it and filled by Liqo's nonce creator; it is never
// changed while a Tenant exists (Liqo verifies the handshake against it on
// every reconcile), only deleted at revocation. A merged Tenant is verified
// with the same rules as in standalone mode (provider.CheckTenant),
// before it is applied; gitpeer then creates no CSR and no RoleBinding: Liqo
// issues, binds and renews. identity.yaml is what `liqoctl generate identity`
// makes of the Tenant's status, committed once per change of that status
// after its certificate is checked and its serial recorded. Those steps are
// planned (provider.PlanLiqoIssue, provider.PlanLiqoMaintain) from what
// observeLiqo reads, and applied by applyProvider.

// liqoProvider is the provider's Liqo operations: the Liqo nonce and
// Tenant, revocation (Liqo's unbinding, its replicated objects and caches),
// the slice certificates Liqo issues, recorded and checked (liqoslices.go),
// also before a Tenant failing closed is drained (failclosed.go), and the
// reads of Liqo mode (liqoobserve.go).
type liqoProvider struct{ *session }

func (s *session) liqoProvider() liqoProvider { return liqoProvider{s} }

// createLiqoNonce creates the consumer's nonce Secret as `liqoctl create
// nonce` does: labels only, for Liqo's nonce creator to fill data.nonce. It
// carries this PeeringRepository's labels too, so that revocation deletes it.
func (s liqoProvider) createLiqoNonce(ctx context.Context, consumer, ns string) error {
	return client.IgnoreAlreadyExists(s.r.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{
		Namespace: ns, Name: authv1beta1.NonceSecretName,
		Labels: map[string]string{
			authv1beta1.NonceSecretLabel: authv1beta1.TrueValue, authv1beta1.RemoteClusterIDLabel: consumer,
			vocabulary.ManagedByLabel: vocabulary.ManagedBy, vocabulary.OwnerLabel: string(s.obj.UID),
		},
	}}))
}

// revokeConsumer takes back everything issued or bound for consumer, in
// Liqo's order: every certificate is recorded (the one in the status of its
// Tenant, as Liqo may have renewed it since the last round, and Liqo's
// ResourceSlice certificates: those recorded by slice as Liqo issued them,
// whether the slice still exists or not, and those in the status of the
// slices and in Liqo's caches) and marked revoked; the consumer is drained as
// Liqo's Drained drains it (its ResourceSlices and NamespaceMaps go, and with
// them Liqo's bindings of Group <consumer> in offloaded namespaces); then
// what this PeeringRepository created for it goes (deleteOwned: the Tenant,
// whose deletion makes Liqo unbind it), then Liqo's certificate caches, or a
// new peering would get a revoked certificate back from them: the control
// plane's, and each recorded slice's once the slice is gone
// (deleteGoneSliceCaches: Liqo writes it again while the slice exists; the
// revocation is tried again until every one is gone), and last, once Liqo
// unbound it, the Renews Liqo's CRD replicator created for it and what the
// consumer created while it was being revoked (finishLiqoRevocation). Without Liqo there is nothing to drain and no
// cache to delete.
func (s liqoProvider) revokeConsumer(ctx context.Context, consumer string) error {
	ns := authv1beta1.TenantNamespaceName(authv1beta1.ClusterID(consumer))
	drained, err := s.liqoReplicated(ctx, consumer, ns, provider.LiqoDrainedKinds)
	if err != nil {
		return err
	}
	if err := s.recordTenantCertificate(ctx, consumer); err != nil {
		return err
	}
	if err := s.recordWatchedSlices(ctx, consumer); err != nil {
		return err
	}
	if err := s.recordLiqoCertificates(ctx, consumer, ns, drained, liqoCaches(drained)); err != nil {
		return err
	}
	if err := s.recordRevoked(ctx, consumer); err != nil {
		return err
	}
	if err := s.deleteReplicated(ctx, drained); err != nil {
		return err
	}
	if err := s.owning().deleteOwned(ctx, consumer, s.obj.Spec.Provider.DeleteNamespaceOnRevoke); err != nil {
		return err
	}
	if err := s.deleteLiqoCaches(ctx, ns, provider.LiqoCertificateCache); err != nil {
		return err
	}
	waiting, err := s.deleteGoneSliceCaches(ctx, consumer, ns, sliceNames(drained))
	if err != nil {
		return err
	}
	if len(waiting) > 0 {
		return fmt.Errorf("ResourceSlices %s/%v of %s deleted: their certificate caches go once they are gone (Liqo's ResourceSlice controller writes a cache again while its slice exists)", ns, waiting, consumer)
	}
	return s.finishLiqoRevocation(ctx, consumer, ns, s.liqoMode() || len(drained) > 0)
}

// finishLiqoRevocation ends a revocation once Liqo unbound consumer (its
// Tenant is gone, its bindings follow). Until then the consumer, through its
// CRD replicator or any certificate Liqo gave it, may still create
// ResourceSlices, NamespaceMaps and Renews in ns, even after the drain, so
// the revocation is tried again: in Liqo mode always (awaitUnbind), otherwise
// only when Liqo's objects were found. Once it is unbound nothing new can
// come: Renews left are deleted (bound, the replicator would create them
// again at once), and a ResourceSlice or NamespaceMap created meanwhile fails
// the step, so that the next pass records its certificates and drains it.
func (s liqoProvider) finishLiqoRevocation(ctx context.Context, consumer, ns string, awaitUnbind bool) error {
	renews, err := s.liqoReplicated(ctx, consumer, ns, []schema.GroupVersionKind{provider.LiqoRenewKind})
	if err != nil || (!awaitUnbind && len(renews) == 0) {
		return err
	}
	var bindings rbacv1.RoleBindingList
	if err := s.r.List(ctx, &bindings, client.InNamespace(ns)); err != nil {
		return err
	}
	for _, rb := range bindings.Items {
		for _, sub := range rb.Subjects {
			if (sub.Kind == rbacv1.UserKind || sub.Kind == rbacv1.GroupKind) && sub.Name == consumer {
				return fmt.Errorf("waiting for Liqo to unbind %s (RoleBinding %s/%s): until then it may create again what its revocation deleted", consumer, ns, rb.Name)
			}
		}
	}
	late, err := s.liqoReplicated(ctx, consumer, ns, provider.LiqoDrainedKinds)
	if err != nil {
		return err
	}
	if len(late) > 0 {
		return fmt.Errorf("%s created %d ResourceSlice(s) or NamespaceMap(s) in %s while it was being revoked: revoking them too", consumer, len(late), ns)
	}
	return s.deleteReplicated(ctx, renews)
}

// deleteReplicated deletes objs, each only if it is still the object listed.
func (s liqoProvider) deleteReplicated(ctx context.Context, objs []unstructured.Unstructured) error {
	for i := range objs {
		uid := objs[i].GetUID()
		if err := s.r.Delete(ctx, &objs[i], client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting %s %s/%s: %w", objs[i].GetKind(), objs[i].GetNamespace(), objs[i].GetName(), err)
		}
	}
	return nil
}

// liqoReplicated lists, in the tenant namespace ns, the objects of kinds that
// Liqo's CRD replicator created there for consumer (provider.LiqoDrainSelector;
// provider.LiqoDrainedKinds are what Liqo's Drained deletes). It reads from
// the API server: no informer watches these kinds. A kind whose CRD is not
// installed (no Liqo) has nothing to list.
func (s liqoProvider) liqoReplicated(ctx context.Context, consumer, ns string, kinds []schema.GroupVersionKind) ([]unstructured.Unstructured, error) {
	var out []unstructured.Unstructured
	for _, gvk := range kinds {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		err := s.r.apiReader().List(ctx, list, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: provider.LiqoDrainSelector(consumer)})
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("listing the %ss of %s: %w", gvk.Kind, consumer, err)
		}
		out = append(out, list.Items...)
	}
	return out, nil
}

// deleteLiqoCaches deletes Liqo's certificate caches names in the tenant namespace ns.
func (s liqoProvider) deleteLiqoCaches(ctx context.Context, ns string, names ...string) error {
	for _, name := range names {
		cache := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		if err := s.r.Delete(ctx, cache); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}

// dropStaleLiqoCache prepares an approved change of the CSR of an applied
// Tenant (a rekey, or a new CSR for the same key): the certificate in its
// status and those in Liqo's caches are recorded, and every cache of Liqo's,
// the control plane's and the ResourceSlices' (those existing, and those
// recorded whose slice is gone, as Liqo's Drained deleted them while the
// peering failed closed: deleteGoneSliceCaches), is deleted before the new
// spec is applied. Liqo refuses a CSR that differs from the cached one and leaves
// the Tenant, or a ResourceSlice the consumer's Liqo signs anew with the new
// key, stuck (liqotech/liqo v1.2.0:
// pkg/identityManager/certificateIdentityProvider.go, GetRemoteCertificate).
func (s liqoProvider) dropStaleLiqoCache(ctx context.Context, pe *protocol.Documents, ns string) error {
	applied := &authv1beta1.Tenant{}
	if err := s.r.Get(ctx, client.ObjectKey{Namespace: ns, Name: pe.Consumer}, applied); err != nil {
		return client.IgnoreNotFound(err)
	}
	if !s.owning().owns(applied) || bytes.Equal(applied.Spec.CSR, pe.Tenant.Spec.CSR) {
		return nil
	}
	if err := s.recordTenantCertificate(ctx, pe.Consumer); err != nil {
		return err
	}
	drained, err := s.liqoReplicated(ctx, pe.Consumer, ns, provider.LiqoDrainedKinds)
	if err != nil {
		return err
	}
	caches := liqoCaches(drained)
	if err := s.recordLiqoCertificates(ctx, pe.Consumer, ns, nil, caches); err != nil {
		return err
	}
	if err := s.deleteLiqoCaches(ctx, ns, caches...); err != nil {
		return err
	}
	_, err = s.deleteGoneSliceCaches(ctx, pe.Consumer, ns, sliceNames(drained))
	return err
}

// liqoCaches names Liqo's certificate caches of a consumer: the control
// plane's and those of its ResourceSlices among drained (liqoReplicated). The
// agent may not list Secrets (they would include their data); it finds the
// caches by name.
func liqoCaches(drained []unstructured.Unstructured) []string {
	return provider.LiqoCertificateCaches(sliceNames(drained))
}

// recordTenantCertificate records the certificate in the status of the
// consumer's Tenant, if this PeeringRepository applied one and Liqo issued it
// to the consumer (recordLiqoIssued).
func (s liqoProvider) recordTenantCertificate(ctx context.Context, consumer string) error {
	tenant := &authv1beta1.Tenant{}
	key := client.ObjectKey{Namespace: authv1beta1.TenantNamespaceName(authv1beta1.ClusterID(consumer)), Name: consumer}
	if err := s.r.Get(ctx, key, tenant); err != nil {
		return client.IgnoreNotFound(err)
	}
	if !s.owning().owns(tenant) || tenant.Status.AuthParams == nil {
		return nil
	}
	return s.recordLiqoIssued(ctx, consumer, []liqoFound{{pem: tenant.Status.AuthParams.SignedCRT}})
}

// liqoMode reports whether the session runs in Liqo mode (spec.liqo, liqo.Detect).
func (s *session) liqoMode() bool { return s.liqo.Active }

// strayLiqoTenant reports, before gitpeer creates the Tenant of consumer in
// ns, a Tenant of someone else's that Liqo's Tenant webhook would refuse it
// for (provider.StrayTenants): a condition and an event naming it, instead
// of a creation refused every round.
func (s liqoProvider) strayLiqoTenant(ctx context.Context, consumer, ns string) *outcome {
	var tenants authv1beta1.TenantList
	if err := s.r.List(ctx, &tenants); err != nil {
		return &outcome{err: err}
	}
	err := provider.StrayTenants(consumer, ns, tenants.Items)
	if err == nil {
		return nil
	}
	s.r.eventAbout(s.obj, corev1.EventTypeWarning, vocabulary.ReasonStrayTenant, consumer, "%v", err)
	return &outcome{phase: gitpeerv1alpha1.PhaseFailed, reason: vocabulary.ReasonStrayTenant, message: err.Error()}
}
