package protocol

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/gitpeer/gitpeer/vocabulary"
)

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
	// Extra trailers follow, e.g. {vocabulary.TrailerSerial, "42"}.
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
	for _, t := range []Trailer{{vocabulary.TrailerAction, r.Action}, {vocabulary.TrailerProvider, r.Provider}, {vocabulary.TrailerConsumer, r.Consumer}, {vocabulary.TrailerSummary, r.Summary}, {vocabulary.TrailerSerial, r.Serial}, {vocabulary.TrailerExpires, r.Expires}, {vocabulary.TrailerOverride, r.Override}} {
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
		if t.Key == vocabulary.TrailerAction {
			out = append(out, Record{Action: t.Value})
			continue
		}
		if len(out) == 0 {
			continue
		}
		r := &out[len(out)-1]
		switch t.Key {
		case vocabulary.TrailerProvider:
			r.Provider = t.Value
		case vocabulary.TrailerConsumer:
			r.Consumer = t.Value
		case vocabulary.TrailerSummary:
			r.Summary = t.Value
		case vocabulary.TrailerSerial:
			r.Serial = t.Value
		case vocabulary.TrailerExpires:
			r.Expires = t.Value
		case vocabulary.TrailerOverride:
			r.Override = t.Value
		}
	}
	return slices.DeleteFunc(out, func(r Record) bool { return r.Action == "" })
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
