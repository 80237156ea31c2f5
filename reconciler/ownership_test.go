package reconciler

import (
	"testing"
	"time"

	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/vocabulary"
)

func TestIssuedRecords(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	notAfter := now.Add(time.Hour)
	records, changed := vocabulary.WithIssued(nil, "ab", notAfter)
	if !changed || len(records) != 1 || records[0].Serial != "ab" || !records[0].NotAfter.Equal(notAfter) {
		t.Fatalf("WithIssued = %+v, %v", records, changed)
	}
	if again, changed := vocabulary.WithIssued(records, "ab", notAfter); changed || len(again) != 1 {
		t.Errorf("the same certificate twice: %+v, %v", again, changed)
	}
	records = append(records, vocabulary.IssuedRecord{Serial: "old", NotAfter: now.Add(-time.Minute)})
	revoked, changed := vocabulary.WithRevoked(records, now)
	if !changed || len(revoked) != 1 || revoked[0].RevokedAt == nil || !revoked[0].RevokedAt.Equal(now) {
		t.Fatalf("WithRevoked = %+v, %v; want the expired record dropped and the other revoked now", revoked, changed)
	}
	if records[0].RevokedAt != nil {
		t.Error("WithRevoked changed its input")
	}
	if again, changed := vocabulary.WithRevoked(revoked, now.Add(time.Minute)); changed || !again[0].RevokedAt.Equal(now) {
		t.Errorf("revoking twice: %+v, %v; want the first revocation time kept", again, changed)
	}
}

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
			s := &session{r: &PeeringRepositoryReconciler{}, obj: obj, adoptionFailed: tc.adoptionFailed}
			if got := s.migratingOwnership(); got != tc.migrating {
				t.Errorf("migratingOwnership = %t, want %t", got, tc.migrating)
			}
			s.recordOwnershipVersion()
			if obj.Status.OwnershipVersion != tc.recorded {
				t.Errorf("ownershipVersion = %d, want %d", obj.Status.OwnershipVersion, tc.recorded)
			}
		})
	}
}
