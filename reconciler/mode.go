package reconciler

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
)

// modeName names the session's mode as mode records do.
func (s *session) modeName() string {
	if s.liqo.Active {
		return gitpeerv1alpha1.PeeringModeLiqo
	}
	return gitpeerv1alpha1.PeeringModeStandalone
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
