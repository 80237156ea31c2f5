package reconciler

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// statusSizeLimit is the bound the PeeringRepository's status must keep at
// any number of peerings.
const statusSizeLimit = 64 << 10

// round runs one status publication of a provider and consumer with n
// peerings as the reconciler does (record each, publishStatus, summarize):
// every 10th failed with a long (hostile) message, every 25th deferred.
func round(r *PeeringRepositoryReconciler, obj *gitpeerv1alpha1.PeeringRepository, n int, phase gitpeerv1alpha1.PeeringPhase) {
	s := sessionOf(r, obj)
	for i := range n {
		o := outcome{phase: phase, message: fmt.Sprintf("certificate %032x valid until 2026-11-24T18:00:00Z", i)}
		switch {
		case i%10 == 3:
			o = outcome{phase: gitpeerv1alpha1.PhaseFailed, message: fmt.Sprintf("consumer-%05d/tenant.yaml rejected: %s", i, strings.Repeat("é<hostile>", 4000))}
		case i%25 == 7:
			o = outcome{phase: gitpeerv1alpha1.PhaseRequested, reason: vocabulary.ReasonRequestsDeferred, message: "deferred: 100 pending requests (maxPendingRequests 100)"}
		}
		role := gitpeerv1alpha1.ProviderRole
		if i%100 == 99 {
			role = gitpeerv1alpha1.ConsumerRole
		}
		s.roundReport().record(context.Background(), fmt.Sprintf("cluster-%05d-%s", i, strings.Repeat("x", 40)), role, o)
	}
	s.obj.Status.LastProcessedCommit = strings.Repeat("a", 40)
	s.roundReport().publishStatus()
	markFalse(obj, gitpeerv1alpha1.FilesValidCondition, gitpeerv1alpha1.InvalidDocumentReason, "%s", strings.Repeat("long file error ", 4000))
	r.summarize(obj, nil)
}

// TestStatusBounded builds the status of 100, 1,000 and 10,000 peerings (a
// tenth of them failed with 40 KB messages) and checks that the serialized
// PeeringRepository stays within 64 KiB, and that it still counts every
// peering and lists the failed ones first.
func TestStatusBounded(t *testing.T) {
	for _, n := range []int{10, 100, 1000, 10000} {
		now := time.Date(2026, 11, 23, 18, 0, 0, 0, time.UTC)
		r := &PeeringRepositoryReconciler{Now: func() time.Time { return now }}
		obj := &gitpeerv1alpha1.PeeringRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "gitpeer-system", Name: "peering"}}
		round(r, obj, n, gitpeerv1alpha1.PhaseIssued)
		data, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%5d peerings: PeeringRepository %6d bytes, %d listed, %d omitted, %d need attention", n, len(data), len(obj.Status.Peerings), obj.Status.PeeringsOmitted, obj.Status.PeeringsNeedingAttention)
		if len(data) > statusSizeLimit {
			t.Errorf("%d peerings: %d bytes > %d", n, len(data), statusSizeLimit)
		}
		total, failed := 0, 0
		for _, c := range obj.Status.PeeringCounts {
			total += int(c.Count)
			if c.Phase == gitpeerv1alpha1.PhaseFailed {
				failed += int(c.Count)
			}
		}
		listed := len(obj.Status.Peerings)
		if total != n || listed != min(n, gitpeerv1alpha1.MaxListedPeerings) || int(obj.Status.PeeringsOmitted) != n-listed {
			t.Errorf("%d peerings: counted %d, listed %d, omitted %d", n, total, listed, obj.Status.PeeringsOmitted)
		}
		attention := 0
		for _, p := range obj.Status.Peerings {
			if len(p.Message) > gitpeerv1alpha1.MaxPeeringMessageLength {
				t.Errorf("message of %s: %d bytes", p.PeerID, len(p.Message))
			}
			if p.NeedsAttention() {
				attention++
			}
		}
		if want := min(int(obj.Status.PeeringsNeedingAttention), gitpeerv1alpha1.MaxListedPeerings); attention != want {
			t.Errorf("%d peerings: %d listed need attention, want %d (of %d)", n, attention, want, obj.Status.PeeringsNeedingAttention)
		}
		if msg := getCondition(obj, gitpeerv1alpha1.PeeringsHealthyCondition).Message; !strings.HasPrefix(msg, fmt.Sprintf("%d peering(s) failed; Provider cluster-00003-", failed)) {
			t.Errorf("PeeringsHealthy: %.80s", msg)
		}
		for _, c := range obj.Status.Conditions {
			if len(c.Message) > conditionMessageLimit {
				t.Errorf("condition %s: %d bytes", c.Type, len(c.Message))
			}
		}
	}
}

