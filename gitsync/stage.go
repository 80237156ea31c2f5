package gitsync

import (
	"context"

	"github.com/go-git/go-git/v5/plumbing"
)

// stageMinChanges is the number of file changes from which a write stages
// its commit before pushing the branch. Below it, a lost push re-sends little
// and staging would only add two pushes (the scratch ref and its deletion).
const stageMinChanges = 256

// stagingRefPrefix holds the agent's scratch refs, outside refs/heads and
// refs/tags so that they are neither branches nor tags.
const stagingRefPrefix = "refs/gitpeer/staging/"

// stagingRef is the scratch ref a large write to branch pushes its commit to.
func stagingRef(branch string) plumbing.ReferenceName {
	return plumbing.ReferenceName(stagingRefPrefix + branch)
}

// stage pushes commit to the scratch ref of branch, replacing whatever it
// held, and returns commit, so that the objects of a large write cross the
// network once: a push of the branch that loses to another writer is retried
// by sending only the trees and commit rebuilt on the new head, not the
// write's files again (push leaves out what the staged commit holds).
//
// A server that refuses the ref (some forges accept only branches and tags)
// makes stage return zero and the Repo stop staging: its writes push the
// branch alone. Transport failures are returned.
func (r *Repo) stage(ctx context.Context, branch string, commit plumbing.Hash) (plumbing.Hash, error) {
	if r.noStaging {
		return plumbing.ZeroHash, nil
	}
	ref := stagingRef(branch)
	objects, err := r.newObjects(commit)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	err = r.sendPack(ctx, refUpdate{name: ref, to: commit}, objects)
	switch {
	case err == nil:
		return commit, nil
	case ctx.Err() != nil:
		return plumbing.ZeroHash, ctx.Err()
	case sentinelOf(err) != nil:
		return plumbing.ZeroHash, classify("push "+ref.String(), err)
	}
	r.noStaging = true
	return plumbing.ZeroHash, nil
}

// unstage deletes the scratch ref of branch. It is best effort: a ref left
// behind holds objects the branch mostly holds too, and the next large write
// replaces it.
func (r *Repo) unstage(ctx context.Context, branch string) {
	_ = r.sendPack(ctx, refUpdate{name: stagingRef(branch)}, nil)
}
