// Package reconciler holds gitpeer's controller: one PeeringRepository
// reconciler that follows a Git branch and, for the local cluster, acts as the
// provider (nonces, Tenant verification, CSR signing, Identities) and as the
// consumer (requests, signed Tenants, kubeconfigs) of the handshake described
// in docs/DESIGN.md.
package reconciler

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/gitsync"
	"github.com/gitpeer/gitpeer/reconciler/plan/consumer"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// PeeringRepositoryReconciler reconciles PeeringRepository objects.
type PeeringRepositoryReconciler struct {
	client.Client
	// APIReader reads straight from the API server (the cluster key Secret).
	APIReader client.Reader
	// Config is the agent's own client configuration; its CA is the CA the
	// provider puts in Identities unless spec.provider.caSecretRef is set.
	Config   *rest.Config
	Recorder events.EventRecorder
	// DataDir holds the persistent clones, one per repository.
	DataDir string
	// Now returns the current time; tests may replace it.
	Now func() time.Time

	mu     sync.Mutex
	repos  map[types.NamespacedName]*openRepo
	user   string // the agent's own user name, learned once (agentUser)
	phases phaseMemory
	// terms holds, by PeeringRepository, the terms it last built (terms.go).
	terms sync.Map
	// pullRequests holds, by consumer peering, the last sync of its pull request (pullrequest.go).
	pullRequests sync.Map
	// recordsMigrated holds the UIDs of the PeeringRepositories whose gitpeer
	// 0.1.0 records Secret this process found gone or moved (issued.go).
	recordsMigrated sync.Map
	proven          provenMemory // Liqo mode: the kubeconfigs proven (consumer_observe.go)
	// peeringWorkers is how many peerings of a provider's round take their step at once (provideAll).
	peeringWorkers int
	// rounds remembers what each provider's last round found: the next visits only what changed (rounds.go).
	rounds providerRounds
	// fullResyncPeriod is the longest time between two rounds of a provider that visit every peering.
	fullResyncPeriod time.Duration
	// roundLimit is how many peerings one round of a provider acts on (provider.RoundLimit).
	roundLimit int
	// tenants is the Tenant informer's store, indexed by owner (issuedConsumers).
	tenants toolscache.Indexer
	// slices sees the certificates Liqo issues for ResourceSlices (slicewatch.go).
	slices *sliceWatch
}

type openRepo struct {
	repo   *gitsync.Repo
	loader *protocol.Loader // what was decoded from the clone, kept across rounds
	key    string           // what the clone was opened with; a change reopens it
}

// SetupWithManager registers the reconciler. It reconciles on spec changes,
// on the reconcile.fluxcd.io/requestedAt annotation and on changes of the
// agent's own CSRs; polling does the rest. The informers of cachedObjects
// start with the manager.
func (r *PeeringRepositoryReconciler) SetupWithManager(mgr ctrl.Manager, opts ControllerOptions) error {
	if r.Now == nil {
		r.Now = time.Now
	}
	r.repos = map[types.NamespacedName]*openRepo{}
	r.peeringWorkers = opts.peeringWorkers()
	r.fullResyncPeriod = opts.fullResyncPeriod()
	r.roundLimit = opts.roundLimit()
	if err := startInformers(mgr); err != nil {
		return err
	}
	if err := r.indexTenants(mgr); err != nil {
		return err
	}
	r.slices = newSliceWatch(r.Config, r.rounds.noteChanged)
	if err := mgr.Add(r.slices); err != nil {
		return err
	}
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		untrack := peeringSeries.track(&r.phases)
		defer untrack()
		<-ctx.Done()
		return nil
	})); err != nil {
		return err
	}
	b := r.watchOwnCSRs(ctrl.NewControllerManagedBy(mgr).
		For(&gitpeerv1alpha1.PeeringRepository{}, builder.WithPredicates(
			predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{})))).
		WatchesMetadata(&rbacv1.ClusterRole{}, handler.EnqueueRequestsFromMapFunc(r.termsRoleUsers))
	for _, obj := range cachedObjects() {
		b = b.Watches(obj, r.objectChanges())
	}
	return b.WithOptions(opts.controller()).Complete(r)
}

// cachedObjects are the kinds a round reads through the informer cache,
// besides the PeeringRepositories and the ClusterRole metadata the
// controller watches (Secrets and CSRs are read from the API server).
func cachedObjects() []client.Object {
	return []client.Object{&corev1.Namespace{}, &authv1beta1.Tenant{}, &authv1beta1.Identity{}, &rbacv1.RoleBinding{}}
}

// startInformers registers the informers of cachedObjects with mgr's cache.
// The manager starts them and waits for them to sync before it starts the
// controller, so no round waits for an informer to start and fill, and they
// sync in parallel.
func startInformers(mgr ctrl.Manager) error {
	for _, obj := range cachedObjects() {
		if _, err := mgr.GetCache().GetInformer(context.Background(), obj); err != nil {
			return fmt.Errorf("starting the informer of %T: %w", obj, err)
		}
	}
	return nil
}

// indexTenants indexes the Tenant informer's store by owner and keeps it
// (issuedConsumers): its objects are compact.Tenants, which a List into a
// TenantList could only return as copies.
func (r *PeeringRepositoryReconciler) indexTenants(mgr ctrl.Manager) error {
	inf, err := mgr.GetCache().GetInformer(context.Background(), &authv1beta1.Tenant{})
	if err != nil {
		return fmt.Errorf("starting the informer of Tenants: %w", err)
	}
	shared, ok := inf.(toolscache.SharedIndexInformer)
	if !ok {
		return fmt.Errorf("the informer of Tenants is a %T, not a SharedIndexInformer", inf)
	}
	if err := shared.AddIndexers(toolscache.Indexers{ownerIndex: byOwnerLabel}); err != nil {
		return fmt.Errorf("indexing Tenants by owner: %w", err)
	}
	r.tenants = shared.GetIndexer()
	return nil
}

