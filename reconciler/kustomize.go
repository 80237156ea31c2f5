package reconciler

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1/documents"
	"github.com/gitpeer/gitpeer/gitsync"
	"github.com/gitpeer/gitpeer/reconciler/layout"
)

// kustomizedDirs returns the peering directories <providerID>/<consumerID> of
// listing that hold a kustomization.yaml: their documents are built with
// kustomize instead of read file by file.
func kustomizedDirs(listing *gitsync.Listing) map[string]bool {
	dirs := map[string]bool{}
	for _, f := range listing.Files {
		if dir, name := path.Split(f.Path); name == documents.KustomizationFile && strings.Count(f.Path, "/") == 2 {
			dirs[strings.TrimSuffix(dir, "/")] = true
		}
	}
	return dirs
}

// loadKustomized reads every regular file of the peering directory dir and
// builds its documents with kustomize (layout.Peering.Kustomize). A file that
// cannot be read refuses the build like a failed one (layout.Peering.RefuseBuild).
func (s *session) loadKustomized(ctx context.Context, listing *gitsync.Listing, dir string, mine func(layout.Path) bool) {
	p, err := layout.ParseDir(dir)
	if err != nil || !mine(p) {
		return // invalid IDs are reported with the directory's documents
	}
	pe := s.peering(p.Provider, p.Consumer)
	files := map[string][]byte{}
	for _, f := range listing.Files {
		name, ok := strings.CutPrefix(f.Path, dir+"/")
		if !ok {
			continue
		}
		data, err := s.repo.ReadFile(s.head, f.Path)
		if err != nil {
			err = fmt.Errorf("%s: %w; %s is not built", f.Path, err, documents.KustomizationFile)
			pe.RefuseBuild(func(k layout.Kind) bool {
				return slices.ContainsFunc(listing.Files, func(g gitsync.File) bool { return g.Path == dir+"/"+string(k) })
			}, err)
			s.reject(ctx, f.Path, err)
			return
		}
		files[name] = data
	}
	if err := pe.Kustomize(files); err != nil {
		s.reject(ctx, path.Join(dir, documents.KustomizationFile), err)
	}
}
