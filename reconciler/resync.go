package reconciler

import (
	"context"
	"fmt"
	"maps"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/crypto"
)

// recordCarried does, for the issued peerings a resync that compared hashes
// carried (providerPlan.checked), the one thing their visit would do with
// what the agent does not watch: record the certificate in the consumer's
// applied Tenant in its records Secret (a visit's RecordSerial, or Liqo
// mode's recordIssued), restoring a record deleted behind the agent's back.
// It reads the Tenants from the cache and no document from the branch; the
// records Secrets are read once per round and written only if one lacks the
// certificate. A certificate that does not parse is left to the next visit.
func (s *session) recordCarried(ctx context.Context, p *providerPlan) error {
	if !p.checked {
		return nil
	}
	for _, c := range slices.Sorted(maps.Keys(p.carried)) {
		switch p.prev.Peerings[c].Status.Phase {
		case gitpeerv1alpha1.PhaseIssued, gitpeerv1alpha1.PhaseCordoned, gitpeerv1alpha1.PhaseDrained:
		default:
			continue // its visit records nothing
		}
		tenant := &authv1beta1.Tenant{}
		err := s.r.Get(ctx, client.ObjectKey{Namespace: authv1beta1.TenantNamespaceName(authv1beta1.ClusterID(c)), Name: c}, tenant)
		if apierrors.IsNotFound(err) || err == nil && (!s.owning().owns(tenant) || tenant.Status.AuthParams == nil) {
			continue // a change of the Tenant makes the next round visit the peering
		}
		if err != nil {
			return err
		}
		cert, err := crypto.ParseCertificatePEM(tenant.Status.AuthParams.SignedCRT)
		if err != nil {
			continue
		}
		if err := s.recordIssued(ctx, c, cert); err != nil {
			return fmt.Errorf("recording the certificate of %s: %w", c, err)
		}
	}
	return nil
}
