package reconciler

import (
	"context"
	gocrypto "crypto"
	"fmt"
	"sort"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/gitsync"
	"github.com/gitpeer/gitpeer/reconciler/liqo"
	"github.com/gitpeer/gitpeer/reconciler/plan/provider"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// session is one reconciliation of one PeeringRepository: what spans the
// round and its sequencing (run). The round's work is done by views of the
// session, one per responsibility: branchIO (gitbranch.go), providerStep
// (provider.go), liqoProvider (liqoprovider.go), owning (ownership.go),
// consumerStep (consumer_observe.go) and roundReport (roundreport.go). The
// views that keep state of the round declare it, each with its own lock
// (branchState, ownershipState, reportState); the session holds it for them.
type session struct {
	r      *PeeringRepositoryReconciler
	obj    *gitpeerv1alpha1.PeeringRepository
	repo   *gitsync.Repo
	loader *protocol.Loader
	key    gocrypto.Signer
	liqo   liqo.Mode // Liqo mode or standalone; in Liqo mode key is Liqo's key
	head   plumbing.Hash
	loaded *protocol.Loaded
	// round is the provider's round: the peerings it visits and carries
	// over, and its planning; nil in a consumer's round.
	round *providerPlan

	// The records of the provider's consumers, read and written by the round (issued.go).
	*recordStore
	// issuance is this round's CSRs, read once, and those it creates or approves (csr.go).
	issuance issuance

	branch *branchState    // branchIO's
	owned  *ownershipState // owning's
	report *reportState    // roundReport's
}

// sessionOf is a session of obj with the state of its views, empty: a
// round's (newSession) without its branch, or a finalizer's.
func sessionOf(r *PeeringRepositoryReconciler, obj *gitpeerv1alpha1.PeeringRepository) *session {
	return &session{r: r, obj: obj, recordStore: newRecordStore(r, obj),
		branch: &branchState{}, owned: &ownershipState{}, report: &reportState{status: map[string]gitpeerv1alpha1.PeeringStatus{}}}
}

func (r *PeeringRepositoryReconciler) newSession(ctx context.Context, obj *gitpeerv1alpha1.PeeringRepository) (*session, error) {
	open, err := r.gitRepo(ctx, obj)
	if err != nil {
		return nil, err
	}
	mode, err := r.detectLiqo(ctx, obj)
	if err != nil {
		return nil, err
	}
	key := mode.Key
	if !mode.Active {
		if key, err = crypto.LoadOrCreateKey(ctx, r.apiReader(), obj.Namespace, crypto.Ed25519); err != nil {
			if apiUnavailable(err) {
				return nil, err
			}
			return nil, &Generic{Reason: gitpeerv1alpha1.ClusterKeyErrorReason, Err: fmt.Errorf("cluster key: %w", err)}
		}
	}
	s := sessionOf(r, obj)
	s.repo, s.loader, s.key, s.liqo = open.repo, open.loader, key, mode
	return s, nil
}

// detectLiqo decides the mode of obj (liqo.Detect, through the API reader)
// and reports it in condition LiqoReady. What stops Liqo mode stalls the
// agent with its reason: nothing runs in the wrong mode or as the wrong
// cluster.
func (r *PeeringRepositoryReconciler) detectLiqo(ctx context.Context, obj *gitpeerv1alpha1.PeeringRepository) (liqo.Mode, error) {
	mode, err := liqo.Detect(ctx, r.apiReader(), obj.Spec.Liqo, string(obj.Spec.ClusterID))
	if reason, ok := liqo.Reason(err); ok {
		markFalse(obj, gitpeerv1alpha1.LiqoReadyCondition, reason, "%s", err)
		return mode, &Stalling{Reason: reason, Err: err}
	}
	if err != nil {
		return mode, err
	}
	reason := gitpeerv1alpha1.StandaloneReason
	if mode.Active {
		reason = gitpeerv1alpha1.LiqoModeReason
	}
	if mode.VersionWarning != "" {
		r.event(obj, corev1.EventTypeWarning, vocabulary.ReasonLiqoVersionWarning, "%s", mode.VersionWarning)
	}
	markTrue(obj, gitpeerv1alpha1.LiqoReadyCondition, reason, "%s", mode)
	return mode, nil
}

// LoadCommit reads commit of repo as the agent of obj does: the peering
// directories obj's cluster is part of (its own as a provider, and its
// directory under each provider it consumes from), with protocol.Load under the
// protocol's caps, which count only these directories: nothing else is read.
// repo must be opened with protocol.Limits.
func LoadCommit(repo *gitsync.Repo, commit plumbing.Hash, obj *gitpeerv1alpha1.PeeringRepository) (*protocol.Loaded, error) {
	return LoadChanged(new(protocol.Loader), repo, commit, obj)
}

// LoadChanged is LoadCommit through loader, which keeps what it decoded from
// one call to the next and reads only the peering directories that changed
// (protocol.Loader): the agent keeps one Loader per clone. The result is
// LoadCommit's.
func LoadChanged(loader *protocol.Loader, repo *gitsync.Repo, commit plumbing.Hash, obj *gitpeerv1alpha1.PeeringRepository) (*protocol.Loaded, error) {
	return loader.Load(repo, commit, loadScope(obj))
}

// loadScope selects the peering directories obj's cluster is part of: all of
// its own as a provider, its own under each provider it consumes from.
func loadScope(obj *gitpeerv1alpha1.PeeringRepository) protocol.Scope {
	me := string(obj.Spec.ClusterID)
	wanted := map[string]bool{}
	if obj.IsConsumer() {
		for _, p := range obj.Spec.Consumer.Providers {
			wanted[string(p)] = true
		}
	}
	return func(provider, consumer string) bool {
		return (provider == me && obj.IsProvider()) || (wanted[provider] && (consumer == me || consumer == ""))
	}
}

func (s *session) peering(provider, consumer string) *protocol.Documents {
	return s.loaded.Documents(provider, consumer)
}

// run acts on every peering; a failure in one never blocks the others. It returns
// the error of the round's commit, if it could not be pushed (the round is retried).
func (s *session) run(ctx context.Context) error {
	me := string(s.obj.Spec.ClusterID)
	var results []result
	var plan *providerPlan // the provider's peerings visited and carried over
	if s.obj.IsProvider() {
		consumers := map[string]bool{}
		for _, d := range s.loaded.Dirs() {
			if d.Provider == me {
				consumers[d.Consumer] = true
			}
		}
		// Tenants issued earlier whose directory is gone entirely must be revoked too.
		issued, err := s.providerStep().issuedConsumers()
		if err != nil {
			return err
		}
		for _, c := range issued {
			consumers[c] = true
		}
		s.providerStep().publishTerms(ctx)
		plan = s.planRound(sortedKeys(consumers))
		s.round = plan
		pending, err := s.owning().countPending(ctx, plan)
		if err != nil {
			log.FromContext(ctx).Error(err, "counting pending requests")
			plan.miscounted = true
		}
		plan.round = provider.Round{Pending: pending, MaxPending: s.obj.Spec.Provider.GetMaxPendingRequests(), Limit: provider.RoundLimit{Max: s.r.roundLimit}}
		results = append(results, s.provideAll(ctx, plan)...)
		s.carry(plan)
		if deferred := plan.round.Deferred; deferred > 0 {
			s.r.event(s.obj, corev1.EventTypeWarning, vocabulary.ReasonRequestsDeferred, "%d request(s) deferred: %d pending requests reached maxPendingRequests; nothing was created for them", deferred, plan.round.Pending)
		}
	}
	if s.obj.IsConsumer() {
		for _, p := range s.obj.Spec.Consumer.Providers {
			pe := s.peering(string(p), me)
			results = append(results, result{peer: string(p), role: gitpeerv1alpha1.ConsumerRole, o: s.consumerStep().followPullRequest(ctx, pe, s.consumerStep().consume(ctx, pe))})
		}
	}
	s.requestCertificates(ctx, results)
	commitErr := s.branchIO().commitRound(ctx, results)
	if err := s.repo.RepackFailure(); err != nil { // the round's poll and write went on
		log.FromContext(ctx).Error(err, "consolidating the clone's packs")
		s.r.event(s.obj, corev1.EventTypeWarning, vocabulary.ReasonRepackFailed, "%v", err)
	}
	s.roundReport().recordRoutine()
	for _, res := range results {
		s.roundReport().record(ctx, res.peer, res.role, res.o)
	}
	if plan != nil {
		s.remember(ctx, plan, results, commitErr)
	}
	if err := s.consumerStep().forgetUnlistedProviders(ctx); err != nil {
		log.FromContext(ctx).Error(err, "cannot remove what was created for providers no longer listed")
	}
	s.branchIO().markRenewals()
	s.owning().recordOwnershipVersion()
	s.obj.Status.LastProcessedCommit = s.head.String()
	s.roundReport().publishStatus()
	return commitErr
}

// outcome is what one peering step reached.
type outcome struct {
	phase   gitpeerv1alpha1.PeeringPhase
	message string
	// reason, when set, says why the peering needs attention (status.peerings[].reason).
	reason string
	err    error
}

// requeueAtOnce requeues a PeeringRepository with no wait (a RequeueAfter
// must be positive to be honoured without the failure backoff).
const requeueAtOnce = time.Nanosecond

// requeueAfter is the poll interval, or sooner when a certificate must be
// renewed, or at once when the round's limit held peerings back.
func (s *session) requeueAfter() time.Duration {
	if s.round != nil && s.round.round.Limit.Held > 0 {
		return requeueAtOnce
	}
	after := s.obj.GetRequeueAfter()
	if renewAt := s.roundReport().renewalAt(); !renewAt.IsZero() {
		if d := renewAt.Sub(s.r.Now()); d < after {
			after = max(d, time.Second)
		}
	}
	return after
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}
