package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitpeer/gitpeer/cmd/gitpeer/internal/scaffold"
)

// TestInitPinsTheCLIRelease checks init pins the workflow to the running CLI's release, and a
// development build to the release of its source tree, saying so; and that it prints the
// files it wrote and numbered next steps.
func TestInitPinsTheCLIRelease(t *testing.T) {
	defer func(v string) { version = v }(version)
	for cli, want := range map[string]string{"0.3.1": "v0.3.1", "dev": scaffold.ExampleVersion(), "0.1.0-3e8240b": scaffold.ExampleVersion()} {
		version = cli
		dir := filepath.Join(t.TempDir(), "peerings")
		var stdout, stderr bytes.Buffer
		root := newRootCmd()
		root.SetOut(&stdout)
		root.SetErr(&stderr)
		root.SetArgs([]string{"init", dir, "--provider", "cluster-a"})
		if err := root.Execute(); err != nil {
			t.Fatalf("%s: %v", cli, err)
		}
		wf, err := os.ReadFile(filepath.Join(dir, ".github", "workflows", "verify.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(wf), "GITPEER_VERSION: "+want+" ") {
			t.Errorf("gitpeer %s: the workflow does not pin %s", cli, want)
		}
		if dev := strings.Contains(stderr.String(), "development build"); dev != (cli != "0.3.1") {
			t.Errorf("gitpeer %s: stderr %q", cli, stderr.String())
		}
		for _, line := range []string{"wrote " + filepath.Join(dir, "cluster-a", "README.md"), "\n1. ", "\n5. Check each cluster (gitpeer check --pre)"} {
			if !strings.Contains(stdout.String(), line) {
				t.Errorf("gitpeer %s: output lacks %q:\n%s", cli, line, stdout.String())
			}
		}
	}
}
