package reconciler

import (
	"cmp"
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/reconciler/liqo"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// modeName names the session's mode as mode records do.
func (s *session) modeName() string {
	if s.liqo.Active {
		return gitpeerv1alpha1.PeeringModeLiqo
	}
	return gitpeerv1alpha1.PeeringModeStandalone
}

// checkMode lets the peering with peer go on when its tenant namespace nsObj
// (nil: none yet, a new peering) records the current mode, or records the
// switch a person accepted. Otherwise it stops it with the outcome of a
// peering left alone, reported (event, log, status.peerings reason
// ModeChanged), or of a failed switch.
func (s *session) checkMode(ctx context.Context, peer string, nsObj *corev1.Namespace) (outcome, bool) {
	if nsObj == nil {
		return outcome{}, false
	}
	recorded := cmp.Or(nsObj.Annotations[vocabulary.ModeAnnotation], gitpeerv1alpha1.PeeringModeStandalone)
	current, acceptKey := s.modeName(), gitpeerv1alpha1.SwitchModeAnnotationPrefix+peer
	switch liqo.DecideMode(recorded, current, s.obj.GetAnnotations()[acceptKey]) {
	case liqo.ModeGoOn:
		return outcome{}, false
	case liqo.ModeSwitch:
		err := s.switchMode(ctx, peer, nsObj, recorded, acceptKey)
		return outcome{err: err}, err != nil
	}
	msg := fmt.Sprintf("the peering with %s was made in %s mode but this cluster now runs in %s mode (%s): nothing but a revocation is done for it until a person re-peers (docs/liqo.md \"Switching modes\") and sets annotation %s=%s on this PeeringRepository",
		peer, recorded, current, s.liqo, acceptKey, current)
	log.FromContext(ctx).Info("peering left alone: its mode changed", "peer", peer, "recorded", recorded, "current", current)
	s.r.eventAbout(s.obj, corev1.EventTypeWarning, vocabulary.ReasonModeChanged, peer, "%s", msg)
	return outcome{phase: gitpeerv1alpha1.PhaseFailed, reason: vocabulary.ReasonModeChanged, message: msg}, true
}

// switchMode records the current mode on nsObj, as a person accepted with
// annotation acceptKey, which it then removes.
func (s *session) switchMode(ctx context.Context, peer string, nsObj *corev1.Namespace, recorded, acceptKey string) error {
	patch := client.MergeFrom(nsObj.DeepCopy())
	metav1.SetMetaDataAnnotation(&nsObj.ObjectMeta, vocabulary.ModeAnnotation, s.modeName())
	if err := s.r.Patch(ctx, nsObj, patch); err != nil {
		return err
	}
	if err := s.consumeAnnotation(ctx, acceptKey); err != nil {
		return err
	}
	log.FromContext(ctx).Info("peering switched mode", "peer", peer, "from", recorded, "to", s.modeName())
	s.r.eventAbout(s.obj, corev1.EventTypeNormal, vocabulary.ReasonModeSwitched, peer, "the peering with %s goes on in %s mode (was %s), accepted by annotation %s",
		peer, s.modeName(), recorded, acceptKey)
	return nil
}

// consumeAnnotation removes the annotation key from the PeeringRepository,
// once the agent did what it asked.
func (s *session) consumeAnnotation(ctx context.Context, key string) error {
	if err := s.removeAnnotation(ctx, key); err != nil {
		return err
	}
	delete(s.obj.Annotations, key)
	return nil
}

// removeAnnotation removes the annotation key from the PeeringRepository in
// the cluster and leaves the session's copy as the round read it: the
// peerings of a provider's round, which read it at once, remove their own
// overrides so (consumeOverrides).
func (s *session) removeAnnotation(ctx context.Context, key string) error {
	// Patch a copy: the response must not replace the status this round is building.
	obj := s.obj.DeepCopy()
	objPatch := client.MergeFrom(obj.DeepCopy())
	delete(obj.Annotations, key)
	return s.r.Patch(ctx, obj, objPatch)
}
