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

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/reconciler/plan/provider"
)

// gatherSeries gathers the per-peering series of memories through a
// registry, as a scrape does, by "name{labels}".
func gatherSeries(t testing.TB, memories ...*phaseMemory) map[string]float64 {
	t.Helper()
	c := &peeringCollector{memories: map[*phaseMemory]struct{}{}}
	for _, m := range memories {
		c.track(m)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			out[f.GetName()+"{"+strings.Join(labels, ",")+"}"] = m.GetGauge().GetValue()
		}
	}
	return out
}

// TestPeeringSeries follows the per-peering series through rounds of a
// provider and consumer as a scrape sees them: each peering's phase, the
// expiry of its certificate, the overdue renewal of one the provider renews;
// a peering not noted again keeps its certificate; a peering gone, a
// certificate dropped and a PeeringRepository deleted take their series
// with them.
func TestPeeringSeries(t *testing.T) {
	now := time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)
	r := &PeeringRepositoryReconciler{Now: func() time.Time { return now }}
	obj := &gitpeerv1alpha1.PeeringRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "gitpeer-system", Name: "peering"}}
	c := &peeringCollector{memories: map[*phaseMemory]struct{}{}}
	untrack := c.track(&r.phases)
	ctx := context.Background()
	const help = `# HELP gitpeer_certificate_expiry_timestamp_seconds Expiry (Unix time) of the newest certificate issued (provider) or received (consumer) per peer.
# TYPE gitpeer_certificate_expiry_timestamp_seconds gauge
`
	const overdueHelp = `# HELP gitpeer_certificate_renewal_overdue 1 when the certificate issued to a peer passed its renewal point without being renewed (renewal stalled), else 0.
# TYPE gitpeer_certificate_renewal_overdue gauge
`
	const phaseHelp = `# HELP gitpeer_peering_phase The phase of each peering, as the label phase (Failed, Requested, NonceIssued, AwaitingApproval, Issued, Ready, Cordoned, Drained, Revoked); always 1.
# TYPE gitpeer_peering_phase gauge
`
	expect := func(want string) {
		t.Helper()
		if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
			t.Error(err)
		}
	}

	// Round 1: c1 issued and renewed in time, c2's renewal stalled past its
	// point (provider.RenewalOf), p1 received from a provider.
	s := sessionOf(r, obj)
	s.roundReport().noteCertificate(gitpeerv1alpha1.ProviderRole, "c1", certRecord{expiry: 1800000000, renews: true})
	s.roundReport().record(ctx, "c1", gitpeerv1alpha1.ProviderRole, outcome{phase: gitpeerv1alpha1.PhaseReady})
	stalled := &x509.Certificate{SerialNumber: big.NewInt(7), NotBefore: now.Add(-100 * time.Minute), NotAfter: now.Add(20 * time.Minute)}
	renewal := provider.RenewalOf(stalled, now)
	if !renewal.Overdue {
		t.Fatal("the test certificate is not overdue")
	}
	s.roundReport().record(ctx, "c2", gitpeerv1alpha1.ProviderRole, applyStalled(s, "c2", stalled, renewal, provider.Outcome{Phase: gitpeerv1alpha1.PhaseIssued}))
	s.roundReport().noteCertificate(gitpeerv1alpha1.ConsumerRole, "p1", certRecord{expiry: 1700000000})
	s.roundReport().record(ctx, "p1", gitpeerv1alpha1.ConsumerRole, outcome{phase: gitpeerv1alpha1.PhaseReady})
	expect("")
	s.roundReport().publishStatus()
	expect(help + fmt.Sprintf(`gitpeer_certificate_expiry_timestamp_seconds{name="peering",namespace="gitpeer-system",peer="c1",role="Provider"} 1.8e+09
gitpeer_certificate_expiry_timestamp_seconds{name="peering",namespace="gitpeer-system",peer="c2",role="Provider"} %d
gitpeer_certificate_expiry_timestamp_seconds{name="peering",namespace="gitpeer-system",peer="p1",role="Consumer"} 1.7e+09
`, stalled.NotAfter.Unix()) + overdueHelp + `gitpeer_certificate_renewal_overdue{name="peering",namespace="gitpeer-system",peer="c1",role="Provider"} 0
gitpeer_certificate_renewal_overdue{name="peering",namespace="gitpeer-system",peer="c2",role="Provider"} 1
` + phaseHelp + `gitpeer_peering_phase{name="peering",namespace="gitpeer-system",peer="c1",phase="Ready",role="Provider"} 1
gitpeer_peering_phase{name="peering",namespace="gitpeer-system",peer="c2",phase="Issued",role="Provider"} 1
gitpeer_peering_phase{name="peering",namespace="gitpeer-system",peer="p1",phase="Ready",role="Consumer"} 1
`)

	// Round 2: c1 carried (nothing noted), c2 gone, p1's identity dropped:
	// p1's series is that of its new phase, the one of Ready is gone.
	s = sessionOf(r, obj)
	s.roundReport().record(ctx, "c1", gitpeerv1alpha1.ProviderRole, outcome{phase: gitpeerv1alpha1.PhaseReady})
	s.roundReport().noteCertificate(gitpeerv1alpha1.ConsumerRole, "p1", certRecord{})
	s.roundReport().record(ctx, "p1", gitpeerv1alpha1.ConsumerRole, outcome{phase: gitpeerv1alpha1.PhaseRevoked})
	s.roundReport().publishStatus()
	expect(help + `gitpeer_certificate_expiry_timestamp_seconds{name="peering",namespace="gitpeer-system",peer="c1",role="Provider"} 1.8e+09
` + overdueHelp + `gitpeer_certificate_renewal_overdue{name="peering",namespace="gitpeer-system",peer="c1",role="Provider"} 0
` + phaseHelp + `gitpeer_peering_phase{name="peering",namespace="gitpeer-system",peer="c1",phase="Ready",role="Provider"} 1
gitpeer_peering_phase{name="peering",namespace="gitpeer-system",peer="p1",phase="Revoked",role="Consumer"} 1
`)

	// The PeeringRepository deleted: none of its series stay.
	r.forget(types.NamespacedName{Namespace: obj.Namespace, Name: obj.Name})
	expect("")

	// A reconciler stopped is no longer reported.
	s = sessionOf(r, obj)
	s.roundReport().record(ctx, "c1", gitpeerv1alpha1.ProviderRole, outcome{phase: gitpeerv1alpha1.PhaseReady})
	s.roundReport().publishStatus()
	untrack()
	expect("")
}

