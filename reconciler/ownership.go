package reconciler

import (
	"context"
	"errors"
	"fmt"
	"sync"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/reconciler/plan/ownership"
	"github.com/gitpeer/gitpeer/reconciler/plan/provider"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// owning is ownership and admission: which objects are this
// PeeringRepository's (its owner labels), the one-time adoption of objects
// made before those labels (ownership.go, liqonamespace.go), deleting what it
// owns, and counting the requests pending for the round's admission
// (provider.Round). What it keeps through a round is its ownershipState.
type owning struct {
	*session
	*ownershipState
}

func (s *session) owning() owning { return owning{s, s.owned} }

// ownershipState is what ownership keeps through a round.
type ownershipState struct {
	// mu guards adoptionFailed: the peerings of a provider's round adopt at once (provideAll).
	mu sync.Mutex
	// adoptionFailed: an adoption failed on an error; the one-time migration is retried next round.
	adoptionFailed bool
}

// owns reports whether obj was created by this PeeringRepository.
func (s owning) owns(obj client.Object) bool {
	return ownership.Of(obj.GetLabels(), s.obj.UID) == ownership.Ours
}

// ownerLabels select the objects of this PeeringRepository.
func (s owning) ownerLabels() client.MatchingLabels {
	return client.MatchingLabels{vocabulary.OwnerLabel: string(s.obj.UID)}
}

// errAdoption is an error reading what deciding a legacy adoption takes:
// the one-time migration is retried next round (noteAdoptionFailed).
type errAdoption struct{ error }

func (e errAdoption) Unwrap() error { return e.error }

// observeNamespace reads the tenant namespace ns of peer (obj, nil when
// absent) and, when it is not this PeeringRepository's, what deciding its
// adoption reads (provider.PlanNamespace): for a legacy one the other
// claimants, for one Liqo created the claimants and what it holds.
func (s owning) observeNamespace(ctx context.Context, peer, ns string) (n provider.Namespace, obj *corev1.Namespace, err error) {
	n.Name = ns
	obj = &corev1.Namespace{}
	if err := s.r.Get(ctx, client.ObjectKey{Name: ns}, obj); err != nil {
		return n, nil, client.IgnoreNotFound(err)
	}
	n.Found, n.Owner, n.Mode = true, ownership.Of(obj.Labels, s.obj.UID), obj.Annotations[vocabulary.ModeAnnotation]
	me := string(s.obj.Spec.ClusterID)
	listed := s.loaded.Has(me, peer) || s.loaded.Has(peer, me)
	switch n.Owner {
	case ownership.Legacy:
		n.Claim = ownership.Claim{Annotated: s.obj.GetAnnotations()[gitpeerv1alpha1.AdoptUnownedAnnotation] == "true", Migrating: s.migratingOwnership(), Listed: listed}
		if n.Claim.Permitted() {
			if n.Claim.Sole, err = s.soleClaimant(ctx, peer); err != nil {
				return n, obj, errAdoption{err}
			}
		}
	case ownership.Others:
		n.LiqoCreated = ownership.LiqoCreated(ns, obj.Labels, peer)
		n.LiqoClaim = ownership.LiqoClaim{LiqoMode: s.liqo.Active, Listed: listed}
		if n.LiqoCreated && n.LiqoClaim.LiqoMode && listed {
			if n.LiqoClaim.Sole, err = s.soleClaimant(ctx, peer); err != nil {
				return n, obj, err
			}
			var nonce *corev1.Secret
			if n.LiqoClaim.Found, nonce, err = s.liqoNamespaceContent(ctx, peer, ns); err != nil {
				return n, obj, err
			}
			if nonce != nil {
				n.LiqoNonce = nonce.UID
			}
		}
	}
	return n, obj, nil
}

// adoptNamespace applies a, the adoption of ns, the tenant namespace of peer
// (provider.PlanNamespace). A legacy adoption that fails makes the one-time
// migration retried next round.
func (s owning) adoptNamespace(ctx context.Context, peer string, ns *corev1.Namespace, a provider.Action) error {
	switch a := a.(type) {
	case provider.AdoptNamespace:
		err := s.adopt(ctx, peer, ns, a.How)
		s.noteAdoptionFailed(errAdoption{err})
		return err
	case provider.AdoptLiqoNamespace:
		return s.adoptLiqoNamespace(ctx, peer, ns, a)
	}
	return fmt.Errorf("adoption %T has no applier", a)
}

// noteAdoptionFailed notes, when err is an errAdoption of an error, that an
// adoption failed on an error: the one-time migration is retried next round.
func (s owning) noteAdoptionFailed(err error) {
	if failed := (errAdoption{}); !errors.As(err, &failed) || failed.error == nil {
		return
	}
	s.mu.Lock()
	s.adoptionFailed = true
	s.mu.Unlock()
}

// migratingOwnership reports whether this round is the one-time migration
// to owner labels (ownership.Migrating).
func (s owning) migratingOwnership() bool {
	return ownership.Migrating(s.obj.Status)
}

// recordOwnershipVersion ends the one-time migration after a round in which
// no adoption failed on an error (refusals are final): from then on only the
// adopt-unowned annotation adopts.
func (s owning) recordOwnershipVersion() {
	if s.adoptionFailed || s.obj.Status.OwnershipVersion >= gitpeerv1alpha1.CurrentOwnershipVersion {
		return
	}
	if s.migratingOwnership() {
		s.r.event(s.obj, corev1.EventTypeNormal, vocabulary.ReasonOwnershipMigrated, "ownership migrated to version %d: objects of earlier versions are adopted from now on only with annotation %s=true",
			gitpeerv1alpha1.CurrentOwnershipVersion, gitpeerv1alpha1.AdoptUnownedAnnotation)
	}
	s.obj.Status.OwnershipVersion = gitpeerv1alpha1.CurrentOwnershipVersion
}

// adopt labels the legacy namespace ns of peer and the gitpeer objects in it
// as this PeeringRepository's (ownership.Adopt allowed it, how).
func (s owning) adopt(ctx context.Context, peer string, ns *corev1.Namespace, how string) error {
	legacyObjects := labels.NewSelector().Add(mustRequirement(vocabulary.ManagedByLabel, selection.Equals, vocabulary.ManagedBy), mustRequirement(vocabulary.OwnerLabel, selection.DoesNotExist))
	var tenants authv1beta1.TenantList
	var bindings rbacv1.RoleBindingList
	// From the API server: the agent's cache indexes no Tenant by namespace (agent/cache.go).
	if err := s.r.apiReader().List(ctx, &tenants, client.InNamespace(ns.Name), client.MatchingLabelsSelector{Selector: legacyObjects}); err != nil {
		return err
	}
	if err := s.r.List(ctx, &bindings, client.InNamespace(ns.Name), client.MatchingLabelsSelector{Selector: legacyObjects}); err != nil {
		return err
	}
	var objs []client.Object
	for i := range tenants.Items {
		objs = append(objs, &tenants.Items[i])
	}
	for i := range bindings.Items {
		objs = append(objs, &bindings.Items[i])
	}
	nonce := &corev1.Secret{}
	if err := s.r.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: authv1beta1.NonceSecretName}, nonce); err == nil && ownership.Of(nonce.Labels, s.obj.UID) == ownership.Legacy {
		objs = append(objs, nonce)
	} else if client.IgnoreNotFound(err) != nil {
		return err
	}
	// Updated, not patched: the agent may not patch Secrets and RoleBindings.
	for _, obj := range objs {
		obj.SetLabels(withOwner(obj.GetLabels(), s.obj.UID))
		if err := s.r.Update(ctx, obj); err != nil {
			return err
		}
	}
	// A legacy CSR is not relabelled (the agent may not change CSRs) but deleted if the
	// agent requested it: it served its certificate, and a pending one is made again.
	if err := s.deleteOwnCSRs(ctx, legacyObjects.Add(mustRequirement(vocabulary.ConsumerLabel, selection.Equals, peer))); err != nil {
		return err
	}
	// Versions before 0.1.0 kept the key pin only on the namespace.
	pinNote, err := s.adoptKeyPin(ctx, peer, ns.Annotations[vocabulary.PinnedKeyAnnotation])
	if err != nil {
		return err
	}
	patch := client.MergeFrom(ns.DeepCopy())
	ns.SetLabels(withOwner(ns.Labels, s.obj.UID))
	if err := s.r.Patch(ctx, ns, patch); err != nil {
		return err
	}
	s.r.eventAbout(s.obj, corev1.EventTypeNormal, vocabulary.ReasonAdopted, peer, "adopted namespace %s and %d gitpeer object(s) in it created by an earlier version, %s%s", ns.Name, len(objs), how, pinNote)
	return nil
}

