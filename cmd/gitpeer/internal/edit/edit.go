// Package edit changes a local checkout of a peering repository for people
// who prefer a pull request to an agent: it writes a consumer's request.yaml
// or deletes a tenant.yaml (and drops it from a kustomization.yaml beside
// it), and returns the git commands that commit the
// change. It never commits or pushes.
package edit

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// CheckoutDir names one <root>/<provider>/<consumer> directory of a checkout.
type CheckoutDir struct {
	Checkout, Root     string
	Provider, Consumer string
}

// file returns the checkout-relative path of kind, after validating the IDs.
func (p CheckoutDir) file(kind vocabulary.FileKind) (string, error) {
	for _, id := range []string{p.Provider, p.Consumer} {
		if err := authv1beta1.ValidateClusterID(id); err != nil {
			return "", err
		}
	}
	rel := protocol.Path{Provider: p.Provider, Consumer: p.Consumer, Kind: kind}.String()
	if _, _, err := protocol.ParsePath(rel); err != nil {
		return "", err
	}
	return path.Join(filepath.ToSlash(p.Root), rel), nil
}

// Request writes request.yaml with the consumer's public key (a PEM PUBLIC
// KEY, or a PEM private key whose public half is used) and returns the
// commands to commit it.
func Request(p CheckoutDir, keyPEM []byte) (string, error) {
	key, err := crypto.ParsePublicKey(keyPEM)
	if err != nil {
		priv, perr := crypto.ParsePrivateKeyPEM(keyPEM)
		if perr != nil {
			return "", fmt.Errorf("public key: %w", err)
		}
		key = priv.Public()
	}
	rel, err := p.file(vocabulary.RequestFile)
	if err != nil {
		return "", err
	}
	doc, err := protocol.RequestDocument(p.Provider, p.Consumer, key)
	if err != nil {
		return "", err
	}
	if err := (&protocol.Documents{}).Decode(protocol.Path{Provider: p.Provider, Consumer: p.Consumer, Kind: vocabulary.RequestFile}, doc); err != nil {
		return "", err
	}
	file := filepath.Join(p.Checkout, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(file, doc, 0o644); err != nil {
		return "", err
	}
	return commands([]string{rel}, "", fmt.Sprintf("Request peering of %s with %s", p.Consumer, p.Provider)), nil
}

// Revoke deletes tenant.yaml and returns the commands to commit the deletion.
// Once merged, the provider's agent deletes the Tenant and its RBAC and
// removes identity.yaml. A kustomization.yaml beside it no longer lists
// tenant.yaml (see dropTenant), so the directory still builds.
func Revoke(p CheckoutDir) (string, error) {
	rel, err := p.file(vocabulary.TenantFile)
	if err != nil {
		return "", err
	}
	full := filepath.Join(p.Checkout, filepath.FromSlash(rel))
	if fi, err := os.Lstat(full); errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("%s does not exist: nothing to revoke", rel)
	} else if err != nil {
		return "", err
	} else if fi.IsDir() {
		return "", fmt.Errorf("%s is a directory", rel)
	}
	kustRel := path.Join(path.Dir(rel), vocabulary.KustomizationFile)
	kustomization, changed, err := dropTenant(filepath.Join(p.Checkout, filepath.FromSlash(kustRel)))
	if err != nil {
		return "", fmt.Errorf("%s: %w", kustRel, err)
	}
	if err := os.Remove(full); err != nil {
		return "", err
	}
	paths := []string{rel}
	if changed {
		if err := writeOrRemove(filepath.Join(p.Checkout, filepath.FromSlash(kustRel)), kustomization); err != nil {
			return "", err
		}
		paths = append(paths, kustRel)
	}
	return commands(paths, fmt.Sprintf("revoke/%s/%s", p.Provider, p.Consumer), fmt.Sprintf("Revoke %s on %s", p.Consumer, p.Provider)), nil
}

// dropTenant returns the kustomization.yaml at file without tenant.yaml in
// its resources, and whether that changes it. A kustomization left without
// resources and components builds nothing (its patches would patch nothing),
// so it is returned as nil: to be deleted. Comments and the other fields are
// kept. A missing file is no change.
func dropTenant(file string) ([]byte, bool, error) {
	data, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	} else if err != nil {
		return nil, false, err
	}
	var doc yamlv3.Node
	if err := yamlv3.Unmarshal(data, &doc); err != nil {
		return nil, false, err
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yamlv3.MappingNode {
		return nil, false, errors.New("not a YAML mapping")
	}
	root := doc.Content[0]
	resources := value(root, "resources")
	if resources == nil || resources.Kind != yamlv3.SequenceNode {
		return nil, false, nil
	}
	kept := slices.DeleteFunc(slices.Clone(resources.Content), func(n *yamlv3.Node) bool {
		return path.Clean(n.Value) == string(vocabulary.TenantFile)
	})
	if len(kept) == len(resources.Content) {
		return nil, false, nil
	}
	resources.Content = kept
	if components := value(root, "components"); len(kept) == 0 && (components == nil || len(components.Content) == 0) {
		return nil, true, nil
	}
	var out bytes.Buffer
	enc := yamlv3.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, false, err
	}
	return out.Bytes(), true, nil
}

// value returns the value of key in the mapping n, or nil.
func value(n *yamlv3.Node, key string) *yamlv3.Node {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// writeOrRemove writes data to file, or removes file when data is nil.
func writeOrRemove(file string, data []byte) error {
	if data == nil {
		return os.Remove(file)
	}
	return os.WriteFile(file, data, 0o644)
}

// commands returns the git commands that commit paths, on a new branch for a
// pull request when branch is set.
func commands(paths []string, branch, subject string) string {
	out := ""
	if branch != "" {
		out = fmt.Sprintf("git switch -c %s\n", branch)
	}
	list := strings.Join(paths, " ")
	out += fmt.Sprintf("git add -A -- %s && git commit -m %q -- %s\n", list, subject, list)
	if branch != "" {
		out += fmt.Sprintf("git push origin %s   # then open a pull request; merging it revokes\n", branch)
	}
	return out
}
