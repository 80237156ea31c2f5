package reconciler

import (
	"context"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/reconciler/compact"
	"github.com/gitpeer/gitpeer/reconciler/plan/incremental"
	"github.com/gitpeer/gitpeer/reconciler/plan/provider"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// DefaultFullResyncPeriod is the longest time between two full rounds of a
// provider unless ControllerOptions.FullResyncPeriod says otherwise.
const DefaultFullResyncPeriod = 10 * time.Minute

// providerRounds remembers, per PeeringRepository, what the last complete
// round of its provider found (incremental.Memory) and the consumers whose
// cluster objects changed since its current round began: the next round
// visits only the peerings that changed (incremental.Visit). It is forgotten
// with the PeeringRepository.
type providerRounds struct {
	mu sync.Mutex
	m  map[types.NamespacedName]*providerRound
}

type providerRound struct {
	last    *incremental.Memory
	changed map[string]bool // consumers whose cluster objects changed since the round began
}

// noteChanged records that cluster objects of consumers changed, for every
// PeeringRepository whose provider ran a round in this process (the first
// round of the others visits every peering).
func (p *providerRounds) noteChanged(consumers ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range p.m {
		for _, c := range consumers {
			r.changed[c] = true
		}
	}
}

// begin returns what the last complete round of repo left (nil: none) and
// the consumers whose objects changed since the previous round began. Until
// end, repo's memory is incomplete: if this round fails, the next is full.
func (p *providerRounds) begin(repo types.NamespacedName) (*incremental.Memory, map[string]bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[types.NamespacedName]*providerRound{}
	}
	r := p.m[repo]
	if r == nil {
		p.m[repo] = &providerRound{changed: map[string]bool{}}
		return nil, nil
	}
	last, changed := r.last, r.changed
	r.changed = map[string]bool{}
	if last != nil {
		r.last = &incremental.Memory{} // incomplete
	}
	return last, changed
}

// end records the memory of repo's round, which completed.
func (p *providerRounds) end(repo types.NamespacedName, m *incremental.Memory) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if r := p.m[repo]; r != nil {
		r.last = m
	}
}

// incomplete makes the next round of repo full: what its round did was not all recorded.
func (p *providerRounds) incomplete(repo types.NamespacedName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if r := p.m[repo]; r != nil && r.last != nil {
		r.last = &incremental.Memory{}
	}
}

func (p *providerRounds) forget(repo types.NamespacedName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.m, repo)
}

// consumersOf lists the consumers an object of the cluster may concern: by its
// tenant namespace (liqo-tenant-<consumer>, its name for a namespace), its
// remote-cluster-id label and, for a CSR, its consumer label. Labels are
// read whoever created the object: a foreign object planted in a tenant
// namespace must make the peering visited, and reported.
func consumersOf(obj client.Object) []string {
	var out []string
	ns := obj.GetNamespace()
	switch obj.(type) {
	case *corev1.Namespace, *compact.Namespace: // the agent's cache holds the latter
		ns = obj.GetName()
	}
	if c, ok := strings.CutPrefix(ns, authv1beta1.TenantNamespacePrefix); ok && c != "" {
		out = append(out, c)
	}
	for _, key := range []string{authv1beta1.RemoteClusterIDLabel, vocabulary.ConsumerLabel} {
		if c := obj.GetLabels()[key]; c != "" {
			out = append(out, c)
		}
	}
	return out
}

// objectChanges is the event handler of the informers of the objects a
// provider's peerings are made of (cachedObjects): each event marks the
// peerings of the consumers the object concerns to be visited by the next
// round (noteChanged). A deletion, or a change of an object no
// PeeringRepository created, also reconciles the provider PeeringRepositories
// at once: what the agent created is restored, and a foreign object reported,
// without waiting for the next poll (the workqueue merges the requests). The
// agent's own writes only mark the peerings: they are its own round's work.
func (r *PeeringRepositoryReconciler) objectChanges() handler.EventHandler {
	type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]
	note := func(ctx context.Context, q queue, deleted bool, objs ...client.Object) {
		wake := false
		for _, obj := range objs {
			consumers := consumersOf(obj)
			r.rounds.noteChanged(consumers...)
			wake = wake || (len(consumers) > 0 && (deleted || obj.GetLabels()[vocabulary.OwnerLabel] == ""))
		}
		if wake {
			r.enqueueProviders(ctx, q)
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q queue) { note(ctx, q, false, e.Object) },
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q queue) { note(ctx, q, false, e.ObjectOld, e.ObjectNew) },
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q queue) { note(ctx, q, true, e.Object) },
	}
}

// enqueueProviders reconciles every PeeringRepository with a provider role.
func (r *PeeringRepositoryReconciler) enqueueProviders(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	var all gitpeerv1alpha1.PeeringRepositoryList
	if err := r.List(ctx, &all); err != nil {
		log.FromContext(ctx).Error(err, "listing the PeeringRepositories to reconcile after a change of a tenant's object")
		return
	}
	for i := range all.Items {
		if all.Items[i].IsProvider() {
			q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&all.Items[i])})
		}
	}
}