func withOwner(l map[string]string, uid types.UID) map[string]string {
	if l == nil {
		l = map[string]string{}
	}
	l[vocabulary.OwnerLabel] = string(uid)
	return l
}

func mustRequirement(key string, op selection.Operator, values ...string) labels.Requirement {
	r, err := labels.NewRequirement(key, op, values)
	if err != nil {
		panic(err)
	}
	return *r
}

// soleClaimant reports whether no other PeeringRepository of the cluster
// could own peer's tenant namespace (ownership.SoleClaimant).
func (s owning) soleClaimant(ctx context.Context, peer string) (bool, error) {
	var all gitpeerv1alpha1.PeeringRepositoryList
	if err := s.r.List(ctx, &all); err != nil {
		return false, err
	}
	return ownership.SoleClaimant(s.obj.UID, peer, all.Items), nil
}

// countPending counts the requests this provider answered with a nonce
// (an owned tenant namespace) that have no issued Tenant yet, for the
// round's planning (provider.Round). A peering the round carries over
// counts as the previous round found it (nothing of it changed since); the
// others are read, and p remembers each. On an error, n counts those read.
func (s owning) countPending(ctx context.Context, p *providerPlan) (n int, err error) {
	me := string(s.obj.Spec.ClusterID)
	for _, d := range s.loaded.Dirs() {
		if d.Provider != me || !d.Request {
			continue
		}
		pending := p.prev != nil && p.carried[d.Consumer] && p.prev.Peerings[d.Consumer].Pending
		if !p.carried[d.Consumer] {
			if pending, err = s.answeredNotIssued(ctx, d.Consumer); err != nil {
				return n, err
			}
		}
		p.pending[d.Consumer] = pending
		if pending {
			n++
		}
	}
	return n, nil
}

