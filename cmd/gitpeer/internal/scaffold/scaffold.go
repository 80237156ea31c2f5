// Package scaffold writes the files of a new peering repository for
// `gitpeer init`: the provider folders of the repository layout (docs/DESIGN.md),
// a CODEOWNERS file and the CI workflow running `gitpeer verify`, both derived
// from examples/ (embedded, so the two cannot drift apart), and a README.
package scaffold

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"text/template"

	"github.com/go-git/go-git/v5/plumbing"
	"k8s.io/apimachinery/pkg/util/version"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	"github.com/gitpeer/gitpeer/examples"
)

// Options say what to scaffold.
type Options struct {
	// Providers are the cluster IDs of the providers whose folders to create.
	Providers []string
	// Branch is the authoritative branch (spec.branch), e.g. main.
	Branch string
	// Version is the gitpeer release the CI workflow installs, e.g. v0.1.0.
	Version string
}

// File is one file to write, at a slash-separated path relative to the repository.
type File struct {
	Path string
	Data []byte
}

// The paths of the scaffolded files.
const (
	CodeownersPath = "CODEOWNERS"
	WorkflowPath   = ".github/workflows/verify.yaml"
	ReadmePath     = "README.md"
)

// exampleProvider is the provider folder of examples/repository, whose
// CODEOWNERS line is the template of each provider's line.
const exampleProvider = "provider-eu"

var (
	pinLine    = regexp.MustCompile(`(?m)^(\s*GITPEER_VERSION: )(\S+)`)
	branchLine = regexp.MustCompile(`(?m)^(\s*branches: \[)main(\])$`)
	// branchName keeps the branch usable unquoted in the workflow's YAML flow sequence.
	branchName = regexp.MustCompile(`^[A-Za-z0-9._/-]+$`)
)

// ExampleVersion returns the gitpeer release examples/ci/verify.yaml pins:
// VERSION's release, which a test keeps equal.
func ExampleVersion() string {
	m := pinLine.FindSubmatch(examples.VerifyWorkflow)
	if m == nil {
		panic("examples/ci/verify.yaml pins no GITPEER_VERSION")
	}
	return string(m[2])
}

// ReleaseVersion returns the release tag (v1.2.3) of a CLI version as the
// build sets it (1.2.3 or v1.2.3), and false for a development build ("dev",
// a pre-release, a build with metadata), which has no release to install.
func ReleaseVersion(cli string) (string, bool) {
	v, err := version.ParseSemantic(cli)
	if err != nil || v.PreRelease() != "" || v.BuildMetadata() != "" {
		return "", false
	}
	return "v" + v.String(), true
}

// Files returns the files of a new peering repository, or an error naming
// the invalid option.
func Files(o Options) ([]File, error) {
	if len(o.Providers) == 0 {
		return nil, errors.New("--provider: give the cluster ID of at least one provider")
	}
	seen := map[string]bool{}
	for _, p := range o.Providers {
		if err := authv1beta1.ValidateClusterID(p); err != nil {
			return nil, fmt.Errorf("--provider %q: %w", p, err)
		}
		if seen[p] {
			return nil, fmt.Errorf("--provider %q: given twice", p)
		}
		seen[p] = true
	}
	if err := plumbing.NewBranchReferenceName(o.Branch).Validate(); err != nil || !branchName.MatchString(o.Branch) {
		return nil, fmt.Errorf("--branch %q: not a branch name of letters, digits, '.', '_', '-' and '/'", o.Branch)
	}
	if _, ok := ReleaseVersion(o.Version); !ok || !strings.HasPrefix(o.Version, "v") {
		return nil, fmt.Errorf("version %q: not a release tag like v1.2.3", o.Version)
	}
	codeowners, err := Codeowners(o.Providers)
	if err != nil {
		return nil, err
	}
	workflow, err := Workflow(o.Branch, o.Version)
	if err != nil {
		return nil, err
	}
	readme, err := render(readmeTemplate, o)
	if err != nil {
		return nil, err
	}
	files := []File{
		{Path: ReadmePath, Data: readme},
		{Path: CodeownersPath, Data: codeowners},
		{Path: WorkflowPath, Data: workflow},
	}
	for _, p := range o.Providers {
		data, err := render(providerTemplate, struct {
			Options
			Provider string
		}{o, p})
		if err != nil {
			return nil, err
		}
		files = append(files, File{Path: p + "/README.md", Data: data})
	}
	return files, nil
}

// Codeowners returns examples/repository/CODEOWNERS with its provider line
// repeated for each of providers.
func Codeowners(providers []string) ([]byte, error) {
	var out bytes.Buffer
	found := 0
	for line := range strings.Lines(string(examples.Codeowners)) {
		if !strings.HasPrefix(line, "/"+exampleProvider+"/ ") {
			out.WriteString(line)
			continue
		}
		found++
		for _, p := range providers {
			out.WriteString(strings.ReplaceAll(line, exampleProvider, p))
		}
	}
	if found != 1 {
		return nil, fmt.Errorf("examples/repository/CODEOWNERS has %d lines for /%s/, want 1", found, exampleProvider)
	}
	return out.Bytes(), nil
}

// Workflow returns examples/ci/verify.yaml running on branch and pinned to
// the gitpeer release v.
func Workflow(branch, v string) ([]byte, error) {
	wf := examples.VerifyWorkflow
	if n := len(pinLine.FindAll(wf, -1)); n != 1 {
		return nil, fmt.Errorf("examples/ci/verify.yaml has %d GITPEER_VERSION lines, want 1", n)
	}
	if n := len(branchLine.FindAll(wf, -1)); n != 2 {
		return nil, fmt.Errorf("examples/ci/verify.yaml has %d `branches: [main]` lines, want 2", n)
	}
	wf = pinLine.ReplaceAll(wf, []byte("${1}"+v))
	return branchLine.ReplaceAll(wf, []byte("${1}"+branch+"${2}")), nil
}

// Write writes files under dir and returns the paths it wrote. It writes
// nothing when one of them exists already, unless force.
func Write(dir string, files []File, force bool) ([]string, error) {
	var existing []string
	for _, f := range files {
		if _, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(f.Path))); err == nil {
			existing = append(existing, f.Path)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	if len(existing) > 0 && !force {
		return nil, fmt.Errorf("%s: %s already exist (--force overwrites)", dir, strings.Join(existing, ", "))
	}
	var wrote []string
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return wrote, err
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			return wrote, err
		}
		wrote = append(wrote, p)
	}
	return wrote, nil
}

var (
	//go:embed README.md.tmpl
	readmeText     string
	readmeTemplate = template.Must(template.New("README.md").Parse(readmeText))
	//go:embed provider-README.md.tmpl
	providerText     string
	providerTemplate = template.Must(template.New("provider README.md").Parse(providerText))
)

func render(t *template.Template, data any) ([]byte, error) {
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
