package protocol

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1/documents"
	"github.com/gitpeer/gitpeer/gitsync"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// Protocol caps on reading one commit of a peering repository, checked
// before anything they concern is read (with MaxFileSize per file and
// MaxBuildSize per kustomized directory). They count only what the reader's
// Scope covers: directories outside it are neither read nor counted. Over a
// cap, what was not read is reported invalid and skipped, never read as
// absent.
//
// A Loader reads only the peering directories that changed since its last
// round: MaxDirectoriesPerRound counts the directories read in this round,
// and MaxBytesPerRound the bytes of the files the round's result may hold
// (read in this round, or carried over from an earlier one and decoded when
// the round visits it), so that it also bounds what one round holds. A full
// read (the first round, `gitpeer verify`) of a provider at
// MaxConsumersPerProvider peers fits both.
const (
	// MaxTreeEntries caps the entries of a peering directory and of the
	// directories below it.
	MaxTreeEntries = 1024
	// MaxConsumersPerProvider caps the entries of a provider directory (one
	// per consumer), and of the root (one per provider): 16,384, so a
	// provider may serve 10,000 consumers and more. Its tree is then at most
	// 4.6 MiB (283 bytes an entry with 255-byte names), refused from its
	// header above that, and about 1.5 MiB with 63-byte cluster IDs.
	MaxConsumersPerProvider = 1 << 14
	// MaxDirectoriesPerRound caps the directories one reading lists: a
	// provider directory full of peering directories, each with one
	// directory under it.
	MaxDirectoriesPerRound = 2 * MaxConsumersPerProvider
	// MaxBytesPerRound caps the sum of the sizes of the files a reading
	// holds: a peering directory of an issued peering holds about 7 KiB, so
	// 10,000 take about 70 MiB.
	MaxBytesPerRound = 128 << 20
)

// Limits are the caps above as gitsync applies them.
var Limits = gitsync.Limits{
	MaxTreeEntries:    MaxTreeEntries,
	MaxTopTreeEntries: MaxConsumersPerProvider,
	TopLevels:         2, // the root and the provider directories
	MaxDirectories:    MaxDirectoriesPerRound,
	MaxRoundBytes:     MaxBytesPerRound,
}

// Source reads the files of one commit's listing; *gitsync.Round is the
// Source of the agent and of `gitpeer verify`.
type Source interface {
	// Size returns the size of file f without reading it.
	Size(f gitsync.File) (int64, error)
	// ReadFile returns the content of file f.
	ReadFile(f gitsync.File) ([]byte, error)
}

// Scope selects the peering directories Load reads. consumer is empty when
// Load asks about a whole provider directory it cannot list.
type Scope func(provider, consumer string) bool

// Covers reports whether directory dir (relative to the root) may hold files
// of a peering directory in scope: a provider directory the scope asks about,
// or anything under a peering directory in it. The reader lists only these
// (gitsync.Repo.ListWithin), so only they count against the caps.
func (s Scope) Covers(dir string) bool {
	provider, rest, _ := strings.Cut(dir, "/")
	consumer, _, _ := strings.Cut(rest, "/")
	return s(provider, consumer)
}

// Rejection is a file (or directory) of the listing that Load skipped.
type Rejection struct {
	Path string
	Err  error
}

// Loaded is what Load read from one commit.
type Loaded struct {
	// Peerings holds the documents of each peering directory in scope, by
	// <providerID>/<consumerID>; kinds present but skipped are marked invalid.
	// From a Loader it holds those decoded in its round: read in it, or
	// carried over and asked for (Documents); Dirs lists them all.
	Peerings map[string]*Documents
	// Rejected lists every skipped file in scope, with why.
	Rejected []Rejection
	// Changed lists, sorted, the peering directories (<providerID>/<consumerID>)
	// a Loader read in this round, found new or changed in place of a directory
	// (an entry it cannot read), or had in its previous round and found gone:
	// every directory in scope for a new Loader. Load leaves it nil.
	Changed []string
	// unread holds, by provider ID, why a provider directory could not be listed.
	unread map[string]error
	// terms holds, by provider ID in scope, its terms.yaml, and termsErr why
	// it is missing or invalid.
	terms    map[string]*documents.ProviderTerms
	termsErr map[string]error
	// carried, from a Loader, holds the peering directories carried over
	// from its previous round, decoded only when asked for (Documents).
	carried *carried
}

// Dir is a peering directory of a Loaded holding documents, decoded or not.
type Dir struct {
	Provider, Consumer string
	// Request: it holds a valid request.yaml (Documents.Request is set).
	Request bool
}

