package reconciler

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"unicode/utf8"

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
