package reconciler

import (
	"testing"

	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
)

// TestOwnershipMigration: only a PeeringRepository an earlier version processed
// migrates, once; a round with a failed adoption retries; a new one records the
// current version at once.
func TestOwnershipMigration(t *testing.T) {
	for name, tc := range map[string]struct {
		lastCommit     string
		version        int32
		adoptionFailed bool
		migrating      bool
		recorded       int32
	}{
		"new PeeringRepository":            {"", 0, false, false, gitpeerv1alpha1.CurrentOwnershipVersion},
		"processed by an earlier version":  {"abc", 0, false, true, gitpeerv1alpha1.CurrentOwnershipVersion},
		"earlier version, adoption failed": {"abc", 0, true, true, 0},
		"already migrated":                 {"abc", gitpeerv1alpha1.CurrentOwnershipVersion, false, false, gitpeerv1alpha1.CurrentOwnershipVersion},
	} {
		t.Run(name, func(t *testing.T) {
			obj := &gitpeerv1alpha1.PeeringRepository{Status: gitpeerv1alpha1.PeeringRepositoryStatus{LastProcessedCommit: tc.lastCommit, OwnershipVersion: tc.version}}
			s := sessionOf(&PeeringRepositoryReconciler{}, obj)
			s.owned.adoptionFailed = tc.adoptionFailed
			if got := s.owning().migratingOwnership(); got != tc.migrating {
				t.Errorf("migratingOwnership = %t, want %t", got, tc.migrating)
			}
			s.owning().recordOwnershipVersion()
			if obj.Status.OwnershipVersion != tc.recorded {
				t.Errorf("ownershipVersion = %d, want %d", obj.Status.OwnershipVersion, tc.recorded)
			}
		})
	}
}
