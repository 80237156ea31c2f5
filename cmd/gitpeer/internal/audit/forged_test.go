package audit

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

// TestForgedTrailers: an unsigned commit, backdated to 1990 and authored as
// "gitpeer", that claims the agent revoked consumer-1 is read where the
// commit graph puts it (last), not where its date would sort it, and as a
// claim: it is not shown as the agent's.
func TestForgedTrailers(t *testing.T) {
	h := buildHistory(t, ".")
	h.tick = time.Date(1990, 1, 1, 0, 0, 0, 0, time.UTC)
	h.git("gitpeer|gitpeer@localhost", "commit", "-q", "--allow-empty", "-m",
		"Revoke identity of consumer-1 on provider-a\n\nGitpeer-Action: revoke\nGitpeer-Provider: provider-a\nGitpeer-Consumer: consumer-1\n")
	events, err := Read(h.dir, Options{Consumer: "consumer-1"})
	if err != nil {
		t.Fatal(err)
	}
	var js bytes.Buffer
	if err := Print(&js, events, "json"); err != nil {
		t.Fatal(err)
	}
	var decoded []map[string]any
	if err := json.Unmarshal(js.Bytes(), &decoded); err != nil {
		t.Fatal(err)
	}
	last := decoded[len(decoded)-1]
	if last["time"] != "1990-01-01T00:01:00Z" || last["event"] != Revoked {
		t.Fatalf("the backdated commit is not last: %s", js.String())
	}
	if last["source"] != SourceClaim {
		t.Fatalf("the forged revocation is shown as %v, want %q: %v", last["source"], SourceClaim, last)
	}
}
