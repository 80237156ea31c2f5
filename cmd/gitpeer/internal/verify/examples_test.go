package verify

import (
	"os"
	"testing"
)

// TestExamplesRepository checks the committed sample repository: every
// document valid, CODEOWNERS ignored. Regenerate it with `go generate ./examples`.
func TestExamplesRepository(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("../../../../examples/repository")); err != nil {
		t.Fatal(err)
	}
	results, err := resultsOf(Check(commitAll(t, dir), Options{}))
	if err != nil {
		t.Fatal(err)
	}
	documents := 0
	for _, r := range results {
		if !r.Valid {
			t.Errorf("%s: %s", r.Path, r.Reason)
		}
		if !r.Ignored && !r.Directory {
			documents++
		}
	}
	if documents != 7 {
		t.Fatalf("want the 6 documents of consumer-green and consumer-blue and provider-eu/terms.yaml, got %+v", results)
	}
}
