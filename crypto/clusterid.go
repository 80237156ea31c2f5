package crypto

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// ValidateClusterID checks that id is a valid cluster ID: an RFC 1123 label
// of at most 63 characters (^[a-z0-9]([-a-z0-9]*[a-z0-9])?$). Failures are
// *Error with RuleClusterID.
func ValidateClusterID(id string) error {
	if msgs := validation.IsDNS1123Label(id); len(msgs) > 0 {
		return newError(RuleClusterID, nil, "cluster ID %q is invalid: %s", id, strings.Join(msgs, "; "))
	}
	return nil
}
