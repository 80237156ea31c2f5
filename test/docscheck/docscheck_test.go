package docscheck

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// gitpeer builds the gitpeer binary once for the tests of this package.
var gitpeer = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "docscheck")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "gitpeer")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/gitpeer/gitpeer/cmd/gitpeer").CombinedOutput(); err != nil {
		return "", fmt.Errorf("%w: %s", err, out)
	}
	return bin, nil
})

func TestMain(m *testing.M) {
	code := m.Run()
	if bin, err := gitpeer(); err == nil {
		_ = os.RemoveAll(filepath.Dir(bin))
	}
	os.Exit(code)
}

func checker(t *testing.T, root, repository string) *Checker {
	t.Helper()
	bin, err := gitpeer()
	if err != nil {
		t.Fatalf("go build ./cmd/gitpeer: %v", err)
	}
	targets, err := MakeTargets(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	set := map[string]bool{}
	for t := range targets {
		set[t] = true
	}
	return &Checker{Root: root, Targets: set, CLI: &CLI{Binary: bin}, Repository: repository}
}

// TestFixture checks the checker on testdata/: each broken link, anchor, make target, gitpeer
// command and flag is reported at its line, and nothing that exists is.
func TestFixture(t *testing.T) {
	c := checker(t, "testdata", "https://github.com/example/fixture")
	files, err := Files("testdata")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"README.md", "docs/guide.md"}; !slices.Equal(files, want) {
		t.Fatalf("files %v, want %v", files, want)
	}
	problems, err := c.Check(files)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range problems {
		got = append(got, p.String())
	}
	want := []string{
		`README.md:7: link "docs/missing.md": docs/missing.md does not exist`,
		`README.md:7: link "docs/guide.md#no-such-heading": docs/guide.md has no heading with anchor #no-such-heading`,
		`README.md:8: link "../../outside.md" leaves the repository`,
		`README.md:12: make no-such-target: the Makefile has no target "no-such-target"`,
		`README.md:15: gitpeer verify --no-such-flag .: gitpeer verify has no flag --no-such-flag`,
		`README.md:16: gitpeer frobnicate: no command "frobnicate"`,
		`README.md:19: gitpeer version --short: gitpeer version has no flag --short`,
		`README.md:19: gitpeer audit PATH [--since 72h] [--until now]: gitpeer audit has no flag --until`,
		`README.md:22: link "https://github.com/example/fixture/blob/v1.0.0/docs/gone.md": docs/gone.md does not exist`,
		`README.md:29: gitpeer status --bogus: gitpeer status has no flag --bogus`,
		`README.md:33: gitpeer verify --base main --nope .: gitpeer verify has no flag --nope`,
	}
	if len(got) != len(want) {
		t.Fatalf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("problem %d:\n%s\nwant:\n%s", i, got[i], want[i])
		}
	}
}

// TestMakeTargets checks the Makefile reader: rules and their lines, not assignments, recipes,
// special targets or targets made of variables.
func TestMakeTargets(t *testing.T) {
	targets, err := MakeTargets("testdata/Makefile")
	if err != nil {
		t.Fatal(err)
	}
	if len(targets) != 2 || !slices.Equal(targets["build"], []int{3}) || !slices.Equal(targets["test"], []int{6, 10}) {
		t.Fatalf("targets %v", targets)
	}
}

// TestSlug checks GitHub's heading anchors.
func TestSlug(t *testing.T) {
	seen := map[string]int{}
	for heading, want := range map[string]string{
		"Set up & run": "set-up--run", "`make demo` (Linux)": "make-demo-linux", "Übersicht_2": "übersicht_2",
	} {
		if got := uniqueSlug(seen, heading); got != want {
			t.Errorf("slug(%q) = %q, want %q", heading, got, want)
		}
	}
	if a, b := uniqueSlug(seen, "Notes"), uniqueSlug(seen, "Notes"); a != "notes" || b != "notes-1" {
		t.Errorf("repeated heading: %q, %q", a, b)
	}
}

// TestRepository checks the repository's own documentation: README, docs/, examples/, the chart's
// README and every other Markdown file. The Makefile defines each target once.
func TestRepository(t *testing.T) {
	root := filepath.Join("..", "..")
	c := checker(t, root, "https://github.com/gitpeer/gitpeer")
	files, err := Files(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"README.md", "docs/install.md", "charts/gitpeer/README.md", "examples/README.md"} {
		if !slices.Contains(files, want) {
			t.Errorf("%s is not checked (files: %v)", want, files)
		}
	}
	problems, err := c.Check(files)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
	targets, err := MakeTargets(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	for target, lines := range targets {
		if len(lines) > 1 {
			t.Errorf("Makefile: target %s is defined on lines %v: define it once", target, lines)
		}
	}
}