// answeredNotIssued reports whether consumer has an owned tenant namespace
// and no issued Tenant.
func (s owning) answeredNotIssued(ctx context.Context, consumer string) (bool, error) {
	ns := authv1beta1.TenantNamespaceName(authv1beta1.ClusterID(consumer))
	nsObj := &corev1.Namespace{}
	if err := s.r.Get(ctx, client.ObjectKey{Name: ns}, nsObj); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	tenant := &authv1beta1.Tenant{}
	err := s.r.Get(ctx, client.ObjectKey{Namespace: ns, Name: consumer}, tenant)
	if client.IgnoreNotFound(err) != nil {
		return false, err
	}
	if err != nil {
		tenant = nil
	}
	return provider.Pending(s.owns(nsObj), tenant), nil
}

// deleteOwned deletes the objects of consumer that this PeeringRepository
// created: its Tenant, every RoleBinding (whatever role it binds), its nonce
// and its CSRs, and its namespace if deleteNamespace and the agent created it
// (not one adopted from Liqo).
func (s owning) deleteOwned(ctx context.Context, consumer string, deleteNamespace bool) error {
	ns := authv1beta1.TenantNamespaceName(authv1beta1.ClusterID(consumer))
	var bindings rbacv1.RoleBindingList
	if err := s.r.List(ctx, &bindings, client.InNamespace(ns), s.ownerLabels()); err != nil {
		return err
	}
	objs := []client.Object{
		&authv1beta1.Tenant{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: consumer}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: authv1beta1.NonceSecretName}},
	}
	for i := range bindings.Items {
		objs = append(objs, &bindings.Items[i])
	}
	if deleteNamespace {
		nsObj := &corev1.Namespace{}
		err := s.r.Get(ctx, client.ObjectKey{Name: ns}, nsObj)
		if client.IgnoreNotFound(err) != nil {
			return err
		}
		// Only a namespace the agent created: one adopted from Liqo (adoptLiqoNamespace) may hold Liqo's networking.
		if err == nil && nsObj.Labels[vocabulary.ManagedByLabel] == vocabulary.ManagedBy {
			objs = append(objs, nsObj)
		}
	}
	for _, obj := range objs {
		if err := s.deleteIfOwned(ctx, obj); err != nil {
			return err
		}
	}
	return s.deleteOwnCSRs(ctx, labels.SelectorFromSet(labels.Set{vocabulary.ConsumerLabel: consumer, vocabulary.OwnerLabel: string(s.obj.UID)}))
}