// TestStatusListsRecentChanges checks "since" across rounds, for listed and
// unlisted peerings alike, and that the list shows the peerings that need
// attention, then the most recently changed, deterministically.
func TestStatusListsRecentChanges(t *testing.T) {
	now := time.Date(2026, 11, 23, 18, 0, 0, 0, time.UTC)
	start := now
	r := &PeeringRepositoryReconciler{Now: func() time.Time { return now }}
	obj := &gitpeerv1alpha1.PeeringRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "gitpeer-system", Name: "peering"}}
	ready := func(s *session, from, to int) {
		for i := from; i < to; i++ {
			s.roundReport().record(context.Background(), fmt.Sprintf("p-%03d", i), gitpeerv1alpha1.ConsumerRole, outcome{phase: gitpeerv1alpha1.PhaseReady})
		}
	}
	s := sessionOf(r, obj)
	ready(s, 0, 200)
	s.roundReport().publishStatus()
	// p-150 fails, p-151 to p-159 go back to AwaitingApproval, the others stay Ready.
	changed := func() {
		s = sessionOf(r, obj)
		ready(s, 0, 150)
		ready(s, 160, 200)
		s.roundReport().record(context.Background(), "p-150", gitpeerv1alpha1.ConsumerRole, outcome{phase: gitpeerv1alpha1.PhaseFailed, message: "bad"})
		for i := 151; i < 160; i++ {
			s.roundReport().record(context.Background(), fmt.Sprintf("p-%03d", i), gitpeerv1alpha1.ConsumerRole, outcome{phase: gitpeerv1alpha1.PhaseAwaitingApproval})
		}
		s.roundReport().publishStatus()
	}

	now = now.Add(time.Minute)
	changed()
	first := obj.Status.DeepCopy()

	var listed []string
	for _, p := range obj.Status.Peerings {
		listed = append(listed, string(p.PeerID))
		want := start
		if p.PeerID >= "p-150" && p.PeerID < "p-160" {
			want = start.Add(time.Minute)
		}
		if !p.Since.Time.Equal(want) {
			t.Errorf("%s (%s) since %s, want %s", p.PeerID, p.Phase, p.Since, want)
		}
	}
	if len(listed) != gitpeerv1alpha1.MaxListedPeerings || listed[0] != "p-000" || listed[40] != "p-150" || listed[49] != "p-159" {
		t.Errorf("listed %v", listed)
	}
	if obj.Status.PeeringsOmitted != 150 || obj.Status.PeeringsNeedingAttention != 1 {
		t.Errorf("omitted %d, attention %d", obj.Status.PeeringsOmitted, obj.Status.PeeringsNeedingAttention)
	}

	// A later round without change lists the same, with the same "since",
	// including for peerings that were not listed before.
	now = now.Add(time.Minute)
	before := r.phases.snapshot()[client.ObjectKeyFromObject(obj)]
	changed()
	if !equalJSON(t, first, &obj.Status) {
		t.Errorf("a round without change changed the status")
	}
	if after := r.phases.snapshot()[client.ObjectKeyFromObject(obj)]; reflect.ValueOf(after).UnsafePointer() != reflect.ValueOf(before).UnsafePointer() {
		t.Errorf("a round without change replaced the memory of the phases (megabytes at 10,000 peerings)")
	}
	if got := getCondition(obj, gitpeerv1alpha1.PeeringsHealthyCondition).Reason; got != gitpeerv1alpha1.RejectedReason {
		t.Errorf("PeeringsHealthy reason %q", got)
	}

	// A peering gone (no longer recorded) is no longer counted, and its metric is deleted.
	s = sessionOf(r, obj)
	ready(s, 1, 200)
	s.roundReport().publishStatus()
	if total := totalPeerings(obj); total != 199 {
		t.Errorf("%d peerings counted, want 199", total)
	}
	phases := gatherSeries(t, &r.phases)
	if _, ok := phases[`gitpeer_peering_phase{name="peering",namespace="gitpeer-system",peer="p-000",phase="Ready",role="Consumer"}`]; ok {
		t.Error("the metric of the peering gone is still there")
	}
	if _, ok := phases[`gitpeer_peering_phase{name="peering",namespace="gitpeer-system",peer="p-001",phase="Ready",role="Consumer"}`]; !ok {
		t.Error("the metric of a peering still there is missing")
	}
}

func equalJSON(t *testing.T, a, b any) bool {
	t.Helper()
	x, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	y, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return string(x) == string(y)
}
