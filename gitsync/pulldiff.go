package gitsync

import (
	"errors"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// EntryChange is a path whose tree entry differs between two commits.
type EntryChange struct {
	// Path is relative to the repository's top, whatever the configured root.
	Path string
	// Mode is the entry's mode in the newer commit; zero when it is gone there.
	Mode filemode.FileMode
}

// ErrNoMergeBase is returned by PullRequestChanges when the two commits share no history.
var ErrNoMergeBase = errors.New("gitsync: the commits share no history")

// PullRequestChanges returns what merging head into base brings, as a forge's pull-request diff
// shows it: the merge base of the two commits and every path of the whole repository (not only
// under the configured root) whose entry at head differs from the merge base's, in content,
// mode or kind (a file that became a symlink, an executable, a submodule). Only Git objects
// are read, never a working tree. With several merge bases (criss-cross merges) the changes
// against each are returned, so none hides behind another. The trees read are capped by the
// configured limits; a diff beyond them is an error, never a shorter list.
func (r *Repo) PullRequestChanges(base, head plumbing.Hash) ([]plumbing.Hash, []EntryChange, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	commits := make([]*object.Commit, 2)
	for i, h := range []plumbing.Hash{base, head} {
		c, err := r.repo.CommitObject(h)
		if err != nil {
			return nil, nil, fmt.Errorf("gitsync: commit %s: %w", h, err)
		}
		commits[i] = c
	}
	mergeBases, err := commits[0].MergeBase(commits[1])
	if err != nil {
		return nil, nil, fmt.Errorf("gitsync: merge base of %s and %s: %w", base, head, err)
	}
	if len(mergeBases) == 0 {
		return nil, nil, fmt.Errorf("%w: %s and %s", ErrNoMergeBase, base, head)
	}
	w := &entryDiff{r: r, seen: map[EntryChange]bool{}}
	var hashes []plumbing.Hash
	for _, mb := range mergeBases {
		hashes = append(hashes, mb.Hash)
		if err := w.diff("", mb.TreeHash, commits[1].TreeHash); err != nil {
			return nil, nil, err
		}
	}
	return hashes, w.changes, nil
}

// entryDiff compares two trees entry by entry, descending into directories on either side.
type entryDiff struct {
	r       *Repo
	dirs    int // trees loaded, against MaxDirectories
	seen    map[EntryChange]bool
	changes []EntryChange
}

func (w *entryDiff) diff(prefix string, a, b plumbing.Hash) error {
	from, err := w.load(prefix, a)
	if err != nil {
		return err
	}
	to, err := w.load(prefix, b)
	if err != nil {
		return err
	}
	ea, eb := entryMap(from), entryMap(to)
	for _, name := range unionNames(ea, eb) {
		x, y := ea[name], eb[name]
		if x != nil && y != nil && x.Hash == y.Hash && x.Mode == y.Mode {
			continue
		}
		if !validName(name) {
			// A name with a slash could pass for a path of another directory: refuse the diff.
			return &FileError{Path: joinPath(prefix, name), Reason: ErrUnsafePath, Detail: "invalid tree entry name"}
		}
		p := joinPath(prefix, name)
		var da, db plumbing.Hash
		if x != nil && x.Mode == filemode.Dir {
			da = x.Hash
		}
		if y != nil && y.Mode == filemode.Dir {
			db = y.Hash
		}
		if !da.IsZero() || !db.IsZero() {
			if err := w.diff(p, da, db); err != nil {
				return err
			}
		}
		// The entry itself changed unless it is a directory on both sides (its files are listed).
		if (x != nil && x.Mode != filemode.Dir) || (y != nil && y.Mode != filemode.Dir) {
			c := EntryChange{Path: p}
			if y != nil && y.Mode != filemode.Dir {
				c.Mode = y.Mode
			}
			if !w.seen[c] {
				w.seen[c] = true
				w.changes = append(w.changes, c)
			}
		}
	}
	return nil
}

// load reads tree h (nil for the zero hash) at path p under the configured caps.
func (w *entryDiff) load(p string, h plumbing.Hash) (*object.Tree, error) {
	if h.IsZero() {
		return nil, nil
	}
	limits := w.r.cfg.Limits
	if limits.MaxDirectories > 0 && w.dirs >= 2*limits.MaxDirectories {
		return nil, &FileError{Path: p, Reason: ErrRoundLimitExceeded, Hash: h,
			Detail: fmt.Sprintf("the pull request's diff reads more than %d directories", 2*limits.MaxDirectories)}
	}
	w.dirs++
	// Levels count from the configured root, as in listings; other trees take the top cap.
	level := 0
	if rel, ok := strings.CutPrefix(p, w.r.cfg.Path+"/"); ok || w.r.cfg.Path == "" && p != "" {
		if !ok {
			rel = p
		}
		level = levelOf(rel)
	}
	return loadTree(w.r.storage, h, p, limits.treeEntries(level))
}

// Root is the configured root (Config.Path, cleaned), relative to the repository's top: for
// OpenLocal on a directory inside a worktree, that directory joined with Config.Path.
func (r *Repo) Root() string { return r.cfg.Path }
