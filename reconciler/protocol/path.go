package protocol

import (
	"fmt"
	"path"
	"strings"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// Path locates one document: <providerID>/<consumerID>/<kind>.
type Path struct {
	Provider, Consumer string
	Kind               vocabulary.FileKind
}

// String returns the path relative to the repository's peering root.
func (p Path) String() string { return path.Join(p.Provider, p.Consumer, string(p.Kind)) }

// Dir returns the peering directory <providerID>/<consumerID>.
func (p Path) Dir() string { return path.Join(p.Provider, p.Consumer) }

// ParsePath maps a path relative to the peering root to a document. ok is false
// for files gitpeer does not know (README.md, kustomization.yaml, ...), which
// are ignored; err is set when the path has the shape of a document but its
// IDs are not valid cluster IDs.
func ParsePath(rel string) (p Path, ok bool, err error) {
	parts := strings.Split(rel, "/")
	if len(parts) != 3 || !known(vocabulary.FileKind(parts[2])) {
		return Path{}, false, nil
	}
	p = Path{Provider: parts[0], Consumer: parts[1], Kind: vocabulary.FileKind(parts[2])}
	if err := p.validate(); err != nil {
		return p, true, fmt.Errorf("%s: %w", rel, err)
	}
	return p, true, nil
}

// ParseDir maps a peering directory <providerID>/<consumerID>, relative to the
// peering root, to a Path without a Kind.
func ParseDir(dir string) (Path, error) {
	provider, consumer, ok := strings.Cut(dir, "/")
	p := Path{Provider: provider, Consumer: consumer}
	if !ok || strings.Contains(consumer, "/") {
		return p, fmt.Errorf("%s: not a <providerID>/<consumerID> directory", dir)
	}
	if err := p.validate(); err != nil {
		return p, fmt.Errorf("%s: %w", dir, err)
	}
	return p, nil
}

// KustomizedDir is the kustomized-directory rule: a kustomization.yaml
// directly in a peering directory <providerID>/<consumerID> (rel is relative
// to the peering root) makes that directory built with kustomize. It returns
// the directory, and ok false for any other path, including a
// kustomization.yaml at another depth, which is an ordinary ignored file.
func KustomizedDir(rel string) (dir string, ok bool) {
	dir, name := path.Split(rel)
	if name != vocabulary.KustomizationFile || strings.Count(rel, "/") != 2 {
		return "", false
	}
	return strings.TrimSuffix(dir, "/"), true
}

// validate checks the IDs of p.
func (p Path) validate() error {
	for _, id := range []string{p.Provider, p.Consumer} {
		if err := authv1beta1.ValidateClusterID(id); err != nil {
			return err
		}
	}
	if p.Provider == p.Consumer {
		return fmt.Errorf("a cluster cannot peer with itself")
	}
	return nil
}

func known(k vocabulary.FileKind) bool {
	for _, kk := range vocabulary.FileKinds {
		if k == kk {
			return true
		}
	}
	return false
}
