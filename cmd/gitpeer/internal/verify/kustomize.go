package verify

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1/documents"
	"github.com/gitpeer/gitpeer/reconciler/layout"
)

// kustomized reports whether the peering directory dir holds a regular
// kustomization.yaml: the agent then builds its documents with kustomize
// instead of reading them one by one, and so does verify.
func (c *checker) kustomized(dir string) bool {
	v, ok := c.kust[dir]
	if !ok {
		fi, err := os.Lstat(filepath.Join(c.root, filepath.FromSlash(dir), documents.KustomizationFile))
		v = err == nil && fi.Mode().IsRegular()
		c.kust[dir] = v
	}
	return v
}

// kustomize builds the peering directory of the kustomization.yaml at rel
// with layout.Peering.Kustomize, as the agent does. The built documents get
// the cross-file checks of any directory; the result for kustomization.yaml
// carries every build or decoding problem.
func (c *checker) kustomize(rel string) {
	dir := path.Dir(rel)
	dp, err := layout.ParseDir(dir)
	if err != nil {
		c.results = append(c.results, Result{Path: rel, Reason: trimPath(err, dir)})
		return
	}
	files := map[string][]byte{}
	root := filepath.Join(c.root, filepath.FromSlash(dir))
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err // symbolic links and the like have their own result
		}
		name, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		data, err := readCapped(p)
		if err != nil {
			return fmt.Errorf("%s: %w", path.Join(dir, filepath.ToSlash(name)), err)
		}
		files[filepath.ToSlash(name)] = data
		return nil
	})
	d := c.dir(dp)
	if err != nil {
		c.results = append(c.results, Result{Path: rel, Reason: fmt.Sprintf("not built: %v", err)})
		d.pe.RefuseBuild(func(k layout.Kind) bool {
			fi, err := os.Lstat(filepath.Join(root, string(k)))
			return err == nil && fi.Mode().IsRegular()
		}, err)
		return
	}
	if err := d.pe.Kustomize(files); err != nil {
		c.results = append(c.results, Result{Path: rel, Reason: strings.ReplaceAll(strings.TrimPrefix(err.Error(), rel+": "), "\n", "; ")})
	} else {
		c.results = append(c.results, Result{Path: rel, Valid: true, Reason: "built with kustomize; the documents below are checked as built"})
	}
	for _, k := range layout.Kinds {
		d.ok[k] = d.ok[k] || d.pe.Invalid[k] == nil && documentOf(&d.pe, k)
	}
}

// documentOf reports whether pe holds a decoded document of kind k.
func documentOf(pe *layout.Peering, k layout.Kind) bool {
	switch k {
	case layout.Request:
		return pe.Request != nil
	case layout.Nonce:
		return pe.Nonce != nil
	case layout.Tenant:
		return pe.Tenant != nil
	case layout.Identity:
		return pe.Identity != nil
	}
	return false
}
