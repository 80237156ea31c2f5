package protocol

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"
	"unique"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitpeer/gitpeer/gitsync"
)

// Reader is the repository a Loader reads; *gitsync.Repo is one.
type Reader interface {
	ListUnknown(commit plumbing.Hash, within func(dir string) bool, known func(dir string, tree plumbing.Hash) bool) (*gitsync.Listing, error)
	ListDir(commit plumbing.Hash, dir string, tree plumbing.Hash) (*gitsync.Listing, error)
	NewRound(commit plumbing.Hash) *gitsync.Round
}

// Loader reads successive commits of one repository for one reader (the
// agent of one PeeringRepository). Of each peering directory it keeps only
// what tells whether the directory changed (its tree hash) and what a round
// needs without its documents (whether it holds documents and a request, its
// rejections, the bytes of its files), never the documents: a round lists
// and decodes the peering directories whose tree changed since the previous
// round (MaxDirectoriesPerRound counts only those), and carries the others
// over, decoding one only when the round asks for its documents
// (Loaded.Documents: the peerings the round visits). A directory's verdict
// (its documents and rejections) is the one Load gives its tree; a verdict
// that depended on the round (a directory left unread over a cap of the
// round) is never carried. An entry found in place of a peering directory
// (a symlink, a submodule, a refused tree) is carried by its object id: it
// is reported every round and changed only when it changes. A Loaded of a
// Loader is read during its round, before the Loader's next Load, which
// replaces what the Loaded carries. The documents it decodes are the
// round's: they are dropped with the Loaded. The zero Loader is empty and
// ready; it is safe for concurrent use.
type Loader struct {
	mu   sync.Mutex
	dirs map[string]*keptDir // every peering directory of the last round, by <providerID>/<consumerID>
	// round counts the Loads; keptDir.seen is the last that listed a directory.
	round uint64
	// cas holds one copy of each CA the Identities decoded carry: every Identity
	// of a provider repeats its CA, 10,000 copies of it in a full round otherwise.
	cas map[string][]byte
}

// maxSharedCAs bounds Loader.cas; it is emptied when full.
const maxSharedCAs = 64

// keptDir is what the Loader keeps of one peering directory: what Load made
// of its tree, without the documents.
type keptDir struct {
	// tree is the directory's tree hash, or the object id of the entry in its
	// place (entry).
	tree     plumbing.Hash
	rejected []Rejection // reported every round that carries it
	size     int64       // bytes of the files read, charged to every round that carries it
	seen     uint64      // the last round that listed it
	// documents: Load made Documents of it; request: with a valid request.yaml.
	documents, request bool
	// entry: not a directory Load read, but an entry in its place it reported
	// (gitsync.Listing.Skipped), listed anew every round.
	entry bool
	// final: no cap of the round left part of it unread; else it is read
	// again in the next round.
	final bool
}

