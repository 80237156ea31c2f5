// Package verdict reports on one peering directory offline, file by file,
// with the rules the agents apply (package trust: Tenant signatures over the
// nonce beside them, the request key, CSR rules, terms, Identity
// certificates), and judges what a pull request changes. It needs no
// cluster: the rules that need a cluster's state are named, never passed.
// `gitpeer verify` runs it on every directory of a commit, and the consumer
// agent on the directory its pull request would produce.
package verdict

import (
	"time"

	"github.com/gitpeer/gitpeer/reconciler/protocol"
)

// Result is the verdict on one file.
type Result struct {
	// Path is the file's slash-separated path relative to the repository.
	Path string `json:"path"`
	// Valid is false when the agent would reject the file (or CI should).
	Valid bool `json:"valid"`
	// Reason says what was checked, or why the file is invalid.
	Reason string `json:"reason"`
	// Ignored marks files gitpeer does not read; they are listed only on request.
	Ignored bool `json:"ignored,omitempty"`
	// Directory marks the verdict on a peering directory as a whole (its Path
	// ends in "/"): what the provider does with it. It is not a file.
	Directory bool `json:"directory,omitempty"`
}

// Rules verdict cannot check without a cluster's state: a Tenant's result
// says they are left to the provider, an Identity's to the consumer.
const (
	ProviderChecks = "checked by the provider: the nonce against its Secret, the pinned key, revoked serials, whether it accepts a proxyURL"
	ConsumerChecks = "checked by the consumer: the CA against the anchor its admin configured (spec.consumer.trustedCAs), the certificate with a SelfSubjectReview against the provider"
)

// Peering returns a result for every document of pe that decoded, and a last
// one, Directory set, saying what the provider does with the directory.
func Peering(pe *protocol.Documents, now time.Time) []Result {
	return newDirectory(pe).check(now)
}
