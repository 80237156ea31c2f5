package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/gitpeer/gitpeer/examples/repofixture"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/test/sandbox"
)

// TestVerifyFailsWhenNothingChecked checks that `gitpeer verify` cannot pass a CI job by checking
// nothing: a --path that matches no gitpeer file exits non-zero (unless --allow-empty), and
// uncommitted edits under the path are named on standard error, not taken as checked.
func TestVerifyFailsWhenNothingChecked(t *testing.T) {
	dir := t.TempDir()
	terms, err := repofixture.Terms("provider-a")
	if err != nil {
		t.Fatal(err)
	}
	if err := repofixture.Write(dir, "peers/"+protocol.TermsPath("provider-a"), terms); err != nil {
		t.Fatal(err)
	}
	if err := repofixture.Write(dir, "README.md", []byte("# peers\n")); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"commit", "-q", "-m", "fixture"}} {
		if out, err := sandbox.Git(dir, args...); err != nil {
			t.Fatal(out, err)
		}
	}
	run := func(args ...string) (string, string, error) {
		var stdout, stderr bytes.Buffer
		root := newRootCmd()
		root.SetOut(&stdout)
		root.SetErr(&stderr)
		root.SetArgs(append([]string{"verify"}, args...))
		err := root.Execute()
		return stdout.String(), stderr.String(), err
	}

	if _, stderr, err := run("--path", "peers", dir); err != nil || stderr != "" {
		t.Fatalf("the right path: want success and nothing on stderr, got %v, %q", err, stderr)
	}
	if _, _, err := run("--path", "peer", dir); !errors.Is(err, errNothingChecked) || !strings.Contains(err.Error(), `"peer"`) {
		t.Fatalf("a path that matches nothing: want errNothingChecked naming the path, got %v", err)
	}
	if _, _, err := run("--path", "peer", "--allow-empty", dir); err != nil {
		t.Fatalf("--allow-empty: want success, got %v", err)
	}

	if err := repofixture.Write(dir, "peers/provider-a/consumer-1/tenant.yaml", []byte("spec: [unclosed\n")); err != nil {
		t.Fatal(err)
	}
	_, stderr, err := run("--path", "peers", dir)
	if err != nil || !strings.Contains(stderr, "1 uncommitted change(s) not checked") || !strings.Contains(stderr, "peers/provider-a/consumer-1/tenant.yaml") {
		t.Fatalf("an uncommitted file: want success (the commit is valid) and a warning naming it, got %v, %q", err, stderr)
	}
	if _, stderr, _ := run("--path", "peers/provider-b", "--allow-empty", dir); stderr != "" {
		t.Fatalf("an uncommitted file outside the path: want no warning, got %q", stderr)
	}
}