// Load reads commit of repo in scope as Load does, listing and decoding only
// the peering directories not carried from an earlier round (all of them
// for a new Loader: `gitpeer verify` and the agent's first round read
// everything); the Loaded decodes a carried one when asked for it.
func (l *Loader) Load(repo Reader, commit plumbing.Hash, scope Scope) (*Loaded, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	listing, err := repo.ListUnknown(commit, scope.Covers, l.known)
	if err != nil {
		return nil, err
	}
	l.round++
	round := repo.NewRound(commit)
	for _, d := range listing.Dirs {
		if d.Known {
			k := l.dirs[d.Path]
			k.seen = l.round
			round.Charge(k.size)
		}
	}
	src := &sizedSource{Source: round, size: map[string]int64{}}
	loaded := Load(listing, src, scope)
	for _, pe := range loaded.Peerings {
		l.share(pe)
	}
	rejected := rejectedByDir(loaded.Rejected)
	var changed []string
	for _, d := range listing.Dirs {
		switch {
		case d.Known:
			loaded.Rejected = append(loaded.Rejected, l.dirs[d.Path].rejected...)
		case isPeeringDir(d.Path):
			l.keep(d.Path, newKept(d.Hash, loaded.Peerings[d.Path], rejected[d.Path], src.size[d.Path]))
			changed = append(changed, d.Path)
		}
	}
	for _, sk := range listing.Skipped {
		if !isPeeringDir(sk.Path) || rejected[sk.Path] == nil {
			continue // not in place of a peering directory in scope
		}
		k := newKept(sk.Hash, loaded.Peerings[sk.Path], rejected[sk.Path], 0)
		k.entry = true
		if !k.sameEntry(l.dirs[sk.Path]) {
			changed = append(changed, sk.Path)
		}
		l.keep(sk.Path, k)
	}
	for dir, k := range l.dirs {
		if k.seen != l.round {
			delete(l.dirs, dir)
			changed = append(changed, dir)
		}
	}
	slices.Sort(changed)
	loaded.Changed = changed
	loaded.carried = &carried{loader: l, repo: repo, commit: commit, scope: scope}
	slices.SortStableFunc(loaded.Rejected, func(a, b Rejection) int { return strings.Compare(a.Path, b.Path) })
	return loaded, nil
}

// Wrote tells the Loader that a commit the reader itself pushed changed
// paths (files relative to the root): their peering directories are read
// again by the next Load and reported changed (Loaded.Changed) whatever their
// tree. The tree it keeps is the one it read before the write; if a push
// then reverted the write before the next Load, the directory would be back
// at that tree and carried, and the reader would not act on it again (a
// provider would leave a replaced identity.yaml unrepaired).
func (l *Loader) Wrote(paths ...string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, p := range paths {
		if k := l.dirs[peeringDirOf(p)]; k != nil {
			k.final = false
		}
	}
}

// known reports whether the peering directory dir is carried with tree h.
func (l *Loader) known(dir string, h plumbing.Hash) bool {
	k := l.dirs[dir]
	return k != nil && k.final && !k.entry && k.tree == h
}

// keep records k for the peering directory dir, listed in this round.
func (l *Loader) keep(dir string, k *keptDir) {
	if l.dirs == nil {
		l.dirs = map[string]*keptDir{}
	}
	k.seen = l.round
	l.dirs[dir] = k
}

// share makes pe's Identity use the Loader's copy of its CA and the
// canonical copy of its API server's URL.
func (l *Loader) share(pe *Documents) {
	if pe == nil || pe.Identity == nil {
		return
	}
	ap := &pe.Identity.Spec.AuthParams
	ap.APIServer = unique.Make(ap.APIServer).Value()
	if len(ap.CA) == 0 {
		return
	}
	if ca, ok := l.cas[string(ap.CA)]; ok {
		ap.CA = ca
		return
	}
	if l.cas == nil || len(l.cas) >= maxSharedCAs {
		l.cas = map[string][]byte{}
	}
	l.cas[string(ap.CA)] = ap.CA
}

// newKept returns what the Loader keeps of a peering directory (or of the
// entry in its place) with object id h, of which Load made pe (nil: no
// documents) and rejected, reading size bytes.
func newKept(h plumbing.Hash, pe *Documents, rejected []Rejection, size int64) *keptDir {
	return &keptDir{
		tree: h, rejected: rejected, size: size,
		documents: pe != nil, request: pe != nil && pe.Request != nil,
		final: !slices.ContainsFunc(rejected, func(rj Rejection) bool { return errors.Is(rj.Err, gitsync.ErrRoundLimitExceeded) }),
	}
}

// sameEntry reports whether k, an entry in place of a peering directory, is
// the one prev kept: the same object, rejected alike, neither in part
// because of a cap of the round.
func (k *keptDir) sameEntry(prev *keptDir) bool {
	return prev != nil && prev.entry && prev.final && k.final && prev.tree == k.tree &&
		slices.EqualFunc(prev.rejected, k.rejected, func(a, b Rejection) bool { return a.Path == b.Path && a.Err.Error() == b.Err.Error() })
}

