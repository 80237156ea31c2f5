// Package release tests what a release publishes besides the image and the chart: the CLI
// binaries `make dist` builds for the release workflow, their checksums, and the release notes
// from CHANGELOG.md.
package release

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

const root = "../.."

func version(t *testing.T) string {
	t.Helper()
	v, err := os.ReadFile(filepath.Join(root, "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(v))
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if e, ok := err.(*exec.ExitError); ok {
			stderr = string(e.Stderr)
		}
		t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, out, stderr)
	}
	return string(out)
}

// TestDist runs `make dist` for one platform: a static, trimmed binary stamped with the version,
// and a SHA256SUMS that `sha256sum --check` reads. The default platforms are the four released.
func TestDist(t *testing.T) {
	dir := t.TempDir()
	run(t, "make", "dist", "DIST_PLATFORMS=linux/amd64", "DIST_DIR="+dir, "VERSION=9.8.7-test")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{"SHA256SUMS", "gitpeer-linux-amd64"}; !slices.Equal(names, want) {
		t.Fatalf("dist holds %v, want %v", names, want)
	}
	bin := filepath.Join(dir, "gitpeer-linux-amd64")
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	sums, err := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	if want := hex.EncodeToString(sum[:]) + "  gitpeer-linux-amd64\n"; string(sums) != want {
		t.Fatalf("SHA256SUMS:\n%s\nwant:\n%s", sums, want)
	}
	if out := run(t, bin, "version"); !strings.HasPrefix(out, "gitpeer 9.8.7-test ") {
		t.Errorf("gitpeer version: %q", out)
	}
	info := run(t, "go", "version", "-m", bin)
	for _, want := range []string{"\tbuild\t-trimpath=true\n", "\tbuild\tCGO_ENABLED=0\n"} {
		if !strings.Contains(info, want) {
			t.Errorf("the binary was not built with %q:\n%s", want, info)
		}
	}
	plan := run(t, "make", "-n", "dist")
	if !strings.Contains(plan, "for p in linux/amd64 linux/arm64 darwin/amd64 darwin/arm64; do") {
		t.Errorf("make dist does not build linux and darwin, amd64 and arm64:\n%s", plan)
	}
}

// TestReleaseNotes checks CHANGELOG.md has a section for VERSION, which `make release-notes`
// prints as the GitHub release's notes, with the upgrade notes.
func TestReleaseNotes(t *testing.T) {
	v := version(t)
	notes := run(t, "make", "-s", "release-notes")
	if strings.Contains(notes, "\n## ") || !strings.Contains(notes, "### Upgrading") {
		t.Errorf("release notes of %s:\n%s", v, notes)
	}
	changelog, err := os.ReadFile(filepath.Join(root, "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^## \[` + regexp.QuoteMeta(v) + `\] - \d{4}-\d{2}-\d{2}$`).Match(changelog) {
		t.Errorf("CHANGELOG.md has no heading ## [%s] - YYYY-MM-DD (Keep a Changelog)", v)
	}
	if !regexp.MustCompile(`(?m)^\[` + regexp.QuoteMeta(v) + `\]: https://github.com/gitpeer/gitpeer/releases/tag/v` + regexp.QuoteMeta(v) + `$`).Match(changelog) {
		t.Errorf("CHANGELOG.md has no link for [%s]", v)
	}
}

// TestWorkflows checks the release workflow publishes what `make dist` and `make release-notes`
// produce, signed, and that every workflow pins its actions by commit.
func TestWorkflows(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, ".github/workflows/release.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var wf struct {
		Jobs map[string]struct {
			Needs any
			Steps []struct{ Uses, Run string }
		}
	}
	if err := yaml.Unmarshal(data, &wf); err != nil {
		t.Fatal(err)
	}
	var script strings.Builder
	for _, s := range wf.Jobs["cli"].Steps {
		script.WriteString(s.Run + "\n")
	}
	for _, want := range []string{`make dist VERSION="$(cat VERSION)"`, "cosign sign-blob --yes --bundle dist/SHA256SUMS.sigstore.json dist/SHA256SUMS",
		"make -s release-notes", "gh release create", "dist/*"} {
		if !strings.Contains(script.String(), want) {
			t.Errorf("the release workflow's cli job does not run %q", want)
		}
	}
	pinned := regexp.MustCompile(`^[\w.-]+/[\w./-]+@[0-9a-f]{40}$`)
	for _, f := range []string{".github/workflows/release.yaml", "examples/ci/verify.yaml"} {
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`(?m)^\s*(?:-\s+)?uses:\s*(\S+)`).FindAllStringSubmatch(string(data), -1) {
			if !pinned.MatchString(m[1]) {
				t.Errorf("%s: %s is not pinned to a commit", f, m[1])
			}
		}
	}
}
