package verdict

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// Change is a path a pull request changes: its entry at the head differs from the merge base's.
type Change struct {
	// Path is slash-separated, relative to the repository's top (not to the peering root).
	Path string
	// Entry is what the path is at the head: "file" (a regular file), "" when the pull request
	// deletes it, or another kind ("symlink", "executable", "submodule").
	Entry string
}

// EntryFile is the Entry of a regular file.
const EntryFile = "file"

// PullRequest judges what a pull request changes, before the per-directory checks of its head:
// a consumer proposes only its own request.yaml and tenant.yaml, in one peering directory under
// root (the peering root, PeeringRepository spec.path). Every other change fails: the
// provider's files (nonce.yaml, identity.yaml, terms.yaml), a kustomization.yaml (it rewrites
// what the directory's documents say), another directory's files, anything outside the peering
// root (CI workflows, CODEOWNERS), or the allowed files as anything but regular files. A merge
// of such a pull request would carry more than the proposal a reviewer approves, so the check a
// reviewer relies on must be red whatever else it finds. It returns one result per change.
func PullRequest(root string, changes []Change) []Result {
	root = strings.Trim(root, "/")
	dirs := map[string]bool{}
	for _, c := range changes {
		if p, ok := proposed(root, c); ok {
			dirs[p.Dir()] = true
		}
	}
	out := make([]Result, 0, len(changes))
	for _, c := range changes {
		r := Result{Path: c.Path}
		p, ok := proposed(root, c)
		switch {
		case !ok:
			r.Reason = "changed by the pull request: " + forbidden(root, c) + "; " + proposerMayChange(root)
		case len(dirs) > 1:
			r.Reason = fmt.Sprintf("changed by the pull request, which changes %d peering directories (%s): a consumer proposes for one provider at a time",
				len(dirs), strings.Join(slices.Sorted(maps.Keys(dirs)), ", "))
		default:
			r.Valid = true
			r.Reason = fmt.Sprintf("changed by the pull request: %s's own %s, proposed to %s", p.Consumer, p.Kind, p.Provider)
		}
		out = append(out, r)
	}
	return out
}

// proposed returns the document c changes when it is one a consumer may propose: request.yaml
// or tenant.yaml in a peering directory under root, as a regular file or deleted.
func proposed(root string, c Change) (protocol.Path, bool) {
	rel, under := underRoot(root, c.Path)
	if !under || c.Entry != EntryFile && c.Entry != "" {
		return protocol.Path{}, false
	}
	p, ok, err := protocol.ParsePath(rel)
	return p, ok && err == nil && (p.Kind == vocabulary.RequestFile || p.Kind == vocabulary.TenantFile)
}

// underRoot returns p relative to root, and whether it is under it.
func underRoot(root, p string) (string, bool) {
	if root == "" {
		return p, true
	}
	rel, ok := strings.CutPrefix(p, root+"/")
	return rel, ok
}

// forbidden says why a change that is not a proposal fails.
func forbidden(root string, c Change) string {
	rel, under := underRoot(root, c.Path)
	if !under {
		return "outside the peering root " + cmpRoot(root) + " (CI workflows, CODEOWNERS and the like are the repository owners')"
	}
	name := path.Base(rel)
	kustomized, isKustomization := protocol.KustomizedDir(rel)
	_, isTerms := protocol.ParseTermsPath(rel)
	p, isDoc, err := protocol.ParsePath(rel)
	switch {
	case isDoc && err == nil && c.Entry != EntryFile && c.Entry != "":
		return fmt.Sprintf("%s is not a regular file (%s)", name, c.Entry)
	case isDoc && err == nil:
		return fmt.Sprintf("%s is written by the provider's agent (%s)", name, p.Dir())
	case isKustomization:
		return fmt.Sprintf("a kustomization rewrites the documents of %s", kustomized)
	case isTerms:
		return "terms.yaml is the provider's: what a merge grants"
	}
	return "not a document a consumer proposes"
}

// cmpRoot names the peering root for messages.
func cmpRoot(root string) string {
	if root == "" {
		return "(the repository's top)"
	}
	return root + "/"
}

// proposerMayChange says what a pull request may change.
func proposerMayChange(root string) string {
	return "a pull request may change only " + path.Join(root, "<providerID>/<consumerID>") + "/request.yaml and tenant.yaml, of one peering directory"
}
