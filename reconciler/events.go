package reconciler

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func (r *PeeringRepositoryReconciler) event(obj client.Object, eventType, reason, format string, args ...any) {
	r.eventAbout(obj, eventType, reason, "", format, args...)
}

// Limits of events.k8s.io/v1: longer events are refused by the API server.
const (
	eventActionLimit = 128
	eventNoteLimit   = 1024
)

// eventAbout records an event about subject (a file path or a peer). The
// recorder aggregates events by regarding object, type, reason and action,
// keeping only the first note of a series, so the action names the subject
// and a digest of the note: otherwise a second bad file (or the same file with
// a new problem) would only bump the count of the first event, and its path
// and reason would never be shown. Identical notes still aggregate. Notes,
// which may quote hostile input, are cut to the API's limit.
func (r *PeeringRepositoryReconciler) eventAbout(obj client.Object, eventType, reason, subject, format string, args ...any) {
	if r.Recorder == nil {
		return
	}
	note := truncate(fmt.Sprintf(format, args...), eventNoteLimit)
	sum := sha256.Sum256([]byte(note))
	digest := " " + hex.EncodeToString(sum[:4])
	action := reason
	if subject != "" {
		action += " " + subject
	}
	action = truncate(action, eventActionLimit-len(digest)) + digest
	r.Recorder.Eventf(obj, nil, eventType, reason, action, "%s", note)
}

// truncate cuts s to at most n bytes, on a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n-len("...")]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "..."
}

// routineEvents gathers a provider round's routine steps by event reason
// (nonce issued, identity issued or renewed, peering revoked), recorded as
// one Normal event per reason and round (recordRoutine) rather than one per
// peering: at 10,000 peerings per-peering events are noise, cost an API
// write each, and the recorder keeps each one at least 6 minutes (client-go's
// series cache: 12 MB after 10,000 identities, BenchmarkRoundEventsMemory).
// Warnings stay per peering, but overdue renewals (warn): an outage stalls
// every renewal due at once. Each step's detail stays in the commit
// trailers (`gitpeer audit`), its phase in the status and the metrics.
type routineEvents struct {
	mu      sync.Mutex
	reasons []string               // in the order first seen
	tallies map[string]*eventTally // by reason
}

// eventTally counts the steps of one reason and lists the first of them,
// as many as an event's note holds.
type eventTally struct {
	kind   string // the event's type: Normal, or Warning (warn)
	what   string // what the steps did, e.g. "nonce issued"
	count  int
	listed []string
	size   int // bytes of listed, joined
}

// add notes a step of reason, described by item (the consumer, and what
// identifies the step), which did what.
func (e *routineEvents) add(reason, what, item string) {
	e.note(corev1.EventTypeNormal, reason, what, item)
}

// warn notes a peering of reason that needs attention, recorded as a Warning.
func (e *routineEvents) warn(reason, what, item string) {
	e.note(corev1.EventTypeWarning, reason, what, item)
}

// note notes item under reason, recorded as an event of type kind.
func (e *routineEvents) note(kind, reason, what, item string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	t := e.tallies[reason]
	if t == nil {
		if e.tallies == nil {
			e.tallies = map[string]*eventTally{}
		}
		t = &eventTally{kind: kind, what: what}
		e.tallies[reason] = t
		e.reasons = append(e.reasons, reason)
	}
	t.count++
	if t.size+len(item) <= eventNoteLimit-len(what)-64 { // the rest of the note: count, "and N more"
		t.listed = append(t.listed, item)
		t.size += len(item) + len(", ")
	}
}

// tallied is the event of one reason of a round: its type, reason and note.
type tallied struct{ kind, reason, note string }

// events returns the event of each reason noted, in order, and forgets them.
func (e *routineEvents) events() []tallied {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []tallied
	for _, reason := range e.reasons {
		t := e.tallies[reason]
		note := fmt.Sprintf("%s for %d consumer(s): %s", t.what, t.count, strings.Join(t.listed, ", "))
		if more := t.count - len(t.listed); more > 0 {
			note += fmt.Sprintf(", and %d more", more)
		}
		out = append(out, tallied{t.kind, reason, note})
	}
	e.reasons, e.tallies = nil, nil
	return out
}
