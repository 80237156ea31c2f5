package reconciler

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
)

// The condition helpers below keep the meaning Flux's runtime/conditions
// gave the PeeringRepository's conditions (that package links Gomega into
// the binary): every condition set carries the object's generation as
// ObservedGeneration, its LastTransitionTime changes only when its status
// flips (apimeta.SetStatusCondition), Reconciling and Stalled exclude each
// other, and the list is ordered Stalled, Reconciling, Ready, then by type.

// setCondition sets the condition t of obj.
func setCondition(obj *gitpeerv1alpha1.PeeringRepository, t string, status metav1.ConditionStatus, reason, format string, args ...any) {
	apimeta.SetStatusCondition(&obj.Status.Conditions, metav1.Condition{
		Type: t, Status: status, Reason: reason, Message: fmt.Sprintf(format, args...), ObservedGeneration: obj.Generation,
	})
}

// markTrue sets the condition t of obj to True.
func markTrue(obj *gitpeerv1alpha1.PeeringRepository, t, reason, format string, args ...any) {
	setCondition(obj, t, metav1.ConditionTrue, reason, format, args...)
}

// markFalse sets the condition t of obj to False.
func markFalse(obj *gitpeerv1alpha1.PeeringRepository, t, reason, format string, args ...any) {
	setCondition(obj, t, metav1.ConditionFalse, reason, format, args...)
}

// markReconciling sets Reconciling True and removes Stalled.
func markReconciling(obj *gitpeerv1alpha1.PeeringRepository, reason, format string, args ...any) {
	deleteCondition(obj, meta.StalledCondition)
	markTrue(obj, meta.ReconcilingCondition, reason, format, args...)
}

// markStalled sets Stalled True and removes Reconciling.
func markStalled(obj *gitpeerv1alpha1.PeeringRepository, reason, format string, args ...any) {
	deleteCondition(obj, meta.ReconcilingCondition)
	markTrue(obj, meta.StalledCondition, reason, format, args...)
}

// deleteCondition removes the condition t of obj.
func deleteCondition(obj *gitpeerv1alpha1.PeeringRepository, t string) {
	apimeta.RemoveStatusCondition(&obj.Status.Conditions, t)
}

// getCondition returns the condition t of obj, or nil.
func getCondition(obj *gitpeerv1alpha1.PeeringRepository, t string) *metav1.Condition {
	return apimeta.FindStatusCondition(obj.Status.Conditions, t)
}

// isTrue reports whether obj has the condition t, True.
func isTrue(obj *gitpeerv1alpha1.PeeringRepository, t string) bool {
	return apimeta.IsStatusConditionTrue(obj.Status.Conditions, t)
}

// isFalse reports whether obj has the condition t, False.
func isFalse(obj *gitpeerv1alpha1.PeeringRepository, t string) bool {
	return apimeta.IsStatusConditionFalse(obj.Status.Conditions, t)
}

// conditionWeight orders the Flux summary conditions first: Stalled,
// Reconciling, Ready, then the others.
func conditionWeight(c metav1.Condition) int {
	switch c.Type {
	case meta.StalledCondition:
		return 0
	case meta.ReconcilingCondition:
		return 1
	case meta.ReadyCondition:
		return 2
	}
	return 3
}

// sortConditions orders the conditions of obj by weight, then by type, so
// that the same conditions always give the same list (and the same status,
// with no needless write).
func sortConditions(obj *gitpeerv1alpha1.PeeringRepository) {
	slices.SortFunc(obj.Status.Conditions, func(a, b metav1.Condition) int {
		return cmp.Or(cmp.Compare(conditionWeight(a), conditionWeight(b)), cmp.Compare(a.Type, b.Type))
	})
}

// writeStatus writes the status obj reached in a round to the status
// subresource, and nothing when the round changed nothing (before is the
// object read at the start of the round).
//
// It does what Flux's patch helper, used before, did for the conditions it
// owned (all of ours): read the latest object (from the cache), apply the
// round's status to it and send the difference as a merge patch with
// resourceVersion (optimistic lock), re-reading and retrying on a conflict
// a few times. The status is the agent's alone, so the patch carries the
// whole of what changed; a concurrent edit of the spec or metadata only
// costs a retry. Lists (conditions, peerings) are replaced whole, as the
// helper's status patch did. When the conflicts persist, as after an API
// server restart until the cache has caught up, it gives up
// (wait.ErrorInterrupted): the round is reported as KubernetesAPIUnavailable
// and retried with backoff, never written from a stale view.
func (r *PeeringRepositoryReconciler) writeStatus(ctx context.Context, before, obj *gitpeerv1alpha1.PeeringRepository) error {
	if equality.Semantic.DeepEqual(before.Status, obj.Status) {
		return nil
	}
	backoff := wait.Backoff{Steps: 5, Duration: 100 * time.Millisecond, Jitter: 1.0}
	return wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
		latest := &gitpeerv1alpha1.PeeringRepository{}
		if err := r.Get(ctx, client.ObjectKeyFromObject(obj), latest); err != nil {
			return false, err
		}
		patch := client.MergeFromWithOptions(latest.DeepCopy(), client.MergeFromWithOptimisticLock{})
		latest.Status = obj.Status
		err := r.Status().Patch(ctx, latest, patch, client.FieldOwner("gitpeer"))
		if apierrors.IsConflict(err) {
			return false, nil
		}
		return err == nil, err
	})
}