// TestPeeringSeriesOfSeveralAgents: two reconcilers of one process (agents
// of two clusters in a test) reporting the same series do not break the
// scrape, which a registry refuses with duplicates.
func TestPeeringSeriesOfSeveralAgents(t *testing.T) {
	obj := &gitpeerv1alpha1.PeeringRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "gitpeer-system", Name: "peering"}}
	var agents [2]*PeeringRepositoryReconciler
	for i := range agents {
		agents[i] = &PeeringRepositoryReconciler{Now: time.Now}
		s := sessionOf(agents[i], obj)
		s.roundReport().record(context.Background(), "c1", gitpeerv1alpha1.ProviderRole, outcome{phase: gitpeerv1alpha1.PhaseReady})
		s.roundReport().record(context.Background(), fmt.Sprintf("p%d", i), gitpeerv1alpha1.ConsumerRole, outcome{phase: gitpeerv1alpha1.PhaseReady})
		s.roundReport().publishStatus()
	}
	if got := gatherSeries(t, &agents[0].phases, &agents[1].phases); len(got) != 3 {
		t.Errorf("gathered %v, want c1 once, p0 and p1", got)
	}
}

// TestPeeringSeriesScrapedDuringRounds scrapes while rounds publish (run
// with -race).
func TestPeeringSeriesScrapedDuringRounds(t *testing.T) {
	r := &PeeringRepositoryReconciler{Now: time.Now}
	obj := &gitpeerv1alpha1.PeeringRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "gitpeer-system", Name: "peering"}}
	var wg sync.WaitGroup
	wg.Go(func() {
		for round := range 20 {
			s := sessionOf(r, obj)
			var peers sync.WaitGroup
			for i := range 50 {
				peers.Go(func() {
					peer := fmt.Sprintf("c%03d", i)
					s.roundReport().noteCertificate(gitpeerv1alpha1.ProviderRole, peer, certRecord{expiry: int64(round), renews: true})
				})
			}
			peers.Wait()
			for i := range 50 + round {
				s.roundReport().record(context.Background(), fmt.Sprintf("c%03d", i), gitpeerv1alpha1.ProviderRole, outcome{phase: gitpeerv1alpha1.PhaseReady})
			}
			s.roundReport().publishStatus()
		}
	})
	for range 20 {
		gatherSeries(t, &r.phases)
	}
	wg.Wait()
	if got := gatherSeries(t, &r.phases); len(got) != 69+2*50 {
		t.Errorf("%d series after the last round, want 69 phases and 50 certificates twice", len(got))
	}
}

