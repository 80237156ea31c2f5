package reconciler

import (
	"github.com/fluxcd/pkg/apis/meta"
)

// quiet reports a round with nothing new to act on: neither the branch nor
// the spec changed since the last round, which ended Ready (so every write
// of that round landed). Such a round reads no Secret per peering: the nonces on the branch
// are the ones it committed from them. A certificate due for renewal still
// makes its peering act.
func (s *session) quiet() bool {
	return s.obj.Status.LastProcessedCommit == s.head.String() && s.obj.Generation == s.obj.Status.ObservedGeneration &&
		isTrue(s.obj, meta.ReadyCondition)
}
