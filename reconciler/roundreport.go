package reconciler

import (
	"context"
	"maps"
	"sync"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
)

// roundReport is the round's sink: what the round tells the cluster and the
// admin once its steps are done — the PeeringRepository's status and
// conditions, the routine events, the certificate metrics and the next
// renewal it requeues for — gathered from the steps in its reportState.
type roundReport struct {
	*session
	*reportState
}

func (s *session) roundReport() roundReport { return roundReport{s, s.report} }

// reportState is what the steps of a round note for its report.
type reportState struct {
	// status holds the peerings' outcomes by peering (peeringKey), filled once the steps are done (record).
	status map[string]gitpeerv1alpha1.PeeringStatus
	// routine holds the round's routine provider steps, one event per reason (recordRoutine); it has its own lock.
	routine routineEvents

	// mu guards what the peerings of a provider's round, which take their
	// steps at once (provideAll), note: the fields below.
	mu      sync.Mutex
	renewAt time.Time // the earliest renewal due (noteRenewal)
	// renewals holds, by consumer, when the certificate the provider issued it is due for renewal (noteRenewalOf).
	renewals map[string]time.Time
	overdue  map[string]string // by consumer, its certificate whose renewal is overdue (noteOverdue)
	// certs holds, by peering (peeringKey), the certificate the round noted for the metrics (noteCertificate).
	certs map[string]certRecord
}

func (s roundReport) record(ctx context.Context, peer string, role gitpeerv1alpha1.PeeringRole, o outcome) {
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
func (s roundReport) publishStatus() {
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
func (s roundReport) noteCertificate(role gitpeerv1alpha1.PeeringRole, peer string, c certRecord) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.certs == nil {
		s.certs = map[string]certRecord{}
	}
	s.certs[peeringKey(role, peer)] = c
}

// noteRenewalOf notes t, when the certificate issued to consumer is due for
// renewal, for the round's requeue (noteRenewal) and the next round (remember).
func (s roundReport) noteRenewalOf(consumer string, t time.Time) {
	s.noteRenewal(t)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.renewals == nil {
		s.renewals = map[string]time.Time{}
	}
	s.renewals[consumer] = t
}

func (s roundReport) noteRenewal(t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.renewAt.IsZero() || t.Before(s.renewAt) {
		s.renewAt = t
	}
}

// renewalAt is the earliest renewal due the round noted (noteRenewal); zero when none.
func (s roundReport) renewalAt() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.renewAt
}

// renewalOf is when the certificate issued to consumer is due for renewal,
// as the round noted it (noteRenewalOf); ok is false when it noted none.
func (s roundReport) renewalOf(consumer string) (at time.Time, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok = s.renewals[consumer]
	return at, ok
}

// noteOverdue notes the consumer's overdue renewal: the round's
// CertificatesRenewed condition says message (markRenewals) and its
// RenewalOverdue warning lists item.
func (s roundReport) noteOverdue(consumer, message, item string) {
	s.mu.Lock()
	if s.overdue == nil {
		s.overdue = map[string]string{}
	}
	s.overdue[consumer] = message
	s.mu.Unlock()
	s.routine.warn(gitpeerv1alpha1.RenewalOverdueReason, "certificate renewal overdue", item)
}

// recordRoutine records one event per reason of the round's routine steps
// and overdue renewals.
func (s roundReport) recordRoutine() {
	for _, ev := range s.routine.events() {
		s.r.event(s.obj, ev.kind, ev.reason, "%s", ev.note)
	}
}