// providerPlan is which peerings a provider's round visits and which it
// carries over from the previous round (incremental).
type providerPlan struct {
	now  incremental.Now
	full string // why the round is full; "" when incremental
	// checked: full, it compared each directory's tree with its last visit's instead of visiting every peering (incremental.Checked).
	checked bool
	prev    *incremental.Memory
	visit   []string
	carried map[string]bool
	// waiting: visited peerings held back by the previous round and unchanged since (incremental.Waiting).
	waiting map[string]bool
	// pending holds, by consumer with a request, whether it counts as pending (countPending).
	pending map[string]bool
	// miscounted: countPending failed, pending is incomplete; the next round is full.
	miscounted bool
	// round plans the visited peerings one after the other (planProvide): the
	// requests pending and deferred, the peerings acting and held back.
	round provider.Round
}

// planRound decides which of consumers this provider's round visits
// (incremental.FullRound, incremental.Visit).
func (s *session) planRound(consumers []string) *providerPlan {
	key := client.ObjectKeyFromObject(s.obj)
	prev, changedObjects := s.r.rounds.begin(key)
	p := &providerPlan{
		now: incremental.Now{
			Round: incremental.Round{Generation: s.obj.Generation, Annotations: maps.Clone(s.obj.GetAnnotations()), Mode: s.liqo.String() + " " + s.liqo.Namespace, Loader: s.loader},
			Time:  s.r.Now(), RewriteAcknowledged: s.branch.rewriteAcknowledged, Migrating: s.owning().migratingOwnership(),
		},
		prev: prev, carried: map[string]bool{}, waiting: map[string]bool{}, pending: map[string]bool{},
	}
	p.full = incremental.FullRound(prev, p.now, s.r.fullResyncPeriod)
	me := string(s.obj.Spec.ClusterID)
	dirs := map[string]bool{}
	for _, dir := range s.loaded.Changed {
		if c, ok := strings.CutPrefix(dir, me+"/"); ok {
			dirs[c] = true
		}
	}
	changes := incremental.Changes{Dirs: dirs, Objects: changedObjects}
	if p.checked = incremental.Checked(p.full, s.quiet()); p.checked {
		changes.Trees = func(c string) plumbing.Hash { return s.loaded.Tree(me, c) }
	}
	visit, carry := incremental.Visit(consumers, p.full != "" && !p.checked, prev, changes, p.now.Time)
	p.visit = visit
	for _, c := range visit {
		if incremental.Waiting(prev, c, changes) {
			p.waiting[c] = true
		}
	}
	for _, c := range carry {
		p.carried[c] = true
	}
	return p
}

// carry puts the peerings the round did not visit in the status as the
// previous round left them, their renewals included.
func (s *session) carry(p *providerPlan) {
	for c := range p.carried {
		was := p.prev.Peerings[c]
		s.report.status[peeringKey(gitpeerv1alpha1.ProviderRole, c)] = was.Status
		if !was.RenewAt.IsZero() {
			s.roundReport().noteRenewalOf(c, was.RenewAt)
		}
	}
}

// remember records what the round found of the peerings it visited, with
// those it carried, for the next round; results are the round's outcomes.
// A round whose commit failed, that could not count the pending requests, or
// that compared hashes and could not check the records of the peerings it
// carried (recordCarried), leaves its memory incomplete.
func (s *session) remember(ctx context.Context, p *providerPlan, results []result, commitErr error) {
	visited := len(p.visit)
	roundPeerings.WithLabelValues(s.obj.Namespace, s.obj.Name, "visited").Observe(float64(visited))
	roundPeerings.WithLabelValues(s.obj.Namespace, s.obj.Name, "carried").Observe(float64(len(p.carried)))
	log.FromContext(ctx).Info("provider round", "visited", visited, "carried", len(p.carried), "heldBack", p.round.Limit.Held, "full", p.full, "hashesCompared", p.checked)
	if commitErr != nil || p.miscounted {
		return
	}
	if err := s.recordCarried(ctx, p); err != nil {
		log.FromContext(ctx).Error(err, "checking the records of the peerings a resync carried; the next round visits every peering")
		return
	}
	m := &incremental.Memory{Round: p.now.Round, FullAt: p.now.Time}
	if p.full == "" {
		m.FullAt = p.prev.FullAt
	}
	if p.prev == nil || p.prev.Peerings == nil {
		m.Peerings = map[string]incremental.Peering{}
	} else {
		// The previous round's memory is this round's alone (providerRounds.begin)
		// and read no more: its map is reused, the carried peerings kept as they
		// are, rather than copied into a new one at every round.
		m.Peerings = p.prev.Peerings
		for c := range m.Peerings {
			if !p.carried[c] {
				delete(m.Peerings, c) // visited (written again below) or gone
			}
		}
	}
	me := string(s.obj.Spec.ClusterID)
	for _, res := range results {
		if res.role != gitpeerv1alpha1.ProviderRole {
			continue
		}
		m.Peerings[res.peer] = incremental.Peering{
			Tree:     s.loaded.Tree(me, res.peer),
			Status:   s.report.status[peeringKey(res.role, res.peer)],
			Settled:  res.settled && res.o.err == nil,
			RenewAt:  s.report.renewals[res.peer],
			Pending:  p.pending[res.peer],
			HeldBack: res.heldBack,
		}
	}
	s.r.rounds.end(client.ObjectKeyFromObject(s.obj), m)
}
