package protocol

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	"github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1/documents"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// MaxBuildSize caps both the files of one kustomized directory, all together,
// and the YAML kustomize builds from them.
const MaxBuildSize = 4 * MaxFileSize

// kustomizationFields are the kustomization fields gitpeer builds with: enough
// to patch documents (patches takes strategic merge and JSON 6902 patches; the
// deprecated patchesStrategicMerge and patchesJson6902 are left out), nothing
// that runs plugins, generates objects or reads anything but the directory's
// own files.
var kustomizationFields = []string{
	"apiVersion", "kind", "metadata", "resources", "components",
	"patches", "replacements", "commonAnnotations", "labels",
}

// kinds maps the apiVersion and kind of a built object to its document.
var kinds = map[[2]string]vocabulary.FileKind{
	{documents.APIVersion, documents.PeeringRequestKind}:          vocabulary.RequestFile,
	{documents.APIVersion, documents.NonceKind}:                   vocabulary.NonceFile,
	{authv1beta1.GroupVersion.String(), authv1beta1.TenantKind}:   vocabulary.TenantFile,
	{authv1beta1.GroupVersion.String(), authv1beta1.IdentityKind}: vocabulary.IdentityFile,
}

// Kustomize builds the kustomization.yaml of the directory of pe from files,
// the directory's regular files keyed by their slash-separated path inside it,
// and decodes every built object into pe exactly as Decode decodes a file of
// its kind. The build runs in memory over those files only, with kustomize's
// root-only load restrictions and without plugins; remote references and paths
// leaving the directory are refused before kustomize sees them.
//
// A kustomization patches documents; it never adds, hides or replaces one. A
// built document of kind K must come from the file K of the directory (a
// Tenant from tenant.yaml), and a kind whose file is absent is absent,
// whatever the kustomization lists: deleting tenant.yaml always revokes. A
// document file whose kind the build does not output is decoded as it is.
// This also lets a kustomization list only what it patches, typically
// tenant.yaml: request.yaml and nonce.yaml as the agent writes them have no
// metadata.name, which kustomize requires of its resources.
//
// A build that fails or is refused makes every document of the directory
// whose file is present invalid, so none reads as absent; a document that
// does not decode makes its kind invalid. While tenant.yaml is present but
// yields no valid Tenant, BuildFailed says why: the provider then fails
// closed. The returned error joins every problem.
func (pe *Documents) Kustomize(files map[string][]byte) error {
	dir := Path{Provider: pe.Provider, Consumer: pe.Consumer}.Dir()
	built, err := buildDocuments(dir, files)
	if err != nil {
		err = fmt.Errorf("%s: %w", path.Join(dir, vocabulary.KustomizationFile), err)
		pe.RefuseBuild(func(k vocabulary.FileKind) bool { return hasFile(files, k) }, err)
		return err
	}
	var errs []error
	for _, k := range vocabulary.FileKinds {
		p := Path{Provider: pe.Provider, Consumer: pe.Consumer, Kind: k}
		data, ok := built[k]
		switch {
		case !hasFile(files, k):
		case ok:
			if err := pe.Decode(p, data); err != nil {
				err = fmt.Errorf("%w (as built by %s)", err, vocabulary.KustomizationFile)
				pe.MarkInvalid(k, err)
				errs = append(errs, err)
			}
		default:
			if err := pe.Decode(p, files[string(k)]); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if hasFile(files, vocabulary.TenantFile) && pe.Tenant == nil {
		pe.BuildFailed = pe.Invalid[vocabulary.TenantFile]
	}
	return errors.Join(errs...)
}

// RefuseBuild records that the kustomized directory of pe does not build,
// for err: every document whose file is present (present reports it) is
// invalid, so none reads as absent, and with tenant.yaml present the
// directory fails closed (BuildFailed). Absent documents stay absent.
func (pe *Documents) RefuseBuild(present func(vocabulary.FileKind) bool, err error) {
	for _, k := range vocabulary.FileKinds {
		if present(k) {
			pe.MarkInvalid(k, err)
		}
	}
	if present(vocabulary.TenantFile) {
		pe.BuildFailed = err
	}
}

// buildDocuments builds the directory and returns its documents by kind,
// each checked to come from the file of its kind.
func buildDocuments(dir string, files map[string][]byte) (map[vocabulary.FileKind][]byte, error) {
	o, err := newOrigin()
	if err != nil {
		return nil, err
	}
	out, err := buildKustomization(dir, files, o)
	if err != nil {
		return nil, err
	}
	return sortBuilt(out, o)
}

// buildKustomization checks files and runs kustomize over them, mounted at
// /<dir> in an in-memory file system that holds nothing else, with the
// document files marked with o.
func buildKustomization(dir string, files map[string][]byte, o origin) ([]byte, error) {
	root := "/" + dir
	fs := filesys.MakeFsInMemory()
	total := 0
	for _, name := range sortedNames(files) {
		data := files[name]
		if name == "" || path.IsAbs(name) || path.Clean(name) != name || name == ".." || strings.HasPrefix(name, "../") {
			return nil, fmt.Errorf("%w: file name %q is not a clean path inside the directory", ErrInvalid, name)
		}
		if total += len(data); total > MaxBuildSize {
			return nil, fmt.Errorf("%w: the directory's files exceed %d bytes", ErrInvalid, MaxBuildSize)
		}
		err := checkStream(data)
		if err == nil && slices.Contains(konfig.RecognizedKustomizationFileNames(), path.Base(name)) {
			err = checkKustomization(data)
		}
		if err != nil && name != vocabulary.KustomizationFile {
			err = fmt.Errorf("in %s: %w", name, err)
		}
		if err != nil {
			return nil, err
		}
		if known(vocabulary.FileKind(name)) {
			data = o.mark(name, data)
		}
		if err := fs.WriteFile(path.Join(root, name), data); err != nil {
			return nil, err
		}
	}
	if _, ok := files[vocabulary.KustomizationFile]; !ok {
		return nil, fmt.Errorf("%w: no %s", ErrInvalid, vocabulary.KustomizationFile)
	}
	opts := krusty.MakeDefaultOptions()
	opts.LoadRestrictions = types.LoadRestrictionsRootOnly
	opts.PluginConfig = types.DisabledPluginConfig()
	resources, err := krusty.MakeKustomizer(opts).Run(fs, root)
	if err != nil {
		return nil, fmt.Errorf("%w: kustomize build failed: %v", ErrInvalid, err)
	}
	out, err := resources.AsYaml()
	if err != nil {
		return nil, fmt.Errorf("%w: kustomize output: %v", ErrInvalid, err)
	}
	if len(out) > MaxBuildSize {
		return nil, fmt.Errorf("%w: kustomize built %d bytes, the limit is %d", ErrInvalid, len(out), MaxBuildSize)
	}
	return out, nil
}

// sortBuilt splits kustomize's output into one YAML document per kind, each
// checked to come from the file of its kind and stripped of its origin mark.
func sortBuilt(out []byte, o origin) (map[vocabulary.FileKind][]byte, error) {
	built := map[vocabulary.FileKind][]byte{}
	dec := yamlv3.NewDecoder(bytes.NewReader(out))
	for {
		var node yamlv3.Node
		if err := dec.Decode(&node); errors.Is(err, io.EOF) {
			return built, nil
		} else if err != nil {
			return nil, fmt.Errorf("%w: kustomize output: %v", ErrInvalid, err)
		}
		var meta struct {
			APIVersion string `yaml:"apiVersion"`
			Kind       string `yaml:"kind"`
		}
		if err := node.Decode(&meta); err != nil || len(node.Content) != 1 {
			return nil, fmt.Errorf("%w: kustomize output: %v", ErrInvalid, err)
		}
		k, ok := kinds[[2]string{meta.APIVersion, meta.Kind}]
		if !ok {
			return nil, fmt.Errorf("%w: kustomize built a %s %s, which is not a gitpeer document", ErrInvalid, meta.APIVersion, meta.Kind)
		}
		if built[k] != nil {
			return nil, fmt.Errorf("%w: kustomize built more than one %s", ErrInvalid, kindName(k))
		}
		if err := o.check(node.Content[0], string(k), kindName(k)); err != nil {
			return nil, err
		}
		data, err := yamlv3.Marshal(&node)
		if err != nil {
			return nil, fmt.Errorf("%w: kustomize output: %v", ErrInvalid, err)
		}
		built[k] = data
	}
}

// checkKustomization refuses kustomization fields gitpeer does not build
// with, inline patches that checkStream refuses, and every reference that is
// not a path inside the directory: remote bases and files would otherwise
// make kustomize clone or download them.
func checkKustomization(data []byte) error {
	var k map[string]any
	if err := yaml.Unmarshal(data, &k); err != nil {
		return fmt.Errorf("%w: malformed kustomization: %v", ErrInvalid, err)
	}
	for _, field := range sortedNames(k) {
		if !slices.Contains(kustomizationFields, field) {
			return fmt.Errorf("%w: kustomization field %q is not supported (gitpeer supports %s)",
				ErrInvalid, field, strings.Join(kustomizationFields, ", "))
		}
	}
	var refs struct {
		Resources  []string `json:"resources"`
		Components []string `json:"components"`
		Patches    []struct {
			Path  string `json:"path"`
			Patch string `json:"patch"`
		} `json:"patches"`
		Replacements []struct {
			Path string `json:"path"`
		} `json:"replacements"`
	}
	if err := yaml.Unmarshal(data, &refs); err != nil {
		return fmt.Errorf("%w: malformed kustomization: %v", ErrInvalid, err)
	}
	paths := slices.Concat(refs.Resources, refs.Components)
	for _, p := range refs.Patches {
		paths = append(paths, p.Path)
		if err := checkStream([]byte(p.Patch)); err != nil {
			return fmt.Errorf("in an inline patch: %w", err)
		}
	}
	for _, p := range refs.Replacements {
		paths = append(paths, p.Path)
	}
	for _, p := range paths {
		if p == "" {
			continue
		}
		if err := checkLocalPath(p); err != nil {
			return fmt.Errorf("%w: %q: %v", ErrInvalid, p, err)
		}
	}
	return nil
}

// localPath is what a reference in a kustomization may look like: a relative
// path of plain names (letters, digits, '.', '_', '-') joined by single
// slashes. It has no scheme (':'), user ('@'), query ('?'), fragment, "//"
// or backslash, so kustomize can parse it neither as a URL nor as a remote
// Git repository except through a github.com host, which remoteHost refuses.
var localPath = regexp.MustCompile(`^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$`)

// checkLocalPath accepts only relative paths that stay inside the directory
// and that kustomize cannot read as a URL or a remote Git repository (which
// it would download or clone with git).
func checkLocalPath(p string) error {
	segments := strings.Split(p, "/")
	switch {
	case path.IsAbs(p) || slices.Contains(segments, ".."):
		return errors.New("the path leaves the peering directory: a kustomization may only use the files of its own directory")
	case !localPath.MatchString(p) || slices.ContainsFunc(segments, remoteHost):
		return errors.New("remote resources are not allowed: a kustomization may only use the files of its own directory (plain relative paths of letters, digits, '.', '_' and '-')")
	}
	return nil
}

// remoteHost reports whether a path segment is one kustomize's repository
// parser (sigs.k8s.io/kustomize/api/internal/git, not importable) reads as a
// Git host or repository marker, in any case: the github.com host it accepts
// without a scheme, a "*.git" repository or the "_git" delimiter.
func remoteHost(segment string) bool {
	s := strings.ToLower(segment)
	return s == "github.com" || s == "_git" || strings.HasSuffix(s, ".git")
}

// checkStream applies checkNode to every YAML document of data, before
// kustomize parses it; data that is not YAML is left to kustomize.
func checkStream(data []byte) error {
	dec := yamlv3.NewDecoder(bytes.NewReader(data))
	for {
		var node yamlv3.Node
		if err := dec.Decode(&node); err != nil {
			return nil
		}
		if err := checkNode(&node); err != nil {
			return err
		}
	}
}

func hasFile(files map[string][]byte, k vocabulary.FileKind) bool {
	_, ok := files[string(k)]
	return ok
}

func kindName(k vocabulary.FileKind) string {
	for gvk, kk := range kinds {
		if kk == k {
			return gvk[1]
		}
	}
	return string(k)
}

func sortedNames[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
