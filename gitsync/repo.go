package gitsync

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/go-git/go-billy/v5/osfs"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

const remoteName = "origin"

// Repo is a persistent bare clone of one remote repository. Its methods are
// safe for concurrent use; they are serialised internally.
type Repo struct {
	cfg  Config
	auth transport.AuthMethod
	// httpClient sends pushes over HTTP(S) (streamingSession).
	httpClient *http.Client
	mu         sync.Mutex
	repo       *git.Repository
	storage    *filesystem.Storage
	trees      *treeCache
	last       commitTree // the commit rootTree read last
	// noStaging is set once the remote refused a scratch ref (see stage).
	noStaging bool
	// repackErr is the last failed repack's error (consolidate, RepackFailure).
	repackErr error
}

// commitTree is a commit and its tree.
type commitTree struct{ commit, tree plumbing.Hash }

// CloneDir returns a stable directory under dataDir for the clone of url.
func CloneDir(dataDir, url string) string {
	sum := sha256.Sum256([]byte(url))
	return filepath.Join(dataDir, hex.EncodeToString(sum[:12]))
}

// objectCacheSize bounds the clone's cache of decoded objects (delta bases
// and recently read objects). go-git's default, 96 MiB, would keep a copy of
// nearly every file a full read of 10,000 peering directories reads (about
// 70 MiB), which its reader (protocol.Loader) has already decoded.
// The bound counts the objects' content only: for a clone's small files
// the cache's heap is about twice it (BenchmarkRetainedAfterPoll: 19.4 MiB
// retained with 8 MiB, 8.7 MiB with 2 MiB, for the same CPU reading every
// file; under 2 MiB, delta bases drop out and listings decode more).
const objectCacheSize = 2 * cache.MiByte

// Open opens the clone in cfg.Dir, creating an empty one on first use. It
// does not contact the remote; Poll does.
func Open(cfg Config) (*Repo, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	auth, err := cfg.Auth.method(cfg.URL)
	if err != nil {
		return nil, err
	}
	// Pack files stay open between calls (released by Close): reopening a
	// pack for every object made a full listing five times slower.
	st := filesystem.NewStorageWithOptions(osfs.New(cfg.Dir), cache.NewObjectLRU(objectCacheSize),
		filesystem.Options{KeepDescriptors: true})
	repo, err := git.Open(st, nil)
	if errors.Is(err, git.ErrRepositoryNotExists) {
		repo, err = git.Init(st, nil)
	}
	if err != nil {
		return nil, fmt.Errorf("gitsync: open clone %s: %w", cfg.Dir, err)
	}
	if err := ensureRemote(repo, cfg.URL); err != nil {
		return nil, err
	}
	return &Repo{cfg: cfg, auth: auth, httpClient: newHTTPClient(cfg.Auth.caBundle()), repo: repo, storage: st,
		trees: newTreeCache(st, cfg.Limits)}, nil
}

// ensureRemote points the origin remote at url.
func ensureRemote(repo *git.Repository, url string) error {
	cfg, err := repo.Config()
	if err != nil {
		return err
	}
	if rc, ok := cfg.Remotes[remoteName]; ok && len(rc.URLs) == 1 && rc.URLs[0] == url {
		return nil
	}
	cfg.Remotes[remoteName] = &config.RemoteConfig{Name: remoteName, URLs: []string{url}}
	return repo.SetConfig(cfg)
}

// Close releases the clone's open pack files and idle HTTP connections. The
// Repo must not be used after.
func (r *Repo) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.httpClient != nil {
		r.httpClient.CloseIdleConnections()
	}
	return r.storage.Close()
}

// Branch returns the authoritative branch name.
func (r *Repo) Branch() string { return r.cfg.Branch }

// trackingRef is where the clone keeps the last fetched head of branch.
func trackingRef(branch string) plumbing.ReferenceName {
	return plumbing.NewRemoteReferenceName(remoteName, branch)
}