// BenchmarkPeeringSeriesMemory reports the heap the per-peering series keep
// at 10,000 peerings between scrapes (retained-B, after a collection): the
// phase memory of the status with its certificate records, which the
// series are built from, and one scrape's cost (B/op).
func BenchmarkPeeringSeriesMemory(b *testing.B) {
	const n = 10000
	var retained uint64
	for b.Loop() {
		b.StopTimer()
		before := heapAlloc()
		r := &PeeringRepositoryReconciler{Now: time.Now}
		obj := &gitpeerv1alpha1.PeeringRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "gitpeer-system", Name: "peering"}}
		s := sessionOf(r, obj)
		for i := range n {
			peer := fmt.Sprintf("cluster-%05d", i)
			s.roundReport().noteCertificate(gitpeerv1alpha1.ProviderRole, peer, certRecord{expiry: 1800000000, renews: true})
			s.roundReport().record(context.Background(), peer, gitpeerv1alpha1.ProviderRole, outcome{phase: gitpeerv1alpha1.PhaseReady})
		}
		s.roundReport().publishStatus()
		s = nil
		c := &peeringCollector{memories: map[*phaseMemory]struct{}{}}
		c.track(&r.phases)
		reg := prometheus.NewRegistry()
		reg.MustRegister(c)
		b.StartTimer()
		families, err := reg.Gather()
		if err != nil || len(families) != 3 || len(families[0].GetMetric()) != n {
			b.Fatalf("gathered %d families: %v", len(families), err)
		}
		b.StopTimer()
		families = nil
		retained = heapAlloc() - before
		runtime.KeepAlive(reg)
		b.StartTimer()
	}
	b.ReportMetric(float64(retained), "retained-B")
}

// heapAlloc is the live heap after a collection.
func heapAlloc() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestRepositoryStalled follows gitpeer_repository_stalled through a stall,
// its end and the PeeringRepository's deletion.
func TestRepositoryStalled(t *testing.T) {
	obj := &gitpeerv1alpha1.PeeringRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "gitpeer-system", Name: "stalled-test"}}
	stalled := func() float64 { return testutil.ToFloat64(repositoryStalled.WithLabelValues(obj.Namespace, obj.Name)) }
	markFailure(obj, &Stalling{Reason: meta.ReconciliationFailedReason, Err: fmt.Errorf("authentication failed")})
	observeStalled(obj)
	if got := stalled(); got != 1 {
		t.Errorf("stalled = %v, want 1", got)
	}
	markReconciling(obj, meta.ProgressingReason, "retrying")
	observeStalled(obj)
	if got := stalled(); got != 0 {
		t.Errorf("stalled = %v after the stall ended, want 0", got)
	}
	forgetRepositoryMetrics(types.NamespacedName{Namespace: obj.Namespace, Name: obj.Name})
	if repositoryStalled.DeleteLabelValues(obj.Namespace, obj.Name) {
		t.Error("the series of the PeeringRepository deleted is still there")
	}
}
