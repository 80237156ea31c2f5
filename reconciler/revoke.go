package reconciler

import (
	"context"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	"github.com/gitpeer/gitpeer/reconciler/plan/provider"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// Revoking a consumer is observe → plan → apply: observeRevocation reads
// (a provider.RevocationSnapshot), provider.PlanRevocation decides, and
// applyProvider writes, with applyRevocation for the revocation's own
// actions. Step Revoke of a round plans it in provider.PlanRevoke; a
// PeeringRepository deleted with deletionPolicy Revoke runs it alone
// (revokeConsumer).

// revokeConsumer revokes consumer outside a round: observe, plan, apply.
// It fails while the revocation waits (provider.PlanRevocation).
func (s liqoProvider) revokeConsumer(ctx context.Context, consumer string) error {
	snap, err := s.observeRevocation(ctx, consumer)
	if err != nil {
		return err
	}
	o, _, _ := s.providerStep().applyProvider(ctx, &protocol.Documents{Consumer: consumer}, snap.Namespace, nil, provider.PlanRevocation(snap, s.r.Now()))
	s.keepWatched(snap, o.err)
	return o.err
}

// observeRevocation reads what revoking consumer takes back or waits for:
// Liqo's objects replicated for it (its ResourceSlices and NamespaceMaps in
// every namespace, its Renews in its tenant namespace), its Tenant, records,
// the certificates the slice watch saw (taken: keepWatched gives them back
// when the revocation fails) and Liqo's certificate caches, found by name
// (the agent may not list Secrets), the RoleBindings naming it, and the
// client CA when a certificate was found.
func (s liqoProvider) observeRevocation(ctx context.Context, consumer string) (snap provider.RevocationSnapshot, err error) {
	ns := authv1beta1.TenantNamespaceName(authv1beta1.ClusterID(consumer))
	snap = provider.RevocationSnapshot{Consumer: consumer, Namespace: ns, Liqo: s.liqoMode(), DeleteNamespace: s.obj.Spec.Provider.DeleteNamespaceOnRevoke}
	if snap.Replicated, err = s.liqoObjects(ctx, consumer, "", provider.LiqoDrainedKinds); err != nil {
		return snap, err
	}
	if snap.Renews, err = s.liqoObjects(ctx, consumer, ns, []schema.GroupVersionKind{provider.LiqoRenewKind}); err != nil {
		return snap, err
	}
	tenant := &authv1beta1.Tenant{}
	if err := s.r.Get(ctx, client.ObjectKey{Namespace: ns, Name: consumer}, tenant); client.IgnoreNotFound(err) != nil {
		return snap, err
	} else if err == nil && s.owning().owns(tenant) {
		snap.Tenant = true
		if tenant.Status.AuthParams != nil {
			snap.TenantCertificate = tenant.Status.AuthParams.SignedCRT
		}
	}
	if snap.Records, err = s.records(ctx, consumer); err != nil {
		return snap, err
	}
	snap.Watched = s.r.slices.take(consumer)
	defer func() { s.keepWatched(snap, err) }()
	if snap.Caches, err = s.observeCaches(ctx, &snap); err != nil {
		return snap, err
	}
	if snap.Bound, err = s.liqoBindings(ctx, consumer, ns); err != nil {
		return snap, err
	}
	if len(snap.TenantCertificate) > 0 || len(snap.Watched) > 0 || len(snap.Caches) > 0 ||
		slices.ContainsFunc(snap.Replicated, func(o provider.LiqoObject) bool { return o.Certificate != nil }) {
		snap.Roots, err = s.clientCA(ctx)
	}
	return snap, err
}

// observeCaches reads Liqo's certificate caches of snap's consumer that
// exist: the control plane's, and those of its ResourceSlices in its tenant
// namespace, of the slices the watch saw and of those its records name.
func (s liqoProvider) observeCaches(ctx context.Context, snap *provider.RevocationSnapshot) ([]provider.LiqoCache, error) {
	names := append(provider.SliceCachesToDelete(snap.Records.Certificates, nil), slices.Collect(maps.Keys(snap.Watched))...)
	for _, obj := range snap.Replicated {
		if obj.Kind == provider.LiqoDrainedKinds[0].Kind && obj.Namespace == snap.Namespace {
			names = append(names, obj.Name)
		}
	}
	slices.Sort(names)
	var out []provider.LiqoCache
	for _, slice := range append([]string{""}, slices.Compact(names)...) {
		c := provider.LiqoCache{Slice: slice}
		secret := &corev1.Secret{}
		if err := s.r.Get(ctx, client.ObjectKey{Namespace: snap.Namespace, Name: c.Name()}, secret); err != nil {
			if client.IgnoreNotFound(err) != nil {
				return nil, err
			}
			continue
		}
		c.Certificate = secret.Data[provider.LiqoCacheCertificateKey]
		out = append(out, c)
	}
	return out, nil
}

// liqoBindings names the RoleBindings in the tenant namespace ns that name
// consumer, as a User or a Group, and that this PeeringRepository does not
// own (those deleteOwned deletes): Liqo's.
func (s liqoProvider) liqoBindings(ctx context.Context, consumer, ns string) ([]string, error) {
	var bindings rbacv1.RoleBindingList
	if err := s.r.List(ctx, &bindings, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	var out []string
	for i := range bindings.Items {
		rb := &bindings.Items[i]
		if !s.owning().owns(rb) && slices.ContainsFunc(rb.Subjects, func(sub rbacv1.Subject) bool {
			return (sub.Kind == rbacv1.UserKind || sub.Kind == rbacv1.GroupKind) && sub.Name == consumer
		}) {
			out = append(out, rb.Name)
		}
	}
	return out, nil
}

// liqoObjects lists the objects of kinds Liqo's CRD replicator created for
// consumer in ns, or in every namespace when ns is "" (liqoReplicated).
func (s liqoProvider) liqoObjects(ctx context.Context, consumer, ns string, kinds []schema.GroupVersionKind) ([]provider.LiqoObject, error) {
	objs, err := s.liqoReplicated(ctx, consumer, ns, kinds)
	if err != nil {
		return nil, err
	}
	out := make([]provider.LiqoObject, 0, len(objs))
	for i := range objs {
		o := provider.LiqoObject{Kind: objs[i].GetKind(), Namespace: objs[i].GetNamespace(), Name: objs[i].GetName(), UID: string(objs[i].GetUID()),
			Finalizers: len(objs[i].GetFinalizers()) > 0}
		// A certificate that does not decode is no certificate anyone could use.
		o.Certificate, _ = provider.SliceCertificate(&objs[i])
		out = append(out, o)
	}
	return out, nil
}

// keepWatched gives the certificates the slice watch saw back to it when
// the revocation that took them failed with err: they are recorded later.
func (s liqoProvider) keepWatched(snap provider.RevocationSnapshot, err error) {
	if err != nil && len(snap.Watched) > 0 {
		s.r.slices.putBack(snap.Consumer, snap.Watched)
	}
}

// applyRevocation applies a, one of the revocation's actions
// (provider.PlanRevocation), for consumer, whose tenant namespace is ns.
func (s liqoProvider) applyRevocation(ctx context.Context, consumer, ns string, a provider.Action) error {
	switch a := a.(type) {
	case provider.RecordLiqoCertificates:
		_, err := s.recordLiqoChecked(ctx, consumer, a.Checked)
		return err
	case provider.MarkRevoked:
		return s.recordRevoked(ctx, consumer)
	case provider.DeleteReplicated:
		return s.deleteReplicated(ctx, a.Objects)
	case provider.DeleteOwned:
		return s.owning().deleteOwned(ctx, consumer, a.DeleteNamespace)
	case provider.DeleteLiqoCaches:
		return s.deleteLiqoCaches(ctx, ns, a.Names...)
	case provider.DeleteSliceCaches:
		return s.deleteSliceCaches(ctx, consumer, ns, a.Slices)
	}
	return fmt.Errorf("revocation action %T has no applier", a)
}

// deleteReplicated deletes objs, each only if it is still the object observed.
func (s liqoProvider) deleteReplicated(ctx context.Context, objs []provider.LiqoObject) error {
	for _, o := range objs {
		i := slices.IndexFunc(liqoKinds, func(gvk schema.GroupVersionKind) bool { return gvk.Kind == o.Kind })
		if i < 0 {
			return fmt.Errorf("deleting %s %s/%s: not a kind of Liqo's", o.Kind, o.Namespace, o.Name)
		}
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(liqoKinds[i])
		obj.SetNamespace(o.Namespace)
		obj.SetName(o.Name)
		uid := types.UID(o.UID)
		if err := s.r.Delete(ctx, obj, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting %s %s/%s: %w", o.Kind, o.Namespace, o.Name, err)
		}
	}
	return nil
}

// liqoKinds are the kinds of Liqo's objects a revocation deletes.
var liqoKinds = append(slices.Clone(provider.LiqoDrainedKinds), provider.LiqoRenewKind)

// deleteSliceCaches deletes, in the tenant namespace ns, Liqo's cache of
// each ResourceSlice of gone, slices the records of consumer name that are
// gone, then clears those names: the certificates stay recorded.
func (s liqoProvider) deleteSliceCaches(ctx context.Context, consumer, ns string, gone []string) error {
	if len(gone) == 0 {
		return nil
	}
	if err := s.deleteLiqoCaches(ctx, ns, provider.LiqoCertificateCaches(gone)[1:]...); err != nil {
		return err
	}
	return s.updateRecords(ctx, consumer, func(r *vocabulary.ConsumerRecords) bool {
		var changed bool
		r.Certificates, changed = provider.WithCachesDeleted(r.Certificates, gone)
		return changed
	})
}
