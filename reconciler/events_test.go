package reconciler

import (
	"context"
	"crypto/x509"
	"fmt"
	"math/big"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	"github.com/gitpeer/gitpeer/apis"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/reconciler/plan/provider"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
)

// eventSink stands for the API server behind client-go's event broadcaster:
// it keeps the events created, so that the broadcaster, its recorder and
// its series cache are client-go's own.
type eventSink struct {
	mu      sync.Mutex
	created []*eventsv1.Event
}

func (s *eventSink) Create(_ context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.created = append(s.created, e)
	return e, nil
}

func (s *eventSink) Update(_ context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
	return e, nil
}

func (s *eventSink) Patch(_ context.Context, e *eventsv1.Event, _ []byte) (*eventsv1.Event, error) {
	return e, nil
}

// wait returns the events created once there are n of them.
func (s *eventSink) wait(t testing.TB, n int) []*eventsv1.Event {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		s.mu.Lock()
		got := len(s.created)
		s.mu.Unlock()
		if got >= n {
			s.mu.Lock()
			defer s.mu.Unlock()
			return s.created
		}
	}
	t.Fatalf("%d events recorded, want %d", len(s.created), n)
	return nil
}

// recordingSession is a provider session whose events go through a client-go
// events broadcaster to sink, as the agent's do (mgr.GetEventRecorder).
func recordingSession(t testing.TB, sink *eventSink) *session {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	broadcaster := events.NewBroadcaster(sink)
	if err := broadcaster.StartRecordingToSinkWithContext(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		broadcaster.Shutdown()
	})
	r := &PeeringRepositoryReconciler{Now: time.Now, Recorder: broadcaster.NewRecorder(apis.NewScheme(), "gitpeer")}
	obj := &gitpeerv1alpha1.PeeringRepository{
		TypeMeta:   metav1.TypeMeta{APIVersion: gitpeerv1alpha1.GroupVersion.String(), Kind: gitpeerv1alpha1.PeeringRepositoryKind},
		ObjectMeta: metav1.ObjectMeta{Namespace: "gitpeer-system", Name: "peering", UID: "u1"},
	}
	return sessionOf(r, obj)
}

// TestRoutineEventsOnePerReason: a round's routine provider steps make one
// Normal event per reason, which counts them and names as many as the note
// holds, and its overdue renewals one Warning; other Warnings stay per peering.
func TestRoutineEventsOnePerReason(t *testing.T) {
	sink := &eventSink{}
	s := recordingSession(t, sink)
	const n = 10000
	for i := range n {
		s.report.routine.add(gitpeerv1alpha1.NonceIssuedReason, "nonce issued", fmt.Sprintf("consumer-%05d", i))
	}
	s.report.routine.add(gitpeerv1alpha1.IdentityIssuedReason, "identity committed", "c1 (serial 1a, expires 2027-01-01T00:00:00Z)")
	s.report.routine.add(gitpeerv1alpha1.IdentityIssuedReason, "identity committed", "c2 (serial 2b, expires 2027-01-01T00:00:00Z)")
	s.r.eventAbout(s.obj, corev1.EventTypeWarning, gitpeerv1alpha1.RejectedReason, "c3", "consumer c3: bad")
	s.report.routine.warn(gitpeerv1alpha1.RenewalOverdueReason, "certificate renewal overdue", "c4 (serial 4d, due 2026-11-01T00:00:00Z, expires 2027-01-01T00:00:00Z)")
	s.report.routine.warn(gitpeerv1alpha1.RenewalOverdueReason, "certificate renewal overdue", "c5 (serial 5e, due 2026-11-01T00:00:00Z, expires 2027-01-01T00:00:00Z)")
	s.roundReport().recordRoutine()
	s.roundReport().recordRoutine() // nothing more
	got := map[string]*eventsv1.Event{}
	for _, e := range sink.wait(t, 4) {
		got[e.Reason] = e
	}
	time.Sleep(100 * time.Millisecond)
	if len(sink.wait(t, 4)) != 4 {
		t.Errorf("%d events, want 4", len(sink.created))
	}
	if e := got[gitpeerv1alpha1.RenewalOverdueReason]; e == nil || e.Type != corev1.EventTypeWarning ||
		e.Note != "certificate renewal overdue for 2 consumer(s): c4 (serial 4d, due 2026-11-01T00:00:00Z, expires 2027-01-01T00:00:00Z), c5 (serial 5e, due 2026-11-01T00:00:00Z, expires 2027-01-01T00:00:00Z)" {
		t.Errorf("RenewalOverdue: %+v", e)
	}
	nonces := got[gitpeerv1alpha1.NonceIssuedReason]
	if nonces == nil || nonces.Type != corev1.EventTypeNormal || len(nonces.Note) > eventNoteLimit ||
		!strings.HasPrefix(nonces.Note, "nonce issued for 10000 consumer(s): consumer-00000, consumer-00001, ") ||
		!strings.HasSuffix(nonces.Note, " more") {
		t.Errorf("NonceIssued: %+v", nonces)
	}
	if e := got[gitpeerv1alpha1.IdentityIssuedReason]; e == nil || e.Note != "identity committed for 2 consumer(s): c1 (serial 1a, expires 2027-01-01T00:00:00Z), c2 (serial 2b, expires 2027-01-01T00:00:00Z)" {
		t.Errorf("IdentityIssued: %+v", e)
	}
	if e := got[gitpeerv1alpha1.RejectedReason]; e == nil || e.Type != corev1.EventTypeWarning || e.Note != "consumer c3: bad" {
		t.Errorf("Rejected: %+v", e)
	}
}

