package gitsync

import (
	"fmt"
	"regexp"
	"strings"
)

// Trailer keys the agent writes on every commit.
const (
	TrailerAction   = "Gitpeer-Action"
	TrailerProvider = "Gitpeer-Provider"
	TrailerConsumer = "Gitpeer-Consumer"
	// TrailerSummary, in a commit of several steps, is the one-line summary
	// of the step whose trailers it is among (each step's trailers start
	// with its TrailerAction).
	TrailerSummary = "Gitpeer-Summary"
)

// Trailer is one "Key: value" line in a commit message's trailer block.
type Trailer struct {
	Key, Value string
}

// Message is a commit message: a subject line, an optional body and
// machine-readable trailers.
type Message struct {
	Subject string
	Body    string
	// Action, Provider and Consumer become the Gitpeer-* trailers when set.
	Action, Provider, Consumer string
	// Extra trailers follow, e.g. {"Gitpeer-Serial", "42"}.
	Extra []Trailer
}

var trailerKey = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]*$`)

// Trailers returns the Gitpeer-* trailers followed by Extra.
func (m Message) Trailers() []Trailer {
	var ts []Trailer
	for _, t := range []Trailer{{TrailerAction, m.Action}, {TrailerProvider, m.Provider}, {TrailerConsumer, m.Consumer}} {
		if t.Value != "" {
			ts = append(ts, t)
		}
	}
	return append(ts, m.Extra...)
}

// String renders the message as git expects it: subject, blank line, body,
// blank line, trailers. Newlines in the subject and trailer values are folded
// into spaces so they cannot forge extra trailers.
func (m Message) String() (string, error) {
	var b strings.Builder
	subject := oneLine(m.Subject)
	if subject == "" {
		return "", fmt.Errorf("gitsync: commit message needs a subject")
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
			return "", fmt.Errorf("gitsync: invalid trailer key %q", t.Key)
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

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
