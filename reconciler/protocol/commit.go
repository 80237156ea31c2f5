package protocol

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// The trailers of the agent's commits. Every commit the agent writes names
// the action it takes and the peering it concerns; an identity commit also
// names the certificate's serial (hexadecimal) and expiry (RFC 3339).
// `gitpeer audit` and `gitpeer records` read a peering's history from them.
const (
	TrailerAction   = "Gitpeer-Action"
	TrailerProvider = "Gitpeer-Provider"
	TrailerConsumer = "Gitpeer-Consumer"
	TrailerSerial   = "Gitpeer-Serial"
	TrailerExpires  = "Gitpeer-Expires"
	// TrailerSummary, in a commit of several steps (one per round), is the
	// one-line summary of the step whose trailers it is among.
	TrailerSummary = "Gitpeer-Summary"
	// TrailerOverride, on the commit of a Tenant's first identity, names the
	// admin's overrides (revival, rekey annotations: "key=value, ...") the
	// Tenant was applied under, each used once.
	TrailerOverride = "Gitpeer-Override"
)

// The actions the agent records in the Gitpeer-Action trailer.
const (
	// ActionRequest: a consumer commits request.yaml.
	ActionRequest = "request"
	// ActionIssueNonce: a provider commits nonce.yaml.
	ActionIssueNonce = "issue-nonce"
	// ActionProposeTenant: a consumer proposes tenant.yaml for review.
	ActionProposeTenant = "propose-tenant"
	// ActionIssueIdentity: a provider commits the first identity.yaml of a Tenant.
	ActionIssueIdentity = "issue-identity"
	// ActionRenewIdentity: a provider commits a renewed identity.yaml.
	ActionRenewIdentity = "renew-identity"
	// ActionRevoke: a provider removes a peering whose tenant.yaml left the branch.
	ActionRevoke = "revoke"
	// ActionPublishTerms: a provider commits its terms.yaml (a provider's, no consumer's).
	ActionPublishTerms = "publish-terms"
)

// Actions lists every action, in handshake order, then publish-terms.
var Actions = []string{ActionRequest, ActionIssueNonce, ActionProposeTenant, ActionIssueIdentity, ActionRenewIdentity, ActionRevoke, ActionPublishTerms}

// Trailer is one "Key: value" line in a commit message's trailer block.
type Trailer struct {
	Key, Value string
}

// Message is the message of a commit the agent writes: a subject line, an
// optional body and the trailers above. It is the gitsync.CommitMessage of
// the agent's writes.
type Message struct {
	Subject string
	Body    string
	// Action, Provider and Consumer become the Gitpeer-Action,
	// Gitpeer-Provider and Gitpeer-Consumer trailers when set.
	Action, Provider, Consumer string
	// Extra trailers follow, e.g. {TrailerSerial, "42"}.
	Extra []Trailer
}

var trailerKey = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]*$`)

// Trailers returns the Gitpeer-* trailers of Action, Provider and Consumer
// followed by Extra.
func (m Message) Trailers() []Trailer {
	return append(Record{Action: m.Action, Provider: m.Provider, Consumer: m.Consumer}.Trailers(), m.Extra...)
}

// String renders the message as git expects it: subject, blank line, body,
// blank line, trailers. Newlines in the subject and trailer values are folded
// into spaces so they cannot forge extra trailers.
func (m Message) String() (string, error) {
	var b strings.Builder
	subject := oneLine(m.Subject)
	if subject == "" {
		return "", fmt.Errorf("protocol: commit message needs a subject")
	}
	b.WriteString(subject + "\n")
	if body := strings.TrimSpace(m.Body); body != "" {
		b.WriteString("\n" + body + "\n")
	}
	trailers := m.Trailers()
	if len(trailers) > 0 {
		b.WriteString("\n")
	}
	for _, t := range trailers {
		if !trailerKey.MatchString(t.Key) {
			return "", fmt.Errorf("protocol: invalid trailer key %q", t.Key)
		}
		fmt.Fprintf(&b, "%s: %s\n", t.Key, oneLine(t.Value))
	}
	return b.String(), nil
}

// ParseTrailers returns the trailers in the last paragraph of a commit message.
func ParseTrailers(message string) []Trailer {
	paras := strings.Split(strings.TrimSpace(message), "\n\n")
	if len(paras) < 2 {
		return nil
	}
	var ts []Trailer
	for _, line := range strings.Split(paras[len(paras)-1], "\n") {
		k, v, ok := strings.Cut(line, ": ")
		if !ok || !trailerKey.MatchString(k) {
			return nil
		}
		ts = append(ts, Trailer{Key: k, Value: v})
	}
	return ts
}

// Record is one step of a peering as an agent commit's trailers record it.
type Record struct {
	Action, Provider, Consumer string
	// Summary is the step's one-line summary in a commit of several steps.
	Summary string
	// Serial and Expires are set on identity commits.
	Serial, Expires string
	// Override names the overrides an identity was issued under, if any.
	Override string
}

// Trailers returns the Gitpeer-* trailers of r's set fields, Gitpeer-Action
// first: Records reads them back. A commit that records several peerings
// carries the trailers of each in turn.
func (r Record) Trailers() []Trailer {
	var ts []Trailer
	for _, t := range []Trailer{{TrailerAction, r.Action}, {TrailerProvider, r.Provider}, {TrailerConsumer, r.Consumer}, {TrailerSummary, r.Summary}, {TrailerSerial, r.Serial}, {TrailerExpires, r.Expires}, {TrailerOverride, r.Override}} {
		if t.Value != "" {
			ts = append(ts, t)
		}
	}
	return ts
}

// Records returns the steps a commit message records: one per Gitpeer-Action
// trailer, with the Gitpeer-* trailers that follow it up to the next one. A
// commit made by a person, without Gitpeer-Action, records none; an empty
// Gitpeer-Action records nothing either.
func Records(message string) []Record {
	var out []Record
	for _, t := range ParseTrailers(message) {
		if t.Key == TrailerAction {
			out = append(out, Record{Action: t.Value})
			continue
		}
		if len(out) == 0 {
			continue
		}
		r := &out[len(out)-1]
		switch t.Key {
		case TrailerProvider:
			r.Provider = t.Value
		case TrailerConsumer:
			r.Consumer = t.Value
		case TrailerSummary:
			r.Summary = t.Value
		case TrailerSerial:
			r.Serial = t.Value
		case TrailerExpires:
			r.Expires = t.Value
		case TrailerOverride:
			r.Override = t.Value
		}
	}
	return slices.DeleteFunc(out, func(r Record) bool { return r.Action == "" })
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