// BenchmarkRoundEventsMemory reports the heap client-go's event broadcaster
// keeps (retained-B, after a collection, once every event reached the API)
// after a round that issued 10,000 identities: recorded one event per
// peering (as before), or one per reason and round.
func BenchmarkRoundEventsMemory(b *testing.B) {
	const n = 10000
	item := func(i int) (string, string) {
		consumer := fmt.Sprintf("cluster-%05d", i)
		return consumer, fmt.Sprintf("%s (serial %032x, expires 2027-01-01T00:00:00Z)", consumer, i)
	}
	for _, tc := range []struct {
		name   string
		events int
		round  func(s *session)
	}{
		{"per-peering", n, func(s *session) {
			for i := range n {
				consumer, detail := item(i)
				s.r.eventAbout(s.obj, corev1.EventTypeNormal, gitpeerv1alpha1.IdentityIssuedReason, consumer, "identity for %s committed", detail)
			}
		}},
		{"per-round", 1, func(s *session) {
			for i := range n {
				_, detail := item(i)
				s.report.routine.add(gitpeerv1alpha1.IdentityIssuedReason, "identity committed", detail)
			}
			s.roundReport().recordRoutine()
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var retained uint64
			for b.Loop() {
				sink := &eventSink{}
				s := recordingSession(b, sink)
				before := heapAlloc()
				tc.round(s)
				sink.wait(b, tc.events)
				sink.created = nil
				retained = heapAlloc() - before
				runtime.KeepAlive(s)
			}
			b.ReportMetric(float64(retained), "retained-B")
		})
	}
}

// applyStalled applies, as a provider's plan is applied, the renewal of
// cert, issued to consumer, stalled with outcome o (provider.RenewalStalled).
func applyStalled(s *session, consumer string, cert *x509.Certificate, renewal provider.Renewal, o provider.Outcome) outcome {
	po, actions := provider.RenewalStalled(consumer, cert, renewal, o)
	out, _, _ := s.providerStep().applyProvider(context.Background(), &protocol.Documents{Consumer: consumer}, "", nil, provider.Plan{Actions: actions, Outcome: po})
	return out
}

// TestOverdueRenewalsOneWarning: the renewals an outage stalls past their
// point in one round raise one RenewalOverdue Warning for the round, which
// counts them (not one per consumer: 10,000 at once would flood the events),
// while each peering's outcome and the condition name their own.
func TestOverdueRenewalsOneWarning(t *testing.T) {
	sink := &eventSink{}
	s := recordingSession(t, sink)
	due := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	cert := &x509.Certificate{SerialNumber: big.NewInt(0x4d), NotAfter: due.AddDate(0, 2, 0)}
	const n = 1000
	for i := range n {
		o := applyStalled(s, fmt.Sprintf("c%04d", i), cert, provider.Renewal{At: due, Due: true, Overdue: true}, provider.Outcome{Phase: gitpeerv1alpha1.PhaseIssued, Message: "renewing"})
		if o.reason != gitpeerv1alpha1.RenewalOverdueReason {
			t.Fatalf("outcome %+v; want reason %s", o, gitpeerv1alpha1.RenewalOverdueReason)
		}
	}
	s.roundReport().recordRoutine()
	got := sink.wait(t, 1)
	time.Sleep(100 * time.Millisecond)
	if len(sink.wait(t, 1)) != 1 {
		t.Fatalf("%d events, want 1", len(sink.created))
	}
	if e := got[0]; e.Type != corev1.EventTypeWarning || e.Reason != gitpeerv1alpha1.RenewalOverdueReason ||
		!strings.HasPrefix(e.Note, "certificate renewal overdue for 1000 consumer(s): c0000 (serial 4d, due 2026-11-01T00:00:00Z, expires 2027-01-01T00:00:00Z), c0001 ") {
		t.Errorf("event %s %s %q", e.Type, e.Reason, e.Note)
	}
	if len(s.report.overdue) != n {
		t.Errorf("%d consumers overdue for the condition, want %d", len(s.report.overdue), n)
	}
}