// carried gives the Loaded of a Loader's round the peering directories
// carried over from the previous round: those the Loader keeps that are not
// in Loaded.Peerings.
type carried struct {
	loader *Loader
	repo   Reader
	commit plumbing.Hash
	scope  Scope
}

// appendDirs appends to dirs the carried directories holding documents that
// are not in decoded.
func (c *carried) appendDirs(dirs []Dir, decoded map[string]*Documents) []Dir {
	c.loader.mu.Lock()
	defer c.loader.mu.Unlock()
	for dir, k := range c.loader.dirs {
		if k.documents && decoded[dir] == nil {
			provider, consumer, _ := strings.Cut(dir, "/")
			dirs = append(dirs, Dir{Provider: provider, Consumer: consumer, Request: k.request})
		}
	}
	return dirs
}

// has reports whether dir, not in Loaded.Peerings, is carried with documents.
func (c *carried) has(dir string) bool {
	c.loader.mu.Lock()
	defer c.loader.mu.Unlock()
	k := c.loader.dirs[dir]
	return k != nil && k.documents
}

// decode reads and decodes the carried directory dir with Load, as it was
// read when it changed: nil when dir is not carried or holds no documents,
// an error when it can no longer be read.
func (c *carried) decode(dir string) (*Documents, error) {
	c.loader.mu.Lock()
	defer c.loader.mu.Unlock()
	k := c.loader.dirs[dir]
	if k == nil || !k.documents {
		return nil, nil
	}
	listing, err := c.repo.ListDir(c.commit, dir, k.tree)
	if err != nil {
		return nil, fmt.Errorf("%s: reading the directory again: %w", dir, err)
	}
	// A round of its own: the round's budget was charged with this directory's files already.
	pe := Load(listing, c.repo.NewRound(c.commit), c.scope).Peerings[dir]
	if pe == nil {
		return nil, fmt.Errorf("%s: %w: read again, it holds no documents", dir, ErrInvalid)
	}
	c.loader.share(pe)
	return pe, nil
}

// Tree returns the Git tree of the peering directory <provider>/<consumer>
// (or the object id of the entry in its place) as the Loader listed it in
// this round, read or carried: a round compares it with the tree a peering's
// last visit read instead of decoding the directory again. Zero when the
// directory is not there, or the Loaded is not a Loader's.
func (l *Loaded) Tree(provider, consumer string) plumbing.Hash {
	if l.carried == nil {
		return plumbing.ZeroHash
	}
	c := l.carried
	c.loader.mu.Lock()
	defer c.loader.mu.Unlock()
	if k := c.loader.dirs[path.Join(provider, consumer)]; k != nil {
		return k.tree
	}
	return plumbing.ZeroHash
}

// rejectedByDir groups rejections by the peering directory they are in.
func rejectedByDir(rejected []Rejection) map[string][]Rejection {
	m := map[string][]Rejection{}
	for _, rj := range rejected {
		if dir := peeringDirOf(rj.Path); isPeeringDir(dir) {
			m[dir] = append(m[dir], rj)
		}
	}
	return m
}

// peeringDirOf is the <providerID>/<consumerID> prefix of path p.
func peeringDirOf(p string) string {
	provider, rest, _ := strings.Cut(p, "/")
	consumer, _, _ := strings.Cut(rest, "/")
	return path.Join(provider, consumer)
}

// isPeeringDir reports whether p (relative to the root) is at the depth of
// a peering directory, <providerID>/<consumerID>.
func isPeeringDir(p string) bool {
	return strings.Count(p, "/") == 1
}

// sizedSource counts the bytes read under each peering directory.
type sizedSource struct {
	Source
	size map[string]int64
}

func (s *sizedSource) ReadFile(f gitsync.File) ([]byte, error) {
	data, err := s.Source.ReadFile(f)
	if err == nil {
		s.size[peeringDirOf(f.Path)] += int64(len(data))
	}
	return data, err
}
