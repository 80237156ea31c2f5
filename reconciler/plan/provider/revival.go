package provider

import (
	"fmt"
	"time"

	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// RevivalBlocker returns the revoked certificate that still forbids binding
// the consumer again at now (the one valid longest), or nil.
func RevivalBlocker(records []vocabulary.IssuedRecord, now time.Time) *vocabulary.IssuedRecord {
	var out *vocabulary.IssuedRecord
	for i := range records {
		r := &records[i]
		if r.RevokedAt != nil && r.NotAfter.After(now) && (out == nil || r.NotAfter.After(out.NotAfter)) {
			out = r
		}
	}
	return out
}

// RevivalRefusal says why consumer, whose certificates are records, must not
// be bound again at now, or "" if it may: RBAC binds by user name, so a new
// binding would give every unexpired revoked certificate of it access again.
// An admin accepts that risk for one binding with the consumer's revival
// annotation (CheckTenant), which is then used up.
func RevivalRefusal(records []vocabulary.IssuedRecord, consumer string, now time.Time) string {
	blocker := RevivalBlocker(records, now)
	if blocker == nil {
		return ""
	}
	return fmt.Sprintf("revoked certificate %s is valid until %s; re-peering is refused until then (override, used once: annotation %s=%s on the PeeringRepository, which gives every unexpired revoked certificate of %s access again)",
		blocker.Serial, blocker.NotAfter.UTC().Format(time.RFC3339), gitpeerv1alpha1.RevivalAnnotationPrefix+consumer, gitpeerv1alpha1.AcceptRevivalValue, consumer)
}
