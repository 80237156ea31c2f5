package protocol

import (
	"errors"
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
	NewRound(commit plumbing.Hash) *gitsync.Round
}

// Loader reads successive commits of one repository for one reader (the
// agent of one PeeringRepository), keeping what Load decoded from each
// peering directory by the directory's tree hash: a round reads and decodes
// only the peering directories whose tree changed since the previous round,
// and MaxDirectoriesPerRound counts only those. A directory's verdict (its
// documents and rejections) is the one Load gives its tree: a kept one came
// from Load on the same tree, and a verdict that depended on the round (a
// directory left unread over a cap of the round) is never kept. The
// documents of a Loaded are shared with the Loader: read them, never change
// them. The zero Loader is empty and ready; it is safe for concurrent use.
type Loader struct {
	mu   sync.Mutex
	dirs map[string]*keptDir // by <providerID>/<consumerID>
	// seen holds the peering directories of the previous round (Loaded.Changed).
	seen map[string]bool
	// cas holds one copy of each CA the kept Identities carry: every Identity
	// of a provider repeats its CA, 10,000 copies of it otherwise.
	cas map[string][]byte
}

// maxSharedCAs bounds Loader.cas; it is emptied when full.
const maxSharedCAs = 64

// keptDir is what Load made of one peering directory's tree.
type keptDir struct {
	tree     plumbing.Hash
	peering  *Documents // nil: the directory holds no document
	rejected []Rejection
	size     int64 // bytes of the files read, charged to every round that keeps it
}

// Load reads commit of repo in scope as Load does, decoding only the peering
// directories not kept from an earlier round (all of them for a new Loader:
// `gitpeer verify` and the agent's first round read everything).
func (l *Loader) Load(repo Reader, commit plumbing.Hash, scope Scope) (*Loaded, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	listing, err := repo.ListUnknown(commit, scope.Covers, l.known)
	if err != nil {
		return nil, err
	}
	round := repo.NewRound(commit)
	var known []gitsync.Dir
	for _, d := range listing.Dirs {
		if d.Known {
			known = append(known, d)
			round.Charge(l.dirs[d.Path].size)
		}
	}
	src := &sizedSource{Source: round, size: map[string]int64{}}
	loaded := Load(listing, src, scope)
	rejected := rejectedByDir(loaded.Rejected)
	kept := make(map[string]*keptDir, len(l.dirs))
	for _, d := range known {
		k := l.dirs[d.Path]
		kept[d.Path] = k
		if k.peering != nil {
			// The provider's terms are read every round: a kept directory gets this round's
			// (rounds of one Loader never overlap, and a round's result is read only during it).
			k.peering.Terms, k.peering.TermsErr = loaded.Terms(k.peering.Provider)
			loaded.Peerings[d.Path] = k.peering
		}
		loaded.Rejected = append(loaded.Rejected, k.rejected...)
	}
	for _, d := range listing.Dirs {
		if !d.Known && isPeeringDir(d.Path) {
			if k := keep(loaded, rejected[d.Path], d, src.size[d.Path]); k != nil {
				l.share(k.peering)
				kept[d.Path] = k
			}
		}
	}
	loaded.Changed = l.changed(loaded, listing.Dirs, known)
	l.dirs = kept
	slices.SortStableFunc(loaded.Rejected, func(a, b Rejection) int { return strings.Compare(a.Path, b.Path) })
	return loaded, nil
}

// changed lists, sorted, the peering directories of loaded that were not
// kept from the previous round (read in this one, or present but unreadable:
// skipped entries are judged anew every round), and those of the previous
// round that are gone; it then remembers loaded's directories.
func (l *Loader) changed(loaded *Loaded, listing []gitsync.Dir, known []gitsync.Dir) []string {
	now := make(map[string]bool, len(loaded.Peerings))
	for dir := range loaded.Peerings {
		now[dir] = true
	}
	for _, rj := range loaded.Rejected {
		if dir := peeringDirOf(rj.Path); isPeeringDir(dir) {
			now[dir] = true
		}
	}
	for _, d := range listing {
		if isPeeringDir(d.Path) {
			now[d.Path] = true
		}
	}
	wasKept := make(map[string]bool, len(known))
	for _, d := range known {
		wasKept[d.Path] = true
	}
	var out []string
	for dir := range now {
		if !wasKept[dir] {
			out = append(out, dir)
		}
	}
	for dir := range l.seen {
		if !now[dir] {
			out = append(out, dir)
		}
	}
	l.seen = now
	slices.Sort(out)
	return out
}

// known reports whether the peering directory dir is kept with tree h.
func (l *Loader) known(dir string, h plumbing.Hash) bool {
	k := l.dirs[dir]
	return k != nil && k.tree == h
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

// keep returns what loaded holds of the peering directory d, read in this
// round with its rejections, or nil when a cap of the round left some of it
// unread.
func keep(loaded *Loaded, rejected []Rejection, d gitsync.Dir, size int64) *keptDir {
	for _, rj := range rejected {
		if errors.Is(rj.Err, gitsync.ErrRoundLimitExceeded) {
			return nil
		}
	}
	return &keptDir{tree: d.Hash, peering: loaded.Peerings[d.Path], rejected: rejected, size: size}
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
