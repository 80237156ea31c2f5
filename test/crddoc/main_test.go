package main

import (
	"os"
	"strings"
	"testing"
)

// TestDocumentIsCurrent checks docs/configuration.md holds the table the CRD gives today, and that
// the table names the fields of the API types.
func TestDocumentIsCurrent(t *testing.T) {
	const doc = "../../docs/configuration.md"
	want, err := Update("../../config/crd/bases/gitpeer.io_peeringrepositories.yaml", doc)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("%s is not the CRD's: run `make generate`", doc)
	}
	for _, row := range []string{"| `url` | string | required |", "| `provider.certificateTTL` | string | `24h` |",
		"| `consumer.trustedCAs[].provider` | string | required |", "| `liqo.mode` | string: `Auto`, `Enabled`, `Disabled` | `Auto` |"} {
		if !strings.Contains(string(got), row) {
			t.Errorf("the table has no row %q", row)
		}
	}
}

// TestText checks a description becomes one cell GitHub shows as written.
func TestText(t *testing.T) {
	got := text("Path holds the <providerID>/<consumerID>/\nfolders | e.g. \"edge-*\", known_hosts")
	if want := `Path holds the &lt;providerID&gt;/&lt;consumerID&gt;/ folders \| e.g. "edge-\*", known\_hosts`; got != want {
		t.Errorf("text = %s, want %s", got, want)
	}
}

// TestMarkersRequired checks a document without the markers is refused, not overwritten.
func TestMarkersRequired(t *testing.T) {
	doc := t.TempDir() + "/doc.md"
	if err := os.WriteFile(doc, []byte("# no table\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Update("../../config/crd/bases/gitpeer.io_peeringrepositories.yaml", doc); err == nil || !strings.Contains(err.Error(), "no lines") {
		t.Fatalf("Update without markers: %v", err)
	}
}
