package reconciler

import (
	"context"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// quiet reports a round with nothing new to act on: neither the branch nor
// the spec changed since the last round, which ended Ready (so every write
// of that round landed). Such a round reads no Secret per peering: the nonces on the branch
// are the ones it committed from them. A certificate due for renewal still
// makes its peering act.
func (s *session) quiet() bool {
	return s.obj.Status.LastProcessedCommit == s.head.String() && s.obj.Generation == s.obj.Status.ObservedGeneration &&
		conditions.IsTrue(s.obj, meta.ReadyCondition)
}

// observedRecords returns the records Secret (nil if there is none), read
// from the API server once per round.
func (s *session) observedRecords(ctx context.Context) (*corev1.Secret, error) {
	if s.recordsSecret != nil || s.noRecords {
		return s.recordsSecret, nil
	}
	secret := &corev1.Secret{}
	if err := s.r.Get(ctx, s.issuedSecretKey(), secret); err != nil {
		if apierrors.IsNotFound(err) {
			s.noRecords = true
			return nil, nil
		}
		return nil, err
	}
	s.recordsSecret = secret
	return secret, nil
}
