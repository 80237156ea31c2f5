package gitsync

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// stageMinChanges is the number of file changes from which a write stages
// its commit before pushing the branch. Below it, a lost push re-sends little
// and staging would only add two pushes (the scratch ref and its deletion).
const stageMinChanges = 256

// stagingRefPrefix holds the agent's scratch refs, outside refs/heads and
// refs/tags so that they are neither branches nor tags.
const stagingRefPrefix = "refs/gitpeer/staging/"

// staleStagingAge is the age from which a scratch ref is taken for one its
// writer left behind (it stopped before deleting it) and deleted by any
// writer. A write holds its scratch ref for its push attempts, seconds to
// minutes (Retry); the margin also covers clocks that disagree between the
// writers' machines.
const staleStagingAge = time.Hour

// newStagingRef is the scratch ref of one large write to branch, started at
// now: refs/gitpeer/staging/<unix seconds>-<16 random hex digits>/<branch>.
// The random part keeps writers apart (two agents, or a provider's and a
// consumer's clone, writing to one branch at once); the time lets any writer
// tell a scratch ref left behind (stagedAt).
func newStagingRef(branch string, now time.Time) plumbing.ReferenceName {
	return plumbing.ReferenceName(fmt.Sprintf("%s%d-%016x/%s", stagingRefPrefix, now.Unix(), rand.Uint64(), branch))
}

// stagedAt is the time in the name of a scratch ref newStagingRef made; false
// for any other ref, which no writer deletes but its own.
func stagedAt(name plumbing.ReferenceName) (time.Time, bool) {
	rest, ok := strings.CutPrefix(name.String(), stagingRefPrefix)
	if !ok {
		return time.Time{}, false
	}
	id, branch, ok := strings.Cut(rest, "/")
	if !ok || branch == "" {
		return time.Time{}, false
	}
	secs, random, ok := strings.Cut(id, "-")
	if !ok || len(random) != 16 || strings.Trim(random, "0123456789abcdef") != "" {
		return time.Time{}, false
	}
	unix, err := strconv.ParseInt(secs, 10, 64)
	if err != nil || unix < 0 {
		return time.Time{}, false
	}
	return time.Unix(unix, 0), true
}

// legacyStagingRef is the scratch ref earlier versions of the agent staged a
// large write to branch in: refs/gitpeer/staging/<branch>, shared by every
// writer of the branch and left behind when a writer stopped before
// deleting it. Its name tells no age; a writer of the branch deletes it
// (unstagedRefs). An earlier version still writing at that moment loses
// nothing: the server keeps the staged objects until it prunes unreachable
// ones (two weeks by default), and that writer's own deletion is best effort.
func legacyStagingRef(branch string) plumbing.ReferenceName {
	return plumbing.ReferenceName(stagingRefPrefix + branch)
}

// unstagedRefs are the refs a write to branch that staged to own deletes
// once done, among the advertised ones: own, every scratch ref staged more
// than staleStagingAge before now, and branch's legacyStagingRef.
func unstagedRefs(advertised []plumbing.ReferenceName, own plumbing.ReferenceName, branch string, now time.Time) []plumbing.ReferenceName {
	var out []plumbing.ReferenceName
	for _, name := range advertised {
		if at, ok := stagedAt(name); name == own || name == legacyStagingRef(branch) || ok && now.Sub(at) > staleStagingAge {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// stage pushes commit to the scratch ref ref (newStagingRef) and returns
// commit, so that the objects of a large write cross the network once: a
// push of the branch that loses to another writer is retried by sending only
// the trees and commit rebuilt on the new head, not the write's files again
// (push leaves out what the staged commit holds).
//
// A server that refuses the ref (some forges accept only branches and tags)
// makes stage return zero and the Repo stop staging: its writes push the
// branch alone. Transport failures are returned.
func (r *Repo) stage(ctx context.Context, s storer.EncodedObjectStorer, ref plumbing.ReferenceName, commit plumbing.Hash) (plumbing.Hash, error) {
	if r.noStaging {
		return plumbing.ZeroHash, nil
	}
	objects, err := newObjects(s, commit)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	err = r.sendPack(ctx, s, refUpdate{name: ref, to: commit}, objects)
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

// unstage deletes the scratch ref ref of a write to branch and, in the same
// request, the scratch refs other writers left behind (unstagedRefs), so
// that they do not pile up on the server. It is best effort: a ref left
// behind holds objects the branch mostly holds too, and a later large write
// deletes it.
func (r *Repo) unstage(ctx context.Context, ref plumbing.ReferenceName, branch string) {
	sess, adv, refs, err := r.openReceivePack(ctx)
	if err != nil {
		return
	}
	defer sess.Close()
	if !adv.Capabilities.Supports(capability.DeleteRefs) {
		return
	}
	req := packp.NewReferenceUpdateRequestFromCapabilities(adv.Capabilities)
	for _, name := range unstagedRefs(slices.Collect(maps.Keys(refs)), ref, branch, time.Now()) {
		req.Commands = append(req.Commands, &packp.Command{Name: name, Old: refs[name].Hash()})
	}
	if len(req.Commands) > 0 {
		_, _ = sess.ReceivePack(ctx, req)
	}
}
