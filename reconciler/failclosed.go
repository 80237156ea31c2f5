package reconciler

import (
	"context"

	"github.com/gitpeer/gitpeer/reconciler/plan/provider"
)

// recordSliceCertificates records the certificates Liqo issued for the
// consumer's ResourceSlices, by slice, before a drain: Liqo's Drained deletes
// the slices, after which the agent, which may not list Secrets, can no
// longer find them, and a later revocation or re-peering refusal must still
// know their serials. Their caches stay: Liqo's ResourceSlice controller
// writes a deleted one again while its slice is there; a rekey or a
// revocation deletes them by the recorded name once the slice is gone
// (deleteGoneSliceCaches).
func (s liqoProvider) recordSliceCertificates(ctx context.Context, consumer, ns string) error {
	drained, err := s.liqoReplicated(ctx, consumer, ns, provider.LiqoDrainedKinds)
	if err != nil {
		return err
	}
	return s.recordLiqoCertificates(ctx, consumer, ns, drained, liqoCaches(drained)[1:])
}
