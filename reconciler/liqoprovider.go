package reconciler

import (
	"bytes"
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/reconciler/plan/provider"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
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

// liqoReplicated lists, in the tenant namespace ns (in every namespace when
// ns is ""), the objects of kinds that Liqo's CRD replicator created for consumer (provider.LiqoDrainSelector;
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
	return s.recordLiqoIssued(ctx, consumer, []provider.LiqoFound{{PEM: tenant.Status.AuthParams.SignedCRT}})
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
