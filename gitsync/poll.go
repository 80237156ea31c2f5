package gitsync

import (
	"context"
	"errors"
	"fmt"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
)

// Poll brings the clone up to date with the remote branch and returns its
// head. When the branch has not moved it costs one ref advertisement and no
// fetch; when it moved only the new objects are fetched. A branch missing on
// the remote yields ErrBranchNotFound.
func (r *Repo) Poll(ctx context.Context) (plumbing.Hash, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	head, err := r.refresh(ctx, r.cfg.Branch)
	if err == nil && head.IsZero() {
		err = fmt.Errorf("%w: %s", ErrBranchNotFound, r.cfg.Branch)
	}
	return head, err
}

// Head returns the last fetched head of the branch without contacting the remote.
func (r *Repo) Head() plumbing.Hash {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.localHead(r.cfg.Branch)
}

// refresh fetches branch if the remote moved and returns the remote head, or
// the zero hash when the branch does not exist on the remote. It is one
// exchange with the remote: the fetch's own ref advertisement tells whether
// the branch moved, and nothing is downloaded when it did not (go-git asks
// only for the objects the clone lacks).
func (r *Repo) refresh(ctx context.Context, branch string) (plumbing.Hash, error) {
	err := r.fetch(ctx, branch)
	if errors.Is(err, transport.ErrEmptyRemoteRepository) || errors.As(err, new(git.NoMatchingRefSpecError)) {
		return plumbing.ZeroHash, nil
	}
	if err != nil {
		return plumbing.ZeroHash, err
	}
	return r.localHead(branch), nil
}

// fetch fetches branch into its tracking ref. The first fetch is shallow when
// configured; later ones send what the clone has, so only new objects come.
func (r *Repo) fetch(ctx context.Context, branch string) error {
	remote, err := r.repo.Remote(remoteName)
	if err != nil {
		return err
	}
	opts := &git.FetchOptions{
		RemoteName: remoteName,
		RefSpecs: []config.RefSpec{config.RefSpec(
			"+" + plumbing.NewBranchReferenceName(branch).String() + ":" + trackingRef(branch).String())},
		Auth:     r.auth,
		CABundle: r.cfg.Auth.caBundle(),
		Tags:     git.NoTags,
	}
	if r.localHead(branch).IsZero() {
		// The first fetch brings the whole branch: its pack is indexed by
		// packIndexer (see packindex.go) rather than go-git's parser.
		remote = git.NewRemote(indexingStorage{r.storage}, remote.Config())
		if r.cfg.Shallow {
			opts.Depth = 1
		}
	}
	err = remote.FetchContext(ctx, opts)
	if errors.Is(err, git.NoErrAlreadyUpToDate) {
		return nil
	}
	if err != nil {
		return classify("fetch "+r.cfg.URL, err)
	}
	r.consolidate() // the fetch may have stored a pack
	return nil
}