// deleteOwnCSRs deletes the CSRs matching selector that the agent requested
// itself; CSRs others created, whatever their labels, are left alone (the
// admission policy would refuse deleting them, failing the revocation).
func (s owning) deleteOwnCSRs(ctx context.Context, selector labels.Selector) error {
	me, err := s.r.agentUser(ctx)
	if err != nil {
		return fmt.Errorf("learning the agent's own user name: %w", err)
	}
	var list certificatesv1.CertificateSigningRequestList
	if err := s.r.apiReader().List(ctx, &list, client.MatchingLabelsSelector{Selector: selector}); err != nil {
		return err
	}
	for i := range list.Items {
		csr := &list.Items[i]
		if !provider.RequestedBy(csr, me) {
			continue
		}
		if err := s.r.Delete(ctx, csr, client.Preconditions{UID: &csr.UID}); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}

// deleteIfOwned deletes obj (named by key) if it exists and is ours.
func (s owning) deleteIfOwned(ctx context.Context, obj client.Object) error {
	if err := s.r.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		return client.IgnoreNotFound(err)
	}
	if !s.owns(obj) {
		return nil
	}
	uid := obj.GetUID()
	return client.IgnoreNotFound(s.r.Delete(ctx, obj, client.Preconditions{UID: &uid}))
}

// ownedConsumers lists the consumers that hold a tenant namespace created by
// this PeeringRepository.
func (s owning) ownedConsumers(ctx context.Context) ([]string, error) {
	var namespaces corev1.NamespaceList
	if err := s.r.List(ctx, &namespaces, s.ownerLabels()); err != nil {
		return nil, err
	}
	var out []string
	for _, ns := range namespaces.Items {
		if c := ns.Labels[authv1beta1.RemoteClusterIDLabel]; c != "" {
			out = append(out, c)
		}
	}
	return out, nil
}

// finalize runs spec.provider.deletionPolicy for a deleted PeeringRepository
// and releases its finalizer. Nothing is written to Git.
func (r *PeeringRepositoryReconciler) finalize(ctx context.Context, obj *gitpeerv1alpha1.PeeringRepository) error {
	s := sessionOf(r, obj)
	if obj.Spec.Provider.GetDeletionPolicy() == gitpeerv1alpha1.DeletionRevoke {
		consumers, err := s.owning().ownedConsumers(ctx)
		if err != nil {
			return err
		}
		for _, c := range consumers {
			if err := s.liqoProvider().revokeConsumer(ctx, c); err != nil {
				return err
			}
		}
		r.event(obj, corev1.EventTypeNormal, gitpeerv1alpha1.RevokedReason, "PeeringRepository deleted with deletionPolicy Revoke: %d peering(s) revoked", len(consumers))
	} else {
		r.event(obj, corev1.EventTypeNormal, vocabulary.ReasonOrphaned, "PeeringRepository deleted with deletionPolicy Orphan: its peerings are left in place and keep their access")
	}
	patch := client.MergeFrom(obj.DeepCopy())
	controllerutil.RemoveFinalizer(obj, gitpeerv1alpha1.Finalizer)
	return client.IgnoreNotFound(r.Patch(ctx, obj, patch))
}

// ensureFinalizer puts the finalizer on a provider's PeeringRepository, so
// that its deletion runs spec.provider.deletionPolicy.
func (r *PeeringRepositoryReconciler) ensureFinalizer(ctx context.Context, obj *gitpeerv1alpha1.PeeringRepository) error {
	if !obj.IsProvider() || controllerutil.ContainsFinalizer(obj, gitpeerv1alpha1.Finalizer) {
		return nil
	}
	patch := client.MergeFrom(obj.DeepCopy())
	controllerutil.AddFinalizer(obj, gitpeerv1alpha1.Finalizer)
	return r.Patch(ctx, obj, patch)
}

// tenantNamespace returns the tenant namespace of peer if it exists (nil
// if not), after adopting a legacy one or one Liqo created
// (provider.PlanNamespace); a provider.NotOursError or
// provider.LiqoNamespaceError if it belongs to another.
func (s owning) tenantNamespace(ctx context.Context, peer, ns string) (*corev1.Namespace, error) {
	n, obj, err := s.observeNamespace(ctx, peer, ns)
	if err != nil {
		s.noteAdoptionFailed(err)
		return nil, err
	}
	adopt, refused := provider.PlanNamespace(peer, s.modeName(), n)
	if refused != nil {
		return nil, refused
	}
	for _, a := range adopt {
		if err := s.adoptNamespace(ctx, peer, obj, a); err != nil {
			return nil, err
		}
	}
	return obj, nil
}

// skipForeign reports a peering skipped because its objects belong to
// someone else, with an event (provider.SkipForeign); other errors are
// returned as they are.
func (s owning) skipForeign(pe *protocol.Documents, err error) outcome {
	plan := provider.SkipForeign(pe.Consumer, err)
	for _, a := range plan.Actions {
		if ev, ok := a.(provider.Event); ok {
			s.r.eventAbout(s.obj, corev1.EventTypeWarning, ev.Reason, ev.About, "%s", ev.Message)
		}
	}
	return providerOutcome(plan.Outcome)
}
