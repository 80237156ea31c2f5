package reconciler

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
)

var (
	reconcileDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "gitpeer_reconcile_duration_seconds",
		Help: "Duration of PeeringRepository reconciliations.",
	}, []string{"namespace", "name"})
	roundPeerings = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "gitpeer_round_peerings",
		Help:    "Peerings per provider round, by state: visited (planned and stepped) or carried (unchanged since the previous round, its status kept). A quiet round visits none.",
		Buckets: []float64{0, 1, 10, 100, 1000, 10000},
	}, []string{"namespace", "name", "state"})
	gitOperationDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "gitpeer_git_operation_duration_seconds",
		Help: "Latency of Git operations (poll, write).",
	}, []string{"operation"})
	gitOperationFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gitpeer_git_operation_failures_total",
		Help: "Failed Git operations.",
	}, []string{"operation"})
)

func init() {
	metrics.Registry.MustRegister(reconcileDuration, peeringSeries, roundPeerings, gitOperationDuration, gitOperationFailures)
}

var phaseValues = map[gitpeerv1alpha1.PeeringPhase]float64{
	gitpeerv1alpha1.PhaseFailed: 0, gitpeerv1alpha1.PhaseRequested: 1, gitpeerv1alpha1.PhaseNonceIssued: 2,
	gitpeerv1alpha1.PhaseAwaitingApproval: 3, gitpeerv1alpha1.PhaseIssued: 4, gitpeerv1alpha1.PhaseReady: 5,
	gitpeerv1alpha1.PhaseCordoned: 6, gitpeerv1alpha1.PhaseDrained: 7, gitpeerv1alpha1.PhaseRevoked: 8,
}

func phaseValue(p gitpeerv1alpha1.PeeringPhase) float64 { return phaseValues[p] }

// The per-peering series, labelled namespace, name, role and peer.
var (
	peeringLabels = []string{"namespace", "name", "role", "peer"}
	phaseDesc     = prometheus.NewDesc("gitpeer_peering_phase",
		"Phase of each peering as a number: 0 Failed, 1 Requested, 2 NonceIssued, 3 AwaitingApproval, 4 Issued, 5 Ready, 6 Cordoned, 7 Drained, 8 Revoked.", peeringLabels, nil)
	expiryDesc = prometheus.NewDesc("gitpeer_certificate_expiry_timestamp_seconds",
		"Expiry (Unix time) of the newest certificate issued (provider) or received (consumer) per peer.", peeringLabels, nil)
	overdueDesc = prometheus.NewDesc("gitpeer_certificate_renewal_overdue",
		"1 when the certificate issued to a peer passed its renewal point without being renewed (renewal stalled), else 0.", peeringLabels, nil)
)

// peeringSeries reports the per-peering series of every running reconciler.
var peeringSeries = &peeringCollector{memories: map[*phaseMemory]struct{}{}}

// peeringCollector is a prometheus.Collector that builds the per-peering
// series at scrape time from the phase memories of the running reconcilers
// (phaseMemory: every peering's phase and certificate, kept for the status
// anyway), so that no series is stored (3 gauges of 10,000 peerings held ~15
// MiB) and those of a peering or PeeringRepository gone vanish with it.
type peeringCollector struct {
	mu       sync.Mutex
	memories map[*phaseMemory]struct{}
}

// track reports the peerings of m until untrack is called.
func (c *peeringCollector) track(m *phaseMemory) (untrack func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.memories[m] = struct{}{}
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		delete(c.memories, m)
	}
}

// Describe implements prometheus.Collector.
func (c *peeringCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- phaseDesc
	ch <- expiryDesc
	ch <- overdueDesc
}

// Collect implements prometheus.Collector. Several reconcilers run in one
// process only in tests (one agent per cluster); a series two of them
// report is reported once, as a registry requires.
func (c *peeringCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	var repos []map[types.NamespacedName]map[string]phaseSince
	for m := range c.memories {
		repos = append(repos, m.snapshot())
	}
	c.mu.Unlock()
	var seen map[[4]string]bool
	if len(repos) > 1 {
		seen = map[[4]string]bool{}
	}
	roles := map[gitpeerv1alpha1.PeeringRole]*dto.LabelPair{}
	for _, byRepo := range repos {
		for repo, peerings := range byRepo {
			namespace, name := labelPair("namespace", repo.Namespace), labelPair("name", repo.Name)
			for _, p := range peerings {
				if seen != nil {
					key := [4]string{repo.Namespace, repo.Name, string(p.role), p.peer}
					if seen[key] {
						continue
					}
					seen[key] = true
				}
				role := roles[p.role]
				if role == nil {
					role = labelPair("role", string(p.role))
					roles[p.role] = role
				}
				// Sorted by name, as a registry wants them.
				labels := []*dto.LabelPair{name, namespace, labelPair("peer", p.peer), role}
				ch <- &peeringMetric{desc: phaseDesc, value: phaseValue(p.phase), labels: labels}
				if p.cert.expiry != 0 {
					ch <- &peeringMetric{desc: expiryDesc, value: float64(p.cert.expiry), labels: labels}
				}
				if p.cert.renews {
					overdue := &peeringMetric{desc: overdueDesc, labels: labels}
					if p.cert.overdue {
						overdue.value = 1
					}
					ch <- overdue
				}
			}
		}
	}
}

// peeringMetric is a gauge of a peering built for one scrape. Written by
// hand rather than with prometheus.MustNewConstMetric, which builds and
// sorts the label pairs of every series anew (measured: 2.3 times the bytes
// and 3 times the allocations of a scrape of GaugeVecs): the series of a
// peering share its label pairs, those of a repository its namespace and
// name.
type peeringMetric struct {
	desc   *prometheus.Desc
	value  float64
	labels []*dto.LabelPair // sorted by name
}

// Desc implements prometheus.Metric.
func (m *peeringMetric) Desc() *prometheus.Desc { return m.desc }

// Write implements prometheus.Metric.
func (m *peeringMetric) Write(out *dto.Metric) error {
	out.Label = m.labels
	out.Gauge = &dto.Gauge{Value: &m.value}
	return nil
}

func labelPair(name, value string) *dto.LabelPair {
	return &dto.LabelPair{Name: &name, Value: &value}
}
