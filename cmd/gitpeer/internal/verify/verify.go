// Package verify checks a commit of a peering repository offline, as the
// repository's CI runs `gitpeer verify`: it reads the commit's Git tree with
// gitsync and protocol.Load exactly as the agent does (file modes, duplicate
// entries, caps, strict decoding, kustomize builds), then checks Tenant
// signatures and CSRs and Identity certificates. It needs no cluster and no
// network; the rules that need the provider's cluster state are left to it.
package verify

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/gitpeer/gitpeer/gitsync"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/reconciler/verdict"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// Options of Check.
type Options struct {
	// Path is the peering root inside the repository (PeeringRepository
	// spec.path); empty for the repository's root.
	Path string
	// Revision is the commit to check (a branch, tag or hash); empty for HEAD.
	Revision string
	// Base, when set, judges Revision as the head of a pull request into Base (a branch, tag
	// or hash): what it changes since their merge base must be only the proposing consumer's
	// own request.yaml and tenant.yaml (verdict.PullRequest), and then every file of the head
	// is checked as without Base.
	Base string
	// Now is the time certificates must be valid at; zero means time.Now().
	Now time.Time
}

// Report is what Check judged and its verdict.
type Report struct {
	// Commit is the commit judged (opts.Revision resolved, once): a CI job posts its status
	// on this very commit, never on a branch that may have moved since.
	Commit string `json:"commit"`
	// MergeBases are the merge bases of Commit and opts.Base, when set.
	MergeBases []string `json:"mergeBases,omitempty"`
	// Results are one per file (and per change, with opts.Base), sorted by path. The checks of a
	// peering directory are verdict's, which the consumer agent also runs before proposing a Tenant.
	Results []verdict.Result `json:"results"`
}

// Check verifies every file under opts.Path in a commit of the Git
// repository at repo (a worktree or a bare repository), reading the commit's
// tree through gitsync and decoding it with protocol.Load exactly as the agent
// does, and returns one Result per file, sorted by path; with opts.Base, also
// one per path the commit changes as a pull request into opts.Base. The
// working tree is never read. It fails only when a commit cannot be read.
func Check(repo string, opts Options) (Report, error) {
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	if opts.Revision == "" {
		opts.Revision = "HEAD"
	}
	r, err := gitsync.OpenLocal(repo, gitsync.Config{Path: opts.Path, MaxFileSize: protocol.MaxFileSize, Limits: protocol.Limits})
	if err != nil {
		return Report{}, err
	}
	defer r.Close()
	commit, err := r.Resolve(opts.Revision)
	if err != nil {
		return Report{}, err
	}
	rep := Report{Commit: commit.String()}
	if opts.Base != "" {
		if rep.MergeBases, rep.Results, err = changes(r, opts.Base, commit); err != nil {
			return Report{}, err
		}
	}
	listing, err := r.List(commit)
	if err != nil {
		return Report{}, err
	}
	loaded := protocol.Load(listing, r.NewRound(commit), func(string, string) bool { return true })
	results := judge(listing, loaded, opts.Now)
	prefix := strings.Trim(opts.Path, "/")
	for i := range results {
		results[i].Path = path.Join(prefix, results[i].Path)
		if results[i].Directory {
			results[i].Path += "/"
		}
	}
	rep.Results = append(rep.Results, results...)
	slices.SortStableFunc(rep.Results, func(a, b verdict.Result) int { return strings.Compare(a.Path, b.Path) })
	return rep, nil
}

// changes judges what head changes as a pull request into base (verdict.PullRequest): one
// result per changed path of the whole repository, relative to its top.
func changes(r *gitsync.Repo, base string, head plumbing.Hash) ([]string, []verdict.Result, error) {
	b, err := r.Resolve(base)
	if err != nil {
		return nil, nil, fmt.Errorf("base %s: %w", base, err)
	}
	mergeBases, changed, err := r.PullRequestChanges(b, head)
	if err != nil {
		return nil, nil, err
	}
	cs := make([]verdict.Change, 0, len(changed))
	for _, c := range changed {
		entry := ""
		switch {
		case c.Mode == filemode.Regular || c.Mode == filemode.Deprecated:
			entry = verdict.EntryFile
		case c.Mode != 0:
			entry = gitsync.EntryKind(c.Mode)
		}
		cs = append(cs, verdict.Change{Path: c.Path, Entry: entry})
	}
	hashes := make([]string, len(mergeBases))
	for i, h := range mergeBases {
		hashes[i] = h.String()
	}
	return hashes, verdict.PullRequest(r.Root(), cs), nil
}

