package crypto

import (
	"strings"
	"testing"
)

func TestValidateClusterID(t *testing.T) {
	for _, id := range []string{"cl-consumer", "a", "0", "cl01", strings.Repeat("a", 63)} {
		requireNoError(t, ValidateClusterID(id))
	}
	for _, id := range []string{"", strings.Repeat("a", 64), "Cl", "-a", "a-", "a.b", "a_b", "a b", "ä"} {
		requireRule(t, ValidateClusterID(id), RuleClusterID, "cluster ID")
	}
}
