// Package edit changes a local checkout of a peering repository for people
// who prefer a pull request to an agent: it writes a consumer's request.yaml
// or deletes a tenant.yaml, and returns the git commands that commit the
// change. It never commits or pushes.
package edit

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/reconciler/layout"
)

// Peering names one <root>/<provider>/<consumer> directory of a checkout.
type Peering struct {
	Checkout, Root     string
	Provider, Consumer string
}

// file returns the checkout-relative path of kind, after validating the IDs.
func (p Peering) file(kind layout.Kind) (string, error) {
	for _, id := range []string{p.Provider, p.Consumer} {
		if err := authv1beta1.ValidateClusterID(id); err != nil {
			return "", err
		}
	}
	rel := layout.Path{Provider: p.Provider, Consumer: p.Consumer, Kind: kind}.String()
	if _, _, err := layout.ParsePath(rel); err != nil {
		return "", err
	}
	return path.Join(filepath.ToSlash(p.Root), rel), nil
}

// Request writes request.yaml with the consumer's public key (a PEM PUBLIC
// KEY, or a PEM private key whose public half is used) and returns the
// commands to commit it.
func Request(p Peering, keyPEM []byte) (string, error) {
	key, err := crypto.ParsePublicKey(keyPEM)
	if err != nil {
		priv, perr := crypto.ParsePrivateKeyPEM(keyPEM)
		if perr != nil {
			return "", fmt.Errorf("public key: %w", err)
		}
		key = priv.Public()
	}
	rel, err := p.file(layout.Request)
	if err != nil {
		return "", err
	}
	doc, err := layout.RequestDocument(p.Provider, p.Consumer, key)
	if err != nil {
		return "", err
	}
	if err := (&layout.Peering{}).Decode(layout.Path{Provider: p.Provider, Consumer: p.Consumer, Kind: layout.Request}, doc); err != nil {
		return "", err
	}
	file := filepath.Join(p.Checkout, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(file, doc, 0o644); err != nil {
		return "", err
	}
	return commands(rel, "", fmt.Sprintf("Request peering of %s with %s", p.Consumer, p.Provider)), nil
}

// Revoke deletes tenant.yaml and returns the commands to commit the deletion.
// Once merged, the provider's agent deletes the Tenant and its RBAC and
// removes identity.yaml.
func Revoke(p Peering) (string, error) {
	rel, err := p.file(layout.Tenant)
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
	if err := os.Remove(full); err != nil {
		return "", err
	}
	return commands(rel, fmt.Sprintf("revoke/%s/%s", p.Provider, p.Consumer), fmt.Sprintf("Revoke %s on %s", p.Consumer, p.Provider)), nil
}

// commands returns the git commands that commit rel, on a new branch for a
// pull request when branch is set.
func commands(rel, branch, subject string) string {
	out := ""
	if branch != "" {
		out = fmt.Sprintf("git switch -c %s\n", branch)
	}
	out += fmt.Sprintf("git add -A -- %s && git commit -m %q -- %s\n", rel, subject, rel)
	if branch != "" {
		out += fmt.Sprintf("git push origin %s   # then open a pull request; merging it revokes\n", branch)
	}
	return out
}
