package reconciler

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/gitpeer/gitpeer/apis"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/reconciler/plan/consumer"
)

// TestSummarizeReady checks how Ready is derived from the other conditions
// and the round's error, and what else summarize leaves.
func TestSummarizeReady(t *testing.T) {
	filesBad := func(obj *gitpeerv1alpha1.PeeringRepository) {
		markFalse(obj, gitpeerv1alpha1.FilesValidCondition, gitpeerv1alpha1.InvalidDocumentReason, "1 file(s) skipped: bad")
	}
	peeringsBad := func(obj *gitpeerv1alpha1.PeeringRepository) {
		markFalse(obj, gitpeerv1alpha1.PeeringsHealthyCondition, gitpeerv1alpha1.RejectedReason, "1 peering(s) failed")
	}
	good := func(obj *gitpeerv1alpha1.PeeringRepository) {
		markTrue(obj, gitpeerv1alpha1.FilesValidCondition, meta.SucceededReason, "all files valid")
		markTrue(obj, gitpeerv1alpha1.PeeringsHealthyCondition, meta.SucceededReason, "no peering failed")
	}
	for name, tc := range map[string]struct {
		set        []func(*gitpeerv1alpha1.PeeringRepository)
		suspend    bool
		direct     bool // spec.consumer.direct
		err        error
		ready      metav1.ConditionStatus
		reason     string
		message    string
		stalled    bool
		recon      bool
		generation bool // ObservedGeneration recorded
	}{
		"all good":               {set: []func(*gitpeerv1alpha1.PeeringRepository){good}, ready: metav1.ConditionTrue, reason: meta.SucceededReason, message: "at abc: 0 peering(s)", generation: true},
		"files invalid":          {set: []func(*gitpeerv1alpha1.PeeringRepository){good, filesBad}, ready: metav1.ConditionFalse, reason: gitpeerv1alpha1.InvalidDocumentReason, message: "1 file(s) skipped: bad", generation: true},
		"files before peerings":  {set: []func(*gitpeerv1alpha1.PeeringRepository){good, peeringsBad, filesBad}, ready: metav1.ConditionFalse, reason: gitpeerv1alpha1.InvalidDocumentReason, message: "1 file(s) skipped: bad", generation: true},
		"peering failed":         {set: []func(*gitpeerv1alpha1.PeeringRepository){good, peeringsBad}, ready: metav1.ConditionFalse, reason: gitpeerv1alpha1.RejectedReason, message: "1 peering(s) failed", generation: true},
		"error before the files": {set: []func(*gitpeerv1alpha1.PeeringRepository){filesBad}, err: &Generic{Reason: gitpeerv1alpha1.GitOperationFailedReason, Err: errors.New("push lost")}, ready: metav1.ConditionFalse, reason: gitpeerv1alpha1.GitOperationFailedReason, message: "push lost", recon: true},
		"wait":                   {err: &Waiting{Reason: gitpeerv1alpha1.SecretNotFoundReason, Err: errors.New("no secret")}, ready: metav1.ConditionFalse, reason: gitpeerv1alpha1.SecretNotFoundReason, message: "no secret", recon: true},
		"stall":                  {err: &Stalling{Reason: gitpeerv1alpha1.HistoryRewrittenReason, Err: errors.New("rewritten")}, ready: metav1.ConditionFalse, reason: gitpeerv1alpha1.HistoryRewrittenReason, message: "rewritten", stalled: true, generation: true},
		"suspended":              {set: []func(*gitpeerv1alpha1.PeeringRepository){good}, suspend: true, generation: true},
		"direct mode":            {set: []func(*gitpeerv1alpha1.PeeringRepository){good}, direct: true, ready: metav1.ConditionTrue, reason: meta.SucceededReason, message: "at abc: 0 peering(s); " + consumer.DirectModeWarning, generation: true},
	} {
		t.Run(name, func(t *testing.T) {
			obj := &gitpeerv1alpha1.PeeringRepository{ObjectMeta: metav1.ObjectMeta{Generation: 3}}
			obj.Spec.Suspend = tc.suspend
			if tc.direct {
				obj.Spec.Consumer = &gitpeerv1alpha1.ConsumerSpec{Direct: true}
			}
			obj.Status.LastProcessedCommit = "abc"
			markReconciling(obj, meta.ProgressingReason, "reconciling generation 3")
			for _, set := range tc.set {
				set(obj)
			}
			(&PeeringRepositoryReconciler{}).summarize(obj, tc.err)
			ready := getCondition(obj, meta.ReadyCondition)
			switch {
			case tc.suspend && ready != nil:
				t.Fatalf("Ready %+v on a suspended object (summarize leaves it to Reconcile)", ready)
			case !tc.suspend && (ready == nil || ready.Status != tc.ready || ready.Reason != tc.reason || ready.Message != tc.message || ready.ObservedGeneration != 3):
				t.Fatalf("Ready %+v, want %s %s %q at generation 3", ready, tc.ready, tc.reason, tc.message)
			}
			if got := isTrue(obj, meta.StalledCondition); got != tc.stalled {
				t.Errorf("Stalled %v, want %v", got, tc.stalled)
			}
			if got := isTrue(obj, meta.ReconcilingCondition); got != (tc.recon || tc.suspend) {
				t.Errorf("Reconciling %v, want %v", got, tc.recon || tc.suspend)
			}
			if got := obj.Status.ObservedGeneration == 3; got != tc.generation {
				t.Errorf("observedGeneration %d recorded: %v, want %v", obj.Status.ObservedGeneration, got, tc.generation)
			}
			for i := 1; i < len(obj.Status.Conditions); i++ {
				if a, b := obj.Status.Conditions[i-1], obj.Status.Conditions[i]; conditionWeight(a) > conditionWeight(b) || (conditionWeight(a) == conditionWeight(b) && a.Type > b.Type) {
					t.Errorf("conditions out of order: %s before %s", a.Type, b.Type)
				}
			}
		})
	}
}