// Load decodes the documents of every peering directory of listing in scope,
// reading them from src: files one by one, or built with kustomize where the
// directory holds a kustomization.yaml. Both the agent and `gitpeer verify`
// read a commit with it, so they judge every file alike. Entries the listing
// skipped (symlinks, executables, submodules, refused directories) are
// present: their documents are marked invalid, never absent.
func Load(listing *gitsync.Listing, src Source, scope Scope) *Loaded {
	l := &Loaded{Peerings: map[string]*Documents{}, unread: map[string]error{}, terms: map[string]*documents.ProviderTerms{}, termsErr: map[string]error{}}
	for _, sk := range listing.Skipped {
		l.skipped(sk, scope)
	}
	kustomized := kustomizedDirs(listing)
	l.loadTerms(listing, src, scope)
	for _, f := range listing.Files {
		p, ok, err := ParsePath(f.Path)
		if !ok || !scope(p.Provider, p.Consumer) || kustomized[p.Dir()] != nil && err == nil {
			continue
		}
		if err == nil {
			var data []byte
			if data, err = src.ReadFile(f); err == nil {
				err = l.Documents(p.Provider, p.Consumer).Decode(p, data)
			} else {
				err = withPath(f.Path, err)
				l.Documents(p.Provider, p.Consumer).MarkInvalid(p.Kind, err)
			}
		}
		if err != nil {
			l.reject(f.Path, err)
		}
	}
	for _, dir := range sortedNames(kustomized) {
		l.kustomize(kustomized[dir], src, dir, scope)
	}
	return l
}

// Documents returns the documents of <provider>/<consumer>: decoded (a
// directory a Loader carried over is read and decoded now, with the
// provider's terms of this round; one that can no longer be read has every
// kind invalid), or else created empty on first use; in a provider directory
// that could not be listed, every kind is invalid. It adds them to Peerings,
// except those of a directory carried over: a round visiting thousands of
// carried directories holds the documents of those it is stepping, not of
// every one it visited (each call decodes them again).
func (l *Loaded) Documents(provider, consumer string) *Documents {
	k := path.Join(provider, consumer)
	if pe := l.Peerings[k]; pe != nil {
		return pe
	}
	pe := &Documents{Provider: provider, Consumer: consumer}
	pe.Terms, pe.TermsErr = l.Terms(provider)
	if err := l.unread[provider]; err != nil {
		markAll(pe, err)
	}
	if l.carried != nil {
		decoded, err := l.carried.decode(k)
		switch {
		case err != nil:
			markAll(pe, err)
		case decoded != nil:
			decoded.Terms, decoded.TermsErr = pe.Terms, pe.TermsErr
			return decoded
		}
	}
	l.Peerings[k] = pe
	return pe
}

// Dirs returns, in no order, every peering directory that holds documents:
// those in Peerings, and those a Loader carried over without decoding them.
func (l *Loaded) Dirs() []Dir {
	dirs := make([]Dir, 0, len(l.Peerings))
	for _, pe := range l.Peerings {
		dirs = append(dirs, Dir{Provider: pe.Provider, Consumer: pe.Consumer, Request: pe.Request != nil})
	}
	if l.carried != nil {
		dirs = l.carried.appendDirs(dirs, l.Peerings)
	}
	return dirs
}

// Has reports whether <provider>/<consumer> holds documents (Dirs), or was
// given some by Documents.
func (l *Loaded) Has(provider, consumer string) bool {
	k := path.Join(provider, consumer)
	return l.Peerings[k] != nil || l.carried != nil && l.carried.has(k)
}

// Terms returns provider's terms as read, or why they are missing
// (ErrNoTerms) or invalid.
func (l *Loaded) Terms(provider string) (*documents.ProviderTerms, error) {
	if t := l.terms[provider]; t != nil {
		return t, nil
	}
	if err := l.termsErr[provider]; err != nil {
		return nil, err
	}
	return nil, ErrNoTerms
}

// loadTerms reads the terms.yaml of every provider directory in scope,
// before any peering directory, so that each Documents carries its provider's
// terms. A terms.yaml that cannot be read or decoded is rejected and its
// error kept: it is invalid, never absent.
func (l *Loaded) loadTerms(listing *gitsync.Listing, src Source, scope Scope) {
	for _, sk := range listing.Skipped {
		if provider, ok := ParseTermsPath(sk.Path); ok && scope(provider, "") {
			l.termsErr[provider] = sk
		}
	}
	for _, f := range listing.Files {
		provider, ok := ParseTermsPath(f.Path)
		if !ok || !scope(provider, "") {
			continue
		}
		data, err := src.ReadFile(f)
		if err == nil {
			l.terms[provider], err = DecodeTerms(provider, data)
		} else {
			err = withPath(f.Path, err)
		}
		if err != nil {
			l.termsErr[provider] = err
			l.reject(f.Path, err)
		}
	}
}

func (l *Loaded) reject(p string, err error) {
	l.Rejected = append(l.Rejected, Rejection{Path: p, Err: err})
}

