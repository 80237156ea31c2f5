package main

import (
	"strings"
	"testing"
)

// TestOutputFlag checks that every command that prints objects takes -o and
// names the flag and the formats it takes when given another.
func TestOutputFlag(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		formats string
	}{
		{[]string{"status"}, "json, yaml, wide, name"},
		{[]string{"audit", "."}, "json, yaml, wide"},
		{[]string{"records", ".", "--provider", "p", "--name", "n", "--namespace", "ns"}, "yaml, json, name"},
		{[]string{"verify", "."}, "json, yaml"},
	} {
		_, _, err := runGitpeer(append(tc.args, "-o", "xml")...)
		if want := `--output (-o) "xml" is not supported here: use one of ` + tc.formats; err == nil || err.Error() != want {
			t.Errorf("%s -o xml: %v, want %q", tc.args[0], err, want)
		}
	}
	// Completion offers the formats.
	out, _, err := runGitpeer("__complete", "status", "-o", "")
	if err != nil || !strings.HasPrefix(out, "json\nyaml\nwide\nname\n") {
		t.Errorf("completion of status -o: %q, %v", out, err)
	}
}
