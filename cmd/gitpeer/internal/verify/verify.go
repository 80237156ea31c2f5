// Package verify checks a checkout of a peering repository offline, as the
// repository's CI runs `gitpeer verify`: the layout, every document strictly
// decoded with the agent's own rules (reconciler/layout), Tenant signatures
// and CSRs, and Identity certificates. It needs no cluster and no network.
package verify

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1/documents"
	"github.com/gitpeer/gitpeer/reconciler/layout"
)

// Result is the verdict on one file.
type Result struct {
	// Path is the file's slash-separated path relative to the checkout.
	Path string `json:"path"`
	// Valid is false when the agent would reject the file (or CI should).
	Valid bool `json:"valid"`
	// Reason says what was checked, or why the file is invalid.
	Reason string `json:"reason"`
	// Ignored marks files gitpeer does not read; they are listed only on request.
	Ignored bool `json:"ignored,omitempty"`
	// Directory marks the verdict on a peering directory as a whole (its Path
	// ends in "/"): what the provider does with it. It is not a file.
	Directory bool `json:"directory,omitempty"`
}

// Options of Check.
type Options struct {
	// Path is the peering root inside the checkout (PeeringRepository
	// spec.path); empty for the checkout's root.
	Path string
	// Now is the time certificates must be valid at; zero means time.Now().
	Now time.Time
}

// Check verifies every file under checkout/opts.Path and returns one Result
// per file, sorted by path. It fails only when the checkout cannot be read.
func Check(checkout string, opts Options) ([]Result, error) {
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	root := filepath.Join(checkout, filepath.FromSlash(opts.Path))
	if fi, err := os.Stat(root); err != nil {
		return nil, err
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", root)
	}
	prefix := path.Clean(filepath.ToSlash(opts.Path))
	c := &checker{root: root, dirs: map[string]*directory{}, kust: map[string]bool{}}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == root {
			return nil
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if !d.IsDir() || d.Type()&fs.ModeSymlink != 0 {
			c.file(p, rel, d)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	results := c.finish(opts.Now)
	for i := range results {
		results[i].Path = path.Join(prefix, results[i].Path)
		if results[i].Directory {
			results[i].Path += "/"
		}
	}
	slices.SortFunc(results, func(a, b Result) int { return strings.Compare(a.Path, b.Path) })
	return results, nil
}

// Invalid counts the invalid results.
func Invalid(results []Result) int {
	n := 0
	for _, r := range results {
		if !r.Valid {
			n++
		}
	}
	return n
}

// checker accumulates the results of a walk and the decoded documents of each
// peering directory for the cross-file checks.
type checker struct {
	root    string
	results []Result
	dirs    map[string]*directory
	kust    map[string]bool // whether a peering directory holds a kustomization.yaml
}

// file checks one non-directory entry; rel is relative to the peering root.
func (c *checker) file(p, rel string, d fs.DirEntry) {
	switch {
	case d.Type()&fs.ModeSymlink != 0:
		c.results = append(c.results, Result{Path: rel, Reason: "symbolic link: commit the file itself (the agent reads Git objects and never follows links)"})
		return
	case !d.Type().IsRegular():
		c.results = append(c.results, Result{Path: rel, Reason: "not a regular file"})
		return
	}
	dp, ok, err := layout.ParsePath(rel)
	switch {
	case path.Base(rel) == documents.KustomizationFile && strings.Count(rel, "/") == 2:
		c.kustomize(rel)
		return
	case ok && err == nil && c.kustomized(dp.Dir()):
		return // built and checked with the directory's kustomization.yaml
	case err != nil:
		c.results = append(c.results, Result{Path: rel, Reason: trimPath(err, rel)})
		return
	case !ok && knownName(path.Base(rel)):
		c.results = append(c.results, Result{Path: rel, Reason: path.Base(rel) + " is at the wrong depth: documents live at <providerID>/<consumerID>/" + path.Base(rel)})
		return
	case !ok:
		c.results = append(c.results, Result{Path: rel, Valid: true, Ignored: true, Reason: "not a gitpeer document: ignored"})
		return
	}
	data, err := readCapped(p)
	if err != nil {
		c.results = append(c.results, Result{Path: rel, Reason: err.Error()})
		return
	}
	dir := c.dir(dp)
	if err := dir.pe.Decode(dp, data); err != nil {
		c.results = append(c.results, Result{Path: rel, Reason: trimPath(err, rel)})
		return
	}
	dir.ok[dp.Kind] = true
}

// readCapped reads a file of at most layout.MaxFileSize bytes, refusing larger
// ones without reading them.
func readCapped(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, layout.MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > layout.MaxFileSize {
		size := int64(len(data))
		if fi, err := f.Stat(); err == nil {
			size = fi.Size()
		}
		return nil, fmt.Errorf("%w: file is %d bytes, the limit is %d", layout.ErrInvalid, size, layout.MaxFileSize)
	}
	return data, nil
}

func (c *checker) dir(p layout.Path) *directory {
	d := c.dirs[p.Dir()]
	if d == nil {
		d = &directory{pe: layout.Peering{Provider: p.Provider, Consumer: p.Consumer}, ok: map[layout.Kind]bool{}}
		c.dirs[p.Dir()] = d
	}
	return d
}

// finish runs the cross-file checks and returns every result.
func (c *checker) finish(now time.Time) []Result {
	for _, d := range c.dirs {
		c.results = append(c.results, d.check(now)...)
	}
	return c.results
}

func knownName(name string) bool {
	return slices.Contains(layout.Kinds, layout.Kind(name))
}

// trimPath drops the "path: " and "invalid document: " prefixes layout puts
// on its errors, since the result already names the file.
func trimPath(err error, rel string) string {
	msg := strings.TrimPrefix(err.Error(), rel+": ")
	return strings.TrimPrefix(msg, layout.ErrInvalid.Error()+": ")
}