// ownerIndex indexes the cached Tenants by their vocabulary.OwnerLabel.
const ownerIndex = "gitpeer.io/owner"

// byOwnerLabel returns the vocabulary.OwnerLabel of a cached object, if it has one.
func byOwnerLabel(obj any) ([]string, error) {
	o, ok := obj.(client.Object)
	if !ok {
		return nil, fmt.Errorf("indexing %T: not an object", obj)
	}
	if owner, ok := o.GetLabels()[vocabulary.OwnerLabel]; ok {
		return []string{owner}, nil
	}
	return nil, nil
}

// Reconcile runs the ordered steps for one PeeringRepository and derives Ready.
func (r *PeeringRepositoryReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	start := r.Now()
	obj := &gitpeerv1alpha1.PeeringRepository{}
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	defer func() {
		reconcileDuration.WithLabelValues(req.Namespace, req.Name).Observe(time.Since(start).Seconds())
	}()
	if !obj.DeletionTimestamp.IsZero() {
		if controllerutil.ContainsFinalizer(obj, gitpeerv1alpha1.Finalizer) {
			return ctrl.Result{}, r.finalize(ctx, obj)
		}
		return ctrl.Result{}, nil
	}
	if err := r.ensureFinalizer(ctx, obj); err != nil {
		return ctrl.Result{}, err
	}

	var roundErr error // typed (errors.go)
	before := obj.DeepCopy()
	defer func() {
		r.summarize(obj, roundErr)
		observeStalled(obj)
		if err := r.writeStatus(ctx, before, obj); err != nil {
			// The status could not be written (e.g. the API server went away mid-round):
			// reported like a failed round and retried with backoff.
			r.rounds.incomplete(req.NamespacedName) // the status it carries over was not written
			perr := typedError(obj, fmt.Errorf("writing the status: %w", err))
			r.report(ctx, obj, perr)
			retErr = errors.Join(retErr, perr)
		}
	}()
	if v, ok := meta.ReconcileAnnotationValue(obj.GetAnnotations()); ok {
		obj.Status.SetLastHandledReconcileRequest(v)
	}
	if obj.Spec.Suspend {
		markFalse(obj, meta.ReadyCondition, gitpeerv1alpha1.SuspendedReason, "reconciliation is suspended")
		return ctrl.Result{}, nil
	}
	if obj.Generation != obj.Status.ObservedGeneration {
		markReconciling(obj, meta.ProgressingReason, "reconciling generation %d", obj.Generation)
	}

	s, err := r.newSession(ctx, obj)
	if err == nil {
		err = s.branchIO().sync(ctx)
	}
	if err != nil {
		roundErr = typedError(obj, err)
		r.report(ctx, obj, roundErr)
		return resultOf(obj, roundErr)
	}
	if err := s.run(ctx); err != nil {
		roundErr = typedError(obj, err)
		r.report(ctx, obj, roundErr)
		return resultOf(obj, roundErr)
	}
	return ctrl.Result{RequeueAfter: s.requeueAfter()}, nil
}

// summarize derives Ready from the other conditions and the round's typed
// error, the way Flux controllers do, and records the observed generation.
func (r *PeeringRepositoryReconciler) summarize(obj *gitpeerv1alpha1.PeeringRepository, err error) {
	if !obj.Spec.Suspend && !stalls(err) {
		deleteCondition(obj, meta.StalledCondition)
	}
	switch {
	case obj.Spec.Suspend:
	case err != nil:
		markFailure(obj, err)
	case isFalse(obj, gitpeerv1alpha1.FilesValidCondition):
		deleteCondition(obj, meta.ReconcilingCondition)
		markFalse(obj, meta.ReadyCondition, gitpeerv1alpha1.InvalidDocumentReason, "%s", getCondition(obj, gitpeerv1alpha1.FilesValidCondition).Message)
	case isFalse(obj, gitpeerv1alpha1.PeeringsHealthyCondition):
		deleteCondition(obj, meta.ReconcilingCondition)
		markFalse(obj, meta.ReadyCondition, getCondition(obj, gitpeerv1alpha1.PeeringsHealthyCondition).Reason, "%s", getCondition(obj, gitpeerv1alpha1.PeeringsHealthyCondition).Message)
	default:
		deleteCondition(obj, meta.ReconcilingCondition)
		msg := fmt.Sprintf("at %s: %d peering(s)", shortHash(obj.Status.LastProcessedCommit), totalPeerings(obj))
		if c := obj.Spec.Consumer; c != nil && c.Direct {
			msg += "; " + consumer.DirectModeWarning // said where everyone looks, as long as it is on
		}
		markTrue(obj, meta.ReadyCondition, meta.SucceededReason, "%s", msg)
	}
	boundConditionMessages(obj)
	sortConditions(obj)
	if err == nil || stalls(err) {
		obj.Status.ObservedGeneration = obj.Generation
	}
}

func (r *PeeringRepositoryReconciler) apiReader() client.Client {
	if c, ok := r.APIReader.(client.Client); ok {
		return c
	}
	return r.Client
}
