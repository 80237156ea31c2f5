package reconciler

import (
	"context"
	gocrypto "crypto"
	"errors"
	"fmt"
	"maps"
	"sort"
	"sync"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/go-git/go-git/v5/plumbing"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/gitsync"
	"github.com/gitpeer/gitpeer/reconciler/liqo"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// session is one reconciliation of one PeeringRepository.
type session struct {
	r       *PeeringRepositoryReconciler
	obj     *gitpeerv1alpha1.PeeringRepository
	repo    *gitsync.Repo
	loader  *protocol.Loader
	key     gocrypto.Signer
	liqo    liqo.Mode // Liqo mode or standalone; in Liqo mode key is Liqo's key
	head    plumbing.Hash
	loaded  *protocol.Loaded
	invalid []string
	status  map[string]gitpeerv1alpha1.PeeringStatus
	// pending and deferred are counted by the round's planning, one peering after the other (planProvide).
	pending  int // requests answered with a nonce and not issued yet
	deferred int // requests left unanswered in this round (maxPendingRequests)
	heldBack int // peerings the round's limit left to the next round (provideAll)
	// rewriteAcknowledged: this round accepted a rewritten history (sync); the provider's round is full.
	rewriteAcknowledged bool

	// mu guards what the peerings of a provider's round, which take their
	// steps at once (provideAll), share: the fields below, but issuance and
	// each shard, which have their own locks.
	mu      sync.Mutex
	renewAt time.Time // the earliest renewal due (noteRenewal)
	// renewals holds, by consumer, when the certificate the provider issued it is due for renewal (noteRenewalOf).
	renewals map[string]time.Time
	// adoptionFailed: an adoption failed on an error; the one-time migration is retried next round.
	adoptionFailed bool
	// shards holds the records Secrets read or written this round (issued.go).
	shards   map[string]*recordsShard
	staged   []gitStep         // this round's writes to the branch, committed together (commitRound)
	overdue  map[string]string // by consumer, its certificate whose renewal is overdue (renewalStalled)
	issuance issuance          // this round's CSRs, read once, and those it creates or approves (csr.go)
	// migration serialises the move of gitpeer 0.1.0's records (migrateLegacyRecords).
	migration sync.Mutex
	// certs holds, by peering (peeringKey), the certificate the round noted for the metrics (noteCertificate).
	certs map[string]certRecord
	// routine holds the round's routine provider steps, one event per reason (recordRoutine).
	routine routineEvents
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
	return &session{r: r, obj: obj, repo: open.repo, loader: open.loader, key: key, liqo: mode, status: map[string]gitpeerv1alpha1.PeeringStatus{}}, nil
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

// sync polls the branch, guards its history, verifies commit signatures and
// loads the peering documents that concern the local cluster.
func (s *session) sync(ctx context.Context) error {
	obj := s.obj
	pollCtx, cancel := context.WithTimeout(ctx, obj.GetTimeout())
	defer cancel()
	head, err := observeGit("poll", func() (plumbing.Hash, error) { return s.repo.Poll(pollCtx) })
	if err != nil {
		return err
	}
	s.head = head
	if err := s.guardHistory(); err != nil {
		return err
	}
	if err := s.verifySignatures(ctx); err != nil {
		return err
	}
	return s.load(ctx)
}

// guardHistory refuses a head that does not descend from the last processed
// commit, or that a merge since then reaches by bringing back, in a folder
// the agent reads (relevantDirs), what an older parent held where a newer
// one had changed it (gitsync.CheckMerges), whatever its signatures and
// whether or not spec.verify is set: no clean merge has that shape, and it
// would silently undo a drain or a deleted tenant.yaml. Both stall the agent
// until an admin sets AcknowledgeRewriteAnnotation to the head.
func (s *session) guardHistory() error {
	obj, head := s.obj, s.head
	last := plumbing.NewHash(obj.Status.LastProcessedCommit)
	if head == last {
		return nil
	}
	if !last.IsZero() {
		if _, err := s.repo.Changes(last, head); err != nil {
			if !errors.Is(err, gitsync.ErrHistoryRewritten) {
				return err
			}
			if err := s.unlessAcknowledged(gitpeerv1alpha1.HistoryRewrittenReason, fmt.Sprintf("branch %s was rewritten: %s does not descend from %s", obj.GetBranch(), head, last)); err != nil {
				return err
			}
			s.rewriteAcknowledged = true
		}
	}
	err := s.repo.CheckMerges(last, head, relevantDirs(obj))
	if !errors.Is(err, gitsync.ErrMergeReverts) {
		return err
	}
	return s.unlessAcknowledged(gitpeerv1alpha1.MergeRevertsReason, fmt.Sprintf("branch %s: %v", obj.GetBranch(), err))
}

// unlessAcknowledged stalls with reason on what, a history the agent must not
// act on unreviewed, unless AcknowledgeRewriteAnnotation names the head: then
// it records the acknowledgement (a Normal event) and lets the round go on.
func (s *session) unlessAcknowledged(reason, what string) error {
	ack := gitpeerv1alpha1.AcknowledgeRewriteAnnotation
	if s.obj.GetAnnotations()[ack] != s.head.String() {
		return &Stalling{Reason: reason, Err: fmt.Errorf("%s; review it and set annotation %s=%s", what, ack, s.head)}
	}
	s.r.event(s.obj, corev1.EventTypeNormal, reason, "%s; acknowledged at %s", what, s.head)
	return nil
}

// load decodes the documents of every peering directory the local cluster is
// part of, with protocol.Load as `gitpeer verify` does, reading only the
// directories that changed since the previous round. Invalid files are
// reported and skipped.
func (s *session) load(ctx context.Context) error {
	loaded, err := LoadChanged(s.loader, s.repo, s.head, s.obj)
	if err != nil {
		return err
	}
	s.loaded = loaded
	for _, rj := range s.loaded.Rejected {
		s.reject(ctx, rj.Path, rj.Err)
	}
	if len(s.invalid) > 0 {
		markFalse(s.obj, gitpeerv1alpha1.FilesValidCondition, gitpeerv1alpha1.InvalidDocumentReason, "%d file(s) skipped: %s", len(s.invalid), s.invalid[0])
	} else {
		markTrue(s.obj, gitpeerv1alpha1.FilesValidCondition, meta.SucceededReason, "all files valid")
	}
	return nil
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

// reject reports an invalid file (condition, event, log); it is skipped.
func (s *session) reject(ctx context.Context, path string, err error) {
	s.invalid = append(s.invalid, err.Error())
	log.FromContext(ctx).Info("skipping invalid file", "path", path, "reason", err.Error())
	s.r.eventAbout(s.obj, corev1.EventTypeWarning, gitpeerv1alpha1.InvalidDocumentReason, path, "%v", err)
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
		issued, err := s.issuedConsumers()
		if err != nil {
			return err
		}
		for _, c := range issued {
			consumers[c] = true
		}
		s.publishTerms(ctx)
		plan = s.planRound(sortedKeys(consumers))
		if err := s.countPending(ctx, plan); err != nil {
			log.FromContext(ctx).Error(err, "counting pending requests")
			plan.miscounted = true
		}
		results = append(results, s.provideAll(ctx, plan)...)
		s.carry(plan)
		if s.deferred > 0 {
			s.r.event(s.obj, corev1.EventTypeWarning, vocabulary.ReasonRequestsDeferred, "%d request(s) deferred: %d pending requests reached maxPendingRequests; nothing was created for them", s.deferred, s.pending)
		}
	}
	if s.obj.IsConsumer() {
		for _, p := range s.obj.Spec.Consumer.Providers {
			pe := s.peering(string(p), me)
			results = append(results, result{peer: string(p), role: gitpeerv1alpha1.ConsumerRole, o: s.followPullRequest(ctx, pe, s.consume(ctx, pe))})
		}
	}
	s.requestCertificates(ctx, results)
	commitErr := s.commitRound(ctx, results)
	s.recordRoutine()
	for _, res := range results {
		s.record(ctx, res.peer, res.role, res.o)
	}
	if plan != nil {
		s.remember(ctx, plan, results, commitErr)
	}
	if err := s.forgetUnlistedProviders(ctx); err != nil {
		log.FromContext(ctx).Error(err, "cannot remove what was created for providers no longer listed")
	}
	s.markRenewals()
	s.recordOwnershipVersion()
	s.obj.Status.LastProcessedCommit = s.head.String()
	s.publishStatus()
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

func (s *session) record(ctx context.Context, peer string, role gitpeerv1alpha1.PeeringRole, o outcome) {
	if o.err != nil {
		log.FromContext(ctx).Error(o.err, "peering step failed", "peer", peer, "role", role)
		o.phase, o.message = gitpeerv1alpha1.PhaseFailed, o.err.Error()
	}
	s.status[peeringKey(role, peer)] = gitpeerv1alpha1.PeeringStatus{
		PeerID: authv1beta1.ClusterID(peer), Role: role, Phase: o.phase, Reason: o.reason, Message: o.message,
	}
}

// publishStatus reports the peerings of this round, bounded at any number of
// them: counts by role and phase, and status.peerings listing those that need
// attention, then the most recently changed (see summarizePeerings); "since"
// is kept for unchanged phases. The memory of the phases, which the metrics
// are read from, takes the round's peerings and certificates.
func (s *session) publishStatus() {
	s.mu.Lock()
	certs := s.certs
	s.mu.Unlock()
	s.r.phases.since(client.ObjectKeyFromObject(s.obj), s.obj.Status.Peerings, s.status, certs, metav1.NewTime(s.r.Now()))
	sum := summarizePeerings(maps.Values(s.status))
	s.obj.Status.Peerings, s.obj.Status.PeeringCounts = sum.listed, sum.counts
	s.obj.Status.PeeringsOmitted, s.obj.Status.PeeringsNeedingAttention = int32(sum.omitted), int32(sum.attention)
	if len(sum.failed) > 0 {
		first := sum.failed[0]
		markFalse(s.obj, gitpeerv1alpha1.PeeringsHealthyCondition, gitpeerv1alpha1.RejectedReason, "%d peering(s) failed; %s %s: %s", len(sum.failed), first.Role, first.PeerID, first.Message)
	} else {
		markTrue(s.obj, gitpeerv1alpha1.PeeringsHealthyCondition, meta.SucceededReason, "no peering failed")
	}
}

// noteCertificate notes, for the metrics, the certificate of the peering of
// role with peer: its expiry, and for one the provider renews whether the
// renewal is overdue (provider.RenewalOf). A zero record notes that the
// peering holds none any more.
func (s *session) noteCertificate(role gitpeerv1alpha1.PeeringRole, peer string, c certRecord) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.certs == nil {
		s.certs = map[string]certRecord{}
	}
	s.certs[peeringKey(role, peer)] = c
}

// requeueAtOnce requeues a PeeringRepository with no wait (a RequeueAfter
// must be positive to be honoured without the failure backoff).
const requeueAtOnce = time.Nanosecond

// requeueAfter is the poll interval, or sooner when a certificate must be
// renewed, or at once when the round's limit held peerings back.
func (s *session) requeueAfter() time.Duration {
	if s.heldBack > 0 {
		return requeueAtOnce
	}
	after := s.obj.GetRequeueAfter()
	if !s.renewAt.IsZero() {
		if d := s.renewAt.Sub(s.r.Now()); d < after {
			after = max(d, time.Second)
		}
	}
	return after
}

// noteRenewalOf notes t, when the certificate issued to consumer is due for
// renewal, for the round's requeue (noteRenewal) and the next round (remember).
func (s *session) noteRenewalOf(consumer string, t time.Time) {
	s.noteRenewal(t)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.renewals == nil {
		s.renewals = map[string]time.Time{}
	}
	s.renewals[consumer] = t
}

func (s *session) noteRenewal(t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.renewAt.IsZero() || t.Before(s.renewAt) {
		s.renewAt = t
	}
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
