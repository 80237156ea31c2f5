package main

import (
	"strings"
	"testing"
)

// TestCompletion checks that cobra's completion command writes the scripts docs/cli.md documents.
func TestCompletion(t *testing.T) {
	for shell, marker := range map[string]string{"bash": "__start_gitpeer", "zsh": "#compdef gitpeer", "fish": "complete -c gitpeer"} {
		out, _, err := runGitpeer("completion", shell)
		if err != nil || !strings.Contains(out, marker) {
			t.Errorf("completion %s: %v, no %q in its script", shell, err, marker)
		}
	}
}
