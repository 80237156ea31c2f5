package benchreport_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/gitpeer/gitpeer/test/benchreport"
)

// TestTable aligns the values after the longest name, after an empty line.
func TestTable(t *testing.T) {
	var out bytes.Buffer
	table := benchreport.NewTable(&out)
	table.Row("commit", "%s", "abc1234")
	table.Row("Tenants applied", "%.1f s", 1.25)
	if err := table.Flush(); err != nil {
		t.Fatal(err)
	}
	want := "\ncommit           abc1234\nTenants applied  1.2 s\n"
	if out.String() != want {
		t.Errorf("table:\n%q\nwant\n%q", out.String(), want)
	}
}

// TestWriteJSON writes indented JSON, and nothing without a path.
func TestWriteJSON(t *testing.T) {
	if err := benchreport.WriteJSON("", map[string]int{"n": 1}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "r.json")
	if err := benchreport.WriteJSON(path, map[string]int{"n": 1}); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(path); err != nil || string(data) != "{\n  \"n\": 1\n}\n" {
		t.Errorf("file: %q, %v", data, err)
	}
}

// TestDefaultN reads $N, else 100, and refuses a word.
func TestDefaultN(t *testing.T) {
	for _, c := range []struct {
		env  string
		want int
		ok   bool
	}{{"", 100, true}, {"1000", 1000, true}, {"many", 0, false}} {
		t.Setenv("N", c.env)
		if n, err := benchreport.DefaultN(); n != c.want || (err == nil) != c.ok {
			t.Errorf("N=%q: %d, %v; want %d", c.env, n, err, c.want)
		}
	}
}