// Invalid counts the invalid results.
func Invalid(results []verdict.Result) int {
	n := 0
	for _, r := range results {
		if !r.Valid {
			n++
		}
	}
	return n
}

// Count returns how many files the results checked (documents and kustomizations, valid or not),
// how many of those are invalid, and how many files were ignored; peering directories' verdicts
// are not files and are not counted.
func Count(results []verdict.Result) (checked, invalid, ignored int) {
	for _, r := range results {
		switch {
		case r.Directory:
		case r.Ignored:
			ignored++
		case !r.Valid:
			invalid++
			checked++
		default:
			checked++
		}
	}
	return checked, invalid, ignored
}

// Uncommitted lists the files under opts.Path that differ between repo's working tree (or index)
// and its HEAD: edits Check does not see, since it reads a commit.
func Uncommitted(repo string, opts Options) ([]string, error) {
	return gitsync.Uncommitted(repo, opts.Path)
}

// judge turns what protocol.Load read into results: its rejections, the
// cross-file checks of every peering directory, and a result for every other
// entry of the listing.
func judge(listing *gitsync.Listing, loaded *protocol.Loaded, now time.Time) []verdict.Result {
	var results []verdict.Result
	rejected := map[string]bool{}
	for _, rj := range loaded.Rejected {
		rejected[rj.Path] = true
		results = append(results, verdict.Result{Path: rj.Path, Reason: trimPath(rj.Err, rj.Path)})
	}
	for _, f := range listing.Files {
		if !rejected[f.Path] {
			if r, ok := fileResult(f.Path, loaded); ok {
				results = append(results, r)
			}
		}
	}
	for _, sk := range listing.Skipped {
		if !rejected[sk.Path] {
			results = append(results, verdict.Result{Path: sk.Path, Valid: true, Ignored: true, Reason: trimPath(sk, sk.Path) + ": not a gitpeer document, ignored"})
		}
	}
	terms := map[string]bool{} // every directory judges its provider's terms.yaml: report it once
	for _, k := range slices.Sorted(maps.Keys(loaded.Peerings)) {
		for _, r := range verdict.Peering(loaded.Peerings[k], now) {
			if _, isTerms := protocol.ParseTermsPath(r.Path); !isTerms || !terms[r.Path] {
				terms[r.Path] = isTerms
				results = append(results, r)
			}
		}
	}
	for _, f := range listing.Files { // the terms of a provider with no peering directory yet
		if provider, ok := protocol.ParseTermsPath(f.Path); ok && !terms[f.Path] && !rejected[f.Path] {
			t, err := loaded.Terms(provider)
			results = append(results, verdict.Terms(&protocol.Documents{Provider: provider, Terms: t, TermsErr: err}))
		}
	}
	return results
}

// fileResult is the result of a file protocol.Load did not reject, unless the
// cross-file checks of its directory give it one.
func fileResult(rel string, loaded *protocol.Loaded) (verdict.Result, bool) {
	_, ok, _ := protocol.ParsePath(rel)
	kustomized, isKustomization := protocol.KustomizedDir(rel)
	name := path.Base(rel)
	_, isTerms := protocol.ParseTermsPath(rel)
	switch {
	case ok || isTerms:
		return verdict.Result{}, false
	case isKustomization && loaded.Peerings[kustomized] != nil:
		return verdict.Result{Path: rel, Valid: true, Reason: "built with kustomize; the documents below are checked as built"}, true
	case knownName(name):
		return verdict.Result{Path: rel, Reason: name + " is at the wrong depth: documents live at <providerID>/<consumerID>/" + name}, true
	}
	return verdict.Result{Path: rel, Valid: true, Ignored: true, Reason: "not a gitpeer document: ignored"}, true
}

func knownName(name string) bool {
	return slices.Contains(vocabulary.FileKinds, vocabulary.FileKind(name))
}

// trimPath drops the "path: " and "invalid document: " prefixes protocol puts
// on its errors, since the result already names the file, and joins lines.
func trimPath(err error, rel string) string {
	msg := strings.TrimPrefix(err.Error(), rel+": ")
	msg = strings.TrimPrefix(msg, protocol.ErrInvalid.Error()+": ")
	return strings.ReplaceAll(msg, "\n", "; ")
}