// localHead returns the last fetched head of branch, or the zero hash.
func (r *Repo) localHead(branch string) plumbing.Hash {
	ref, err := r.repo.Reference(trackingRef(branch), true)
	if err != nil {
		return plumbing.ZeroHash
	}
	return ref.Hash()
}

// setLocalHead records h as the fetched head of branch.
func (r *Repo) setLocalHead(branch string, h plumbing.Hash) error {
	return r.repo.Storer.SetReference(plumbing.NewHashReference(trackingRef(branch), h))
}

// hasCommit reports whether the commit h is in the clone.
func (r *Repo) hasCommit(h plumbing.Hash) bool {
	_, err := r.repo.CommitObject(h)
	return err == nil
}

// OpenLocal opens the existing Git repository at dir (a worktree, a bare
// repository, or a directory inside a worktree, which then becomes the root
// that cfg.Path is relative to) to read its commits with List, ReadFile and
// NewRound, as `gitpeer verify` does; cfg sets the root Path and the caps.
// It never contacts a remote.
func OpenLocal(dir string, cfg Config) (*Repo, error) {
	repo, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{EnableDotGitCommonDir: true})
	if errors.Is(err, git.ErrRepositoryNotExists) {
		if repo, err = git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{DetectDotGit: true, EnableDotGitCommonDir: true}); err == nil {
			cfg.Path, err = pathInWorktree(repo, dir, cfg.Path)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("gitsync: open %s: %w", dir, err)
	}
	cfg.URL, cfg.Dir = dir, dir
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	opened, ok := repo.Storer.(*filesystem.Storage)
	if !ok {
		return nil, fmt.Errorf("gitsync: open %s: unexpected storage %T", dir, repo.Storer)
	}
	// The same .git directory, with Open's smaller object cache.
	st := filesystem.NewStorage(opened.Filesystem(), cache.NewObjectLRU(objectCacheSize))
	if repo, err = git.Open(st, nil); err != nil {
		return nil, fmt.Errorf("gitsync: open %s: %w", dir, err)
	}
	return &Repo{cfg: cfg, repo: repo, storage: st, trees: newTreeCache(st, cfg.Limits)}, nil
}

// Uncommitted lists the files under root (slash-separated, relative to dir) that differ between
// the working tree or index of the repository holding dir and its HEAD, sorted: what a reader of
// commits (OpenLocal) does not see. It lists nothing for a bare repository.
func Uncommitted(dir, root string) ([]string, error) {
	repo, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{DetectDotGit: true, EnableDotGitCommonDir: true})
	if err != nil {
		return nil, fmt.Errorf("gitsync: open %s: %w", dir, err)
	}
	wt, err := repo.Worktree()
	if errors.Is(err, git.ErrIsBareRepository) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if root, err = pathInWorktree(repo, dir, root); err != nil {
		return nil, err
	}
	status, err := wt.Status()
	if err != nil {
		return nil, fmt.Errorf("gitsync: status of %s: %w", dir, err)
	}
	var changed []string
	for file, st := range status {
		if st.Worktree == git.Unmodified && st.Staging == git.Unmodified {
			continue
		}
		if root == "." || file == root || strings.HasPrefix(file, root+"/") {
			changed = append(changed, file)
		}
	}
	slices.Sort(changed)
	return changed, nil
}

// pathInWorktree returns root (slash-separated, relative to dir) relative to
// the top of repo's worktree, dir being a directory inside it.
func pathInWorktree(repo *git.Repository, dir, root string) (string, error) {
	wt, err := repo.Worktree()
	if err != nil {
		return "", err
	}
	top, err := filepath.EvalSymlinks(wt.Filesystem.Root())
	if err != nil {
		return "", err
	}
	abs, err := filepath.Abs(dir)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(top, abs)
	if err != nil {
		return "", err
	}
	return path.Join(filepath.ToSlash(rel), root), nil
}

// Resolve returns the commit a revision (HEAD, a branch, a tag, a hash) names.
func (r *Repo) Resolve(rev string) (plumbing.Hash, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	h, err := r.repo.ResolveRevision(plumbing.Revision(rev))
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("gitsync: revision %s: %w", rev, err)
	}
	return *h, nil
}
