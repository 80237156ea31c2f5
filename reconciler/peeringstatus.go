package reconciler

import (
	"cmp"
	"iter"
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
)

// conditionMessageLimit bounds the message of each condition the agent sets,
// so that the status stays bounded whatever a file or a peer says.
const conditionMessageLimit = 1024

// phaseSince is a peering's phase and since when it is in it, with what the
// metrics report of its certificate (peeringCollector).
type phaseSince struct {
	role  gitpeerv1alpha1.PeeringRole
	peer  string
	phase gitpeerv1alpha1.PeeringPhase
	since metav1.Time
	cert  certRecord
}

// certRecord is what the metrics report of a peering's certificate: its
// expiry (Unix seconds; 0: no certificate, no series) and, for a certificate
// the provider renews, whether its renewal is overdue.
type certRecord struct {
	expiry  int64
	renews  bool // the provider renews it: gitpeer_certificate_renewal_overdue is reported
	overdue bool
}

// phaseMemory remembers, per PeeringRepository, since when each peering is in
// its phase: status.peerings lists only some of them, and "since" must not
// restart for the others at every round. It is also what the per-peering
// metrics are read from at scrape time. A repository's map is never changed
// once stored (since stores a new one), so a reader may use it unlocked.
type phaseMemory struct {
	mu sync.Mutex
	m  map[types.NamespacedName]map[string]phaseSince
}

// since sets Since on every peering of current (keyed by peeringKey): kept
// from memory, else from prev (the previous status.peerings), when the phase
// did not change; now otherwise. certs holds the certificates the round
// noted, by peering: the others keep the one remembered. It then remembers
// exactly current: a peering gone is forgotten, and so are its metrics. A
// round that changed nothing of it (most rounds: at 10,000 peerings the
// memory is megabytes) keeps the map it has.
func (p *phaseMemory) since(repo types.NamespacedName, prev []gitpeerv1alpha1.PeeringStatus, current map[string]gitpeerv1alpha1.PeeringStatus, certs map[string]certRecord, now metav1.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	known := p.m[repo]
	listed := make(map[string]gitpeerv1alpha1.PeeringStatus, len(prev))
	for _, st := range prev {
		listed[peeringKey(st.Role, string(st.PeerID))] = st
	}
	remembered := func(k string, st gitpeerv1alpha1.PeeringStatus) phaseSince {
		was, ok := known[k]
		if !ok {
			if l, listedBefore := listed[k]; listedBefore {
				was, ok = phaseSince{phase: l.Phase, since: l.Since}, true
			}
		}
		st.Since = now
		if ok && was.phase == st.Phase {
			st.Since = was.since
		}
		cert, noted := certs[k]
		if !noted {
			cert = was.cert
		}
		return phaseSince{role: st.Role, peer: string(st.PeerID), phase: st.Phase, since: st.Since, cert: cert}
	}
	same := known != nil && len(known) == len(current)
	for k, st := range current {
		ps := remembered(k, st)
		st.Since = ps.since
		current[k] = st
		if was, ok := known[k]; !ok || was != ps {
			same = false
		}
	}
	if same {
		return
	}
	next := make(map[string]phaseSince, len(current))
	for k, st := range current {
		next[k] = remembered(k, st)
	}
	if p.m == nil {
		p.m = map[types.NamespacedName]map[string]phaseSince{}
	}
	p.m[repo] = next
}

// snapshot returns the peerings remembered, by repository; the maps must
// not be changed.
func (p *phaseMemory) snapshot() map[types.NamespacedName]map[string]phaseSince {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[types.NamespacedName]map[string]phaseSince, len(p.m))
	for repo, peerings := range p.m {
		out[repo] = peerings
	}
	return out
}

// forget drops what is remembered of repo.
func (p *phaseMemory) forget(repo types.NamespacedName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.m, repo)
}

func peeringKey(role gitpeerv1alpha1.PeeringRole, peer string) string {
	return string(role) + "/" + peer
}

// peeringSummary is the bounded report of every peering of a PeeringRepository.
type peeringSummary struct {
	listed    []gitpeerv1alpha1.PeeringStatus
	counts    []gitpeerv1alpha1.PeeringCount
	omitted   int
	attention int
	failed    []gitpeerv1alpha1.PeeringStatus // every failed peering, by role and peer
}

// summarizePeerings counts all (each with Since set) by role and phase and
// lists at most MaxListedPeerings of them, their messages cut: first those
// that need attention, then the most recently changed; the most recent first,
// ties by role and peer. The list is sorted by role and peer. It reads all
// once, keeping the best ranked so far (at 10,000 peerings a ranked copy of
// all would be a megabyte per round).
func summarizePeerings(all iter.Seq[gitpeerv1alpha1.PeeringStatus]) peeringSummary {
	var out peeringSummary
	counts := map[gitpeerv1alpha1.PeeringCount]int32{}
	top := make([]gitpeerv1alpha1.PeeringStatus, 0, gitpeerv1alpha1.MaxListedPeerings+1)
	total := 0
	for st := range all {
		total++
		counts[gitpeerv1alpha1.PeeringCount{Role: st.Role, Phase: st.Phase}]++
		if st.NeedsAttention() {
			out.attention++
		}
		if st.Phase == gitpeerv1alpha1.PhaseFailed {
			out.failed = append(out.failed, st)
		}
		if i, _ := slices.BinarySearchFunc(top, st, rankForListing); i < gitpeerv1alpha1.MaxListedPeerings {
			top = slices.Insert(top, i, st)
			top = top[:min(len(top), gitpeerv1alpha1.MaxListedPeerings)]
		}
	}
	for c, n := range counts {
		c.Count = n
		out.counts = append(out.counts, c)
	}
	slices.SortFunc(out.counts, func(a, b gitpeerv1alpha1.PeeringCount) int {
		return cmp.Or(cmp.Compare(a.Role, b.Role), cmp.Compare(a.Phase, b.Phase))
	})
	slices.SortFunc(out.failed, byRoleAndPeer)
	out.listed, out.omitted = top, total-len(top)
	for i := range out.listed {
		out.listed[i].Message = truncate(out.listed[i].Message, gitpeerv1alpha1.MaxPeeringMessageLength)
	}
	slices.SortFunc(out.listed, byRoleAndPeer)
	return out
}

// rankForListing orders peerings for status.peerings: those that need
// attention first, then the most recently changed, ties by role and peer.
func rankForListing(a, b gitpeerv1alpha1.PeeringStatus) int {
	if a.NeedsAttention() != b.NeedsAttention() {
		if a.NeedsAttention() {
			return -1
		}
		return 1
	}
	return cmp.Or(b.Since.Compare(a.Since.Time), byRoleAndPeer(a, b))
}

func byRoleAndPeer(a, b gitpeerv1alpha1.PeeringStatus) int {
	return cmp.Or(cmp.Compare(a.Role, b.Role), cmp.Compare(a.PeerID, b.PeerID))
}

// boundConditionMessages cuts every condition's message to conditionMessageLimit.
func boundConditionMessages(obj *gitpeerv1alpha1.PeeringRepository) {
	for i := range obj.Status.Conditions {
		obj.Status.Conditions[i].Message = truncate(obj.Status.Conditions[i].Message, conditionMessageLimit)
	}
}

// totalPeerings is the number of peerings PeeringCounts counts.
func totalPeerings(obj *gitpeerv1alpha1.PeeringRepository) int {
	total := 0
	for _, c := range obj.Status.PeeringCounts {
		total += int(c.Count)
	}
	return total
}