// skipped records an entry of the listing that was not read: a document of
// another file mode marks its kind invalid, a refused peering directory all
// its kinds, a refused provider directory every peering under it.
func (l *Loaded) skipped(sk *gitsync.FileError, scope Scope) {
	parts := strings.Split(sk.Path, "/")
	switch {
	case len(parts) == 1 && scope(parts[0], ""):
		l.unread[parts[0]] = sk
		l.reject(sk.Path, sk)
	case len(parts) == 2 && scope(parts[0], parts[1]):
		markAll(l.Documents(parts[0], parts[1]), sk)
		l.reject(sk.Path, sk)
	case len(parts) >= 3 && scope(parts[0], parts[1]):
		if p, ok, err := ParsePath(sk.Path); ok && err == nil {
			l.Documents(p.Provider, p.Consumer).MarkInvalid(p.Kind, sk)
		} else if !ok && !errors.Is(sk, gitsync.ErrLimitExceeded) && !errors.Is(sk, gitsync.ErrMalformedTree) {
			return // not a document: ignored, unless it hides a kustomization's files
		}
		l.reject(sk.Path, sk)
	}
}

// kustomizedDirs returns the peering directories <providerID>/<consumerID> of
// listing that hold a kustomization.yaml, each with the part of listing
// under it: their documents are built with kustomize instead of read file by
// file.
func kustomizedDirs(listing *gitsync.Listing) map[string]*gitsync.Listing {
	dirs := map[string]*gitsync.Listing{}
	for _, f := range listing.Files {
		if dir, ok := KustomizedDir(f.Path); ok {
			dirs[dir] = &gitsync.Listing{Commit: listing.Commit}
		}
	}
	if len(dirs) == 0 {
		return dirs
	}
	for _, f := range listing.Files {
		if sub := dirs[peeringDirOf(f.Path)]; sub != nil {
			sub.Files = append(sub.Files, f)
		}
	}
	for _, sk := range listing.Skipped {
		if dir := peeringDirOf(sk.Path); dirs[dir] != nil && strings.HasPrefix(sk.Path, dir+"/") {
			dirs[dir].Skipped = append(dirs[dir].Skipped, sk)
		}
	}
	return dirs
}

// kustomize reads every regular file of the peering directory dir (listed in
// sub, the part of the listing under it), after
// checking from their sizes that they fit in MaxBuildSize together, and
// builds its documents with Documents.Kustomize. A file that cannot be read, or
// a directory over the cap, refuses the build like a failed one
// (Documents.RefuseBuild): present documents are invalid, never absent, and a
// present tenant.yaml fails closed.
func (l *Loaded) kustomize(sub *gitsync.Listing, src Source, dir string, scope Scope) {
	p, err := ParseDir(dir)
	if err != nil || !scope(p.Provider, p.Consumer) {
		return // invalid IDs are reported with the directory's documents
	}
	pe := l.Documents(p.Provider, p.Consumer)
	kustomization := path.Join(dir, vocabulary.KustomizationFile)
	fail := func(err error) {
		err = fmt.Errorf("%w; %s is not built", err, kustomization)
		pe.RefuseBuild(func(k vocabulary.FileKind) bool {
			return slices.ContainsFunc(sub.Files, func(f gitsync.File) bool { return f.Path == path.Join(dir, string(k)) })
		}, err)
		l.reject(kustomization, err)
	}
	fs, err := dirFiles(sub, src)
	if err != nil {
		fail(err)
		return
	}
	files := map[string][]byte{}
	for _, f := range fs {
		data, err := src.ReadFile(f)
		if err != nil {
			fail(withPath(f.Path, err))
			return
		}
		files[strings.TrimPrefix(f.Path, dir+"/")] = data
	}
	if err := pe.Kustomize(files); err != nil {
		l.reject(kustomization, err)
	}
}

// dirFiles returns the files of sub, the listing of one directory, refusing
// the directory when their sizes, read from the object headers, exceed
// MaxBuildSize, or a directory under it could not be listed.
func dirFiles(sub *gitsync.Listing, src Source) ([]gitsync.File, error) {
	for _, sk := range sub.Skipped {
		if errors.Is(sk, gitsync.ErrLimitExceeded) || errors.Is(sk, gitsync.ErrMalformedTree) {
			return nil, sk
		}
	}
	var files []gitsync.File
	var total int64
	for _, f := range sub.Files {
		size, err := src.Size(f)
		if err != nil {
			return nil, withPath(f.Path, err)
		}
		if total += size; total > MaxBuildSize {
			return nil, fmt.Errorf("%w: the directory's files exceed %d bytes", ErrInvalid, MaxBuildSize)
		}
		files = append(files, f)
	}
	return files, nil
}

// withPath prefixes err with p unless it is a *gitsync.FileError, which
// names its path already.
func withPath(p string, err error) error {
	if fe := (*gitsync.FileError)(nil); errors.As(err, &fe) {
		return err
	}
	return fmt.Errorf("%s: %w", p, err)
}

func markAll(pe *Documents, err error) {
	for _, k := range vocabulary.FileKinds {
		pe.MarkInvalid(k, err)
	}
}
