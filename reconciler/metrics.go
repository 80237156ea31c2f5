package reconciler

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
)

var (
	reconcileDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "gitpeer_reconcile_duration_seconds",
		Help: "Duration of PeeringRepository reconciliations.",
	}, []string{"namespace", "name"})
	peeringPhase = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "gitpeer_peering_phase",
		Help: "Phase of each peering as a number: 0 Failed, 1 Requested, 2 NonceIssued, 3 AwaitingApproval, 4 Issued, 5 Ready, 6 Cordoned, 7 Drained, 8 Revoked.",
	}, []string{"namespace", "name", "role", "peer"})
	certificateExpiry = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "gitpeer_certificate_expiry_timestamp_seconds",
		Help: "Expiry (Unix time) of the newest certificate issued (provider) or received (consumer) per peer.",
	}, []string{"namespace", "name", "role", "peer"})
	renewalOverdue = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "gitpeer_certificate_renewal_overdue",
		Help: "1 when the certificate issued to a peer passed its renewal point without being renewed (renewal stalled), else 0.",
	}, []string{"namespace", "name", "role", "peer"})
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
	metrics.Registry.MustRegister(reconcileDuration, peeringPhase, certificateExpiry, renewalOverdue, roundPeerings, gitOperationDuration, gitOperationFailures)
}

var phaseValues = map[gitpeerv1alpha1.PeeringPhase]float64{
	gitpeerv1alpha1.PhaseFailed: 0, gitpeerv1alpha1.PhaseRequested: 1, gitpeerv1alpha1.PhaseNonceIssued: 2,
	gitpeerv1alpha1.PhaseAwaitingApproval: 3, gitpeerv1alpha1.PhaseIssued: 4, gitpeerv1alpha1.PhaseReady: 5,
	gitpeerv1alpha1.PhaseCordoned: 6, gitpeerv1alpha1.PhaseDrained: 7, gitpeerv1alpha1.PhaseRevoked: 8,
}

func phaseValue(p gitpeerv1alpha1.PeeringPhase) float64 { return phaseValues[p] }
