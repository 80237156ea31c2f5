package scaffold

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestExamplesDoNotDrift checks that init, given the sample repository's provider, branch and
// pinned release, writes exactly the CODEOWNERS and CI workflow of examples/ (as on disk), so
// what init writes and what the examples show are one text.
func TestExamplesDoNotDrift(t *testing.T) {
	for file, gen := range map[string]func() ([]byte, error){
		"repository/CODEOWNERS": func() ([]byte, error) { return Codeowners([]string{exampleProvider}) },
		"ci/verify.yaml":        func() ([]byte, error) { return Workflow("main", ExampleVersion()) },
	} {
		want, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "examples", filepath.FromSlash(file)))
		if err != nil {
			t.Fatal(err)
		}
		got, err := gen()
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("init's %s differs from examples/%[1]s:\n%s", file, got)
		}
	}
}

// TestExampleVersionIsVERSION checks the fallback of development builds is the release of VERSION.
func TestExampleVersionIsVERSION(t *testing.T) {
	v, err := os.ReadFile("../../../../VERSION")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ExampleVersion(), "v"+strings.TrimSpace(string(v)); got != want {
		t.Errorf("ExampleVersion() = %s, VERSION is %s", got, want)
	}
}

func TestReleaseVersion(t *testing.T) {
	for in, want := range map[string]string{"0.1.0": "v0.1.0", "v1.2.3": "v1.2.3", "dev": "", "0.1.0-3e8240b": "", "0.1.0-3e8240b-dirty": "", "v0.2.0+meta": "", "": ""} {
		got, ok := ReleaseVersion(in)
		if got != want || ok != (want != "") {
			t.Errorf("ReleaseVersion(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
}

func TestFiles(t *testing.T) {
	files, err := Files(Options{Providers: []string{"cluster-a", "cluster-c"}, Branch: "peerings", Version: "v9.8.7"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range files {
		got[f.Path] = string(f.Data)
	}
	if len(got) != 5 {
		t.Fatalf("files %v", got)
	}
	for _, want := range []string{"/cluster-a/ @example-org/cluster-a-admins\n/cluster-c/ @example-org/cluster-c-admins\n", "/.github/ @example-org/peering-admins\n"} {
		if !strings.Contains(got[CodeownersPath], want) {
			t.Errorf("CODEOWNERS lacks %q:\n%s", want, got[CodeownersPath])
		}
	}
	if strings.Contains(got[CodeownersPath], "provider-eu") {
		t.Errorf("CODEOWNERS names the example's provider:\n%s", got[CodeownersPath])
	}
	var wf struct {
		On   map[string]struct{ Branches []string } `json:"true"` // YAML 1.1 reads the key "on" as true
		Jobs map[string]struct{ Env map[string]string }
	}
	if err := yaml.Unmarshal([]byte(got[WorkflowPath]), &wf); err != nil {
		t.Fatal(err)
	}
	if v := wf.Jobs["verify"].Env["GITPEER_VERSION"]; v != "v9.8.7" {
		t.Errorf("workflow pins %q, want v9.8.7", v)
	}
	for _, event := range []string{"pull_request_target", "push"} {
		if b := wf.On[event].Branches; len(b) != 1 || b[0] != "peerings" {
			t.Errorf("workflow runs on %s of %v, want [peerings]", event, b)
		}
	}
	if wf.Jobs["verify"].Env["GITPEER_VERSION"] == ExampleVersion() || !strings.Contains(got[ReadmePath], "`gitpeer verify` (gitpeer v9.8.7)") ||
		!strings.Contains(got[ReadmePath], "Branch protection of `peerings`") || !strings.Contains(got[ReadmePath], "one folder per provider: cluster-a, cluster-c") {
		t.Errorf("README:\n%s", got[ReadmePath])
	}
	if !strings.Contains(got["cluster-c/README.md"], "# Provider cluster-c") {
		t.Errorf("cluster-c/README.md:\n%s", got["cluster-c/README.md"])
	}
}

func TestFilesRejectsBadOptions(t *testing.T) {
	good := Options{Providers: []string{"cluster-a"}, Branch: "main", Version: "v0.1.0"}
	for name, tc := range map[string]struct {
		mutate func(*Options)
		want   string
	}{
		"no provider":       {func(o *Options) { o.Providers = nil }, "--provider"},
		"bad provider":      {func(o *Options) { o.Providers = []string{"Cluster_A"} }, `--provider "Cluster_A"`},
		"provider twice":    {func(o *Options) { o.Providers = []string{"cluster-a", "cluster-a"} }, "given twice"},
		"bad branch":        {func(o *Options) { o.Branch = "a..b" }, `--branch "a..b"`},
		"branch breaks yml": {func(o *Options) { o.Branch = "a,b" }, `--branch "a,b"`},
		"no branch":         {func(o *Options) { o.Branch = "" }, "--branch"},
		"dev version":       {func(o *Options) { o.Version = "dev" }, `version "dev"`},
	} {
		o := good
		tc.mutate(&o)
		if _, err := Files(o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one naming %s", name, err, tc.want)
		}
	}
	if _, err := Files(good); err != nil {
		t.Fatal(err)
	}
}

// TestWriteRefusesToOverwrite checks Write writes nothing when a file exists, and overwrites with force.
func TestWriteRefusesToOverwrite(t *testing.T) {
	dir := t.TempDir()
	files := []File{{Path: "a/new.txt", Data: []byte("new")}, {Path: "CODEOWNERS", Data: []byte("new")}}
	if err := os.WriteFile(filepath.Join(dir, "CODEOWNERS"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Write(dir, files, false); err == nil || !strings.Contains(err.Error(), "CODEOWNERS already exist") {
		t.Fatalf("error %v, want one naming CODEOWNERS", err)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "CODEOWNERS")); string(data) != "mine" {
		t.Fatalf("CODEOWNERS overwritten: %q", data)
	}
	if _, err := os.Stat(filepath.Join(dir, "a")); err == nil {
		t.Fatal("Write wrote a/new.txt though it refused")
	}
	wrote, err := Write(dir, files, true)
	if err != nil || len(wrote) != 2 {
		t.Fatalf("force: wrote %v, %v", wrote, err)
	}
	for _, f := range files {
		if data, _ := os.ReadFile(filepath.Join(dir, f.Path)); string(data) != "new" {
			t.Errorf("%s: %q", f.Path, data)
		}
	}
}
