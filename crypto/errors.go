package crypto

import "fmt"

// Rule names a rule that an artifact failed. It is stable and meant for
// programs (conditions, metrics, tests); Error.Message is meant for people.
type Rule string

// The rules enforced by this package.
const (
	RuleClusterID Rule = "ClusterID" // a cluster ID is not an RFC 1123 label
	RuleNonce     Rule = "Nonce"     // a nonce is not 64 bytes in standard base64
	RulePublicKey Rule = "PublicKey" // a public key does not parse or has a type or size not allowed
	RuleSignature Rule = "Signature" // a nonce signature does not verify
	RuleKeySecret Rule = "KeySecret" // the cluster key Secret is corrupt or holds another kind of key

	RuleCSRFormat       Rule = "CSRFormat"       // a CSR is not one well-formed, correctly self-signed PEM block
	RuleCSRCommonName   Rule = "CSRCommonName"   // a CSR's common name is not the expected cluster ID
	RuleCSROrganization Rule = "CSROrganization" // a CSR's organization is not exactly [liqo.io]
	RuleCSRSubject      Rule = "CSRSubject"      // a CSR's subject holds an attribute other than CN and O
	RuleCSRExtensions   Rule = "CSRExtensions"   // a CSR requests extensions (SANs included) or has attributes
	RuleCSRKey          Rule = "CSRKey"          // a CSR's key is not the Tenant's public key

	RuleCertificateFormat   Rule = "CertificateFormat"   // a certificate or CA bundle is not well-formed PEM
	RuleCertificateKey      Rule = "CertificateKey"      // a certificate is not for the expected key
	RuleCertificateValidity Rule = "CertificateValidity" // a certificate is outside its validity window
	RuleCertificateUsage    Rule = "CertificateUsage"    // a certificate lacks client-auth extended key usage
	RuleCertificateChain    Rule = "CertificateChain"    // a certificate does not chain to the given CA, or that CA is not a CA
)

// Error reports an artifact that breaks one of the package's rules.
// Retrieve it with errors.As; Err, when set, is the underlying cause.
type Error struct {
	Rule    Rule
	Message string
	Err     error
}

// Error returns the message, followed by the cause if there is one.
func (e *Error) Error() string {
	if e.Err != nil {
		return e.Message + ": " + e.Err.Error()
	}
	return e.Message
}

// Unwrap returns the underlying cause, if any.
func (e *Error) Unwrap() error { return e.Err }

// newError returns an *Error for rule with cause (may be nil) and a
// formatted message.
func newError(rule Rule, cause error, format string, args ...any) *Error {
	return &Error{Rule: rule, Message: fmt.Sprintf(format, args...), Err: cause}
}