// TestConditionTransitionTime: a condition's LastTransitionTime changes only
// when its status flips; its reason, message and observed generation follow
// every set.
func TestConditionTransitionTime(t *testing.T) {
	obj := &gitpeerv1alpha1.PeeringRepository{ObjectMeta: metav1.ObjectMeta{Generation: 1}}
	markFalse(obj, meta.ReadyCondition, gitpeerv1alpha1.GitOperationFailedReason, "down")
	long := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	obj.Status.Conditions[0].LastTransitionTime = long

	obj.Generation = 2
	markFalse(obj, meta.ReadyCondition, gitpeerv1alpha1.RejectedReason, "still down")
	c := getCondition(obj, meta.ReadyCondition)
	if !c.LastTransitionTime.Equal(&long) || c.Reason != gitpeerv1alpha1.RejectedReason || c.Message != "still down" || c.ObservedGeneration != 2 {
		t.Fatalf("same status: %+v; want the transition time kept, the rest updated", c)
	}
	markTrue(obj, meta.ReadyCondition, meta.SucceededReason, "up")
	if c := getCondition(obj, meta.ReadyCondition); c.LastTransitionTime.Equal(&long) || c.Status != metav1.ConditionTrue {
		t.Fatalf("status flipped: %+v; want a new transition time", c)
	}
	markStalled(obj, gitpeerv1alpha1.HistoryRewrittenReason, "rewritten")
	markReconciling(obj, meta.ProgressingReason, "again")
	if getCondition(obj, meta.StalledCondition) != nil || !isTrue(obj, meta.ReconcilingCondition) {
		t.Fatalf("Reconciling must replace Stalled: %+v", obj.Status.Conditions)
	}
	markStalled(obj, gitpeerv1alpha1.HistoryRewrittenReason, "rewritten")
	if getCondition(obj, meta.ReconcilingCondition) != nil || !isTrue(obj, meta.StalledCondition) {
		t.Fatalf("Stalled must replace Reconciling: %+v", obj.Status.Conditions)
	}
}

// TestWriteStatus: the status is written with a merge patch of the status
// subresource over the latest object, a concurrent write of the object costs
// a retry, not the round; an unchanged status is not written; conflicts that
// persist (a stale cache) give up as an API outage, retried with backoff.
func TestWriteStatus(t *testing.T) {
	obj := &gitpeerv1alpha1.PeeringRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", Generation: 1}}
	var patches []string
	conflicts := 0 // the next patches that conflict
	c := fake.NewClientBuilder().WithScheme(apis.NewScheme()).WithObjects(obj).WithStatusSubresource(obj).
		WithInterceptorFuncs(interceptor.Funcs{SubResourcePatch: func(ctx context.Context, c client.Client, sub string, o client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			patches = append(patches, sub+" "+string(p.Type()))
			if conflicts > 0 {
				conflicts--
				return apierrors.NewConflict(schema.GroupResource{Group: "gitpeer.io", Resource: "peeringrepositories"}, o.GetName(), errors.New("stale"))
			}
			return c.SubResource(sub).Patch(ctx, o, p, opts...)
		}}).Build()
	r := &PeeringRepositoryReconciler{Client: c}
	ctx := context.Background()
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatal(err)
	}
	before := obj.DeepCopy()
	// Another writer changes the object during the round; the first patch conflicts.
	other := obj.DeepCopy()
	other.Annotations = map[string]string{"x": "y"}
	if err := c.Update(ctx, other); err != nil {
		t.Fatal(err)
	}
	conflicts = 1
	markTrue(obj, meta.ReadyCondition, meta.SucceededReason, "ok")
	obj.Status.LastProcessedCommit = "abc"
	if err := r.writeStatus(ctx, before, obj); err != nil {
		t.Fatalf("writeStatus after a concurrent write: %v", err)
	}
	if len(patches) != 2 || patches[1] != "status application/merge-patch+json" {
		t.Fatalf("patches %q, want a conflict, then a merge patch of the status", patches)
	}
	got := &gitpeerv1alpha1.PeeringRepository{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), got); err != nil {
		t.Fatal(err)
	}
	if !isTrue(got, meta.ReadyCondition) || got.Status.LastProcessedCommit != "abc" || got.Annotations["x"] != "y" {
		t.Fatalf("stored %+v", got)
	}
	quiet := got.DeepCopy()
	markTrue(got, meta.ReadyCondition, meta.SucceededReason, "ok")
	if err := r.writeStatus(ctx, quiet, got); err != nil || len(patches) != 2 {
		t.Fatalf("an unchanged status was written: %v, %q", err, patches)
	}

	conflicts = 100
	got.Status.LastProcessedCommit = "def"
	err := r.writeStatus(ctx, quiet, got)
	if err == nil {
		t.Fatal("persistent conflicts: written")
	}
	if reason := reasonOf(typedError(got, fmt.Errorf("writing the status: %w", err))); reason != gitpeerv1alpha1.KubernetesAPIUnavailableReason {
		t.Fatalf("persistent conflicts: %v reported as %s", err, reason)
	}
}
