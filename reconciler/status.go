package reconciler

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
// subresource, as a JSON merge patch from before, the object read at the
// start of the round; nothing is sent when the round changed nothing.
//
// Flux's patch helper, used before, patched the conditions it was told it
// owned (all of ours) over the latest object with an optimistic lock and
// retries on conflict, and the rest of the status with a plain merge patch.
// The agent is the status' only writer (one leader; `kubectl` and Flux-style
// tooling only annotate or edit the spec), so the lock bought nothing: a
// merge patch without resourceVersion never conflicts, never needs a re-read,
// and writes exactly the fields the round changed. Lists (conditions,
// peerings) are replaced whole, as the merge patch of the status did before;
// a condition another writer added during the round would be dropped, one
// present when the round began is kept.
func (r *PeeringRepositoryReconciler) writeStatus(ctx context.Context, before, obj *gitpeerv1alpha1.PeeringRepository) error {
	patch := client.MergeFrom(before)
	data, err := patch.Data(obj)
	if err != nil {
		return err
	}
	if string(data) == "{}" {
		return nil
	}
	return r.Status().Patch(ctx, obj, patch, client.FieldOwner("gitpeer"))
}
