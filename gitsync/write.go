package gitsync

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// WriteResult reports what a write did.
type WriteResult struct {
	// Commit is the pushed commit, or the head that already held the changes.
	Commit plumbing.Hash
	// Pushed is false when the changes were already present: no commit was made.
	Pushed bool
	// Attempts is the number of pushes tried.
	Attempts int
}

// heads is the remote state a write attempt builds on.
type heads struct {
	target, review plumbing.Hash
}

// CommitMessage is the message of a commit Write makes: String renders it
// as git stores it, or says why it cannot. protocol.Message is the agent's.
type CommitMessage interface {
	String() (string, error)
}

// Write applies changes on top of the branch as one commit and pushes it with
// compare-and-swap semantics: the push succeeds only if the branch is still
// where the commit was built. When another writer moved the branch, the
// changes are re-applied on the new head and the push retried with bounded,
// jittered backoff. Changes already present make no commit.
func (r *Repo) Write(ctx context.Context, msg CommitMessage, changes []FileChange) (WriteResult, error) {
	return r.write(ctx, msg, changes, "")
}

// WriteReview pushes changes to reviewBranch, an agent-owned branch for
// review: it is created from the authoritative branch, moved forward to it
// when it has nothing the branch lacks, and otherwise extended. The push is
// compare-and-swap, as in Write. Changes already present on the authoritative
// branch (or on the review branch) make no commit.
func (r *Repo) WriteReview(ctx context.Context, reviewBranch string, msg CommitMessage, changes []FileChange) (WriteResult, error) {
	if reviewBranch == "" || reviewBranch == r.cfg.Branch {
		return WriteResult{}, fmt.Errorf("gitsync: review branch %q must differ from %q", reviewBranch, r.cfg.Branch)
	}
	if err := plumbing.NewBranchReferenceName(reviewBranch).Validate(); err != nil {
		return WriteResult{}, fmt.Errorf("gitsync: review branch %q: %w", reviewBranch, err)
	}
	return r.write(ctx, msg, changes, reviewBranch)
}

func (r *Repo) write(ctx context.Context, msg CommitMessage, changes []FileChange, review string) (WriteResult, error) {
	text, err := msg.String()
	if err != nil {
		return WriteResult{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	objects := newPendingObjects(r.storage)
	ed := &treeEditor{s: objects}
	edits, err := ed.plan(r.cfg.Path, changes)
	if err != nil {
		return WriteResult{}, err
	}
	branch := r.cfg.Branch
	if review != "" {
		branch = review
	}
	var prev heads
	var lastErr error
	var staged plumbing.Hash // the commit on the scratch ref, if any
	var stagingRef plumbing.ReferenceName
	defer func() {
		if !staged.IsZero() {
			r.unstage(ctx, stagingRef, branch)
		}
	}()
	// The first attempt builds on the heads the clone has (the round's Poll
	// has just refreshed the branch) without asking the remote: the push's
	// own ref advertisement checks them (compare-and-swap), which saves an
	// ls-remote per branch on every write. Only a push goes on them: when
	// they are stale, or already hold the changes, the remote's heads decide.
	h := r.localHeads(review)
	fromClone := !h.target.IsZero()
	remote := func() (err error) {
		h, err = r.fetchHeads(ctx, review)
		fromClone = false
		return err
	}
	for attempt := 1; attempt <= r.cfg.Retry.Attempts; attempt++ {
		if attempt > 1 {
			// A stale clone is no contention: retried at once.
			if !fromClone || !errors.Is(lastErr, errStaleHead) {
				if err := sleep(ctx, r.cfg.Retry.delay(attempt-1)); err != nil {
					return WriteResult{}, err
				}
			}
			if err := remote(); err != nil {
				return WriteResult{}, err
			}
			if h == prev {
				// The branch did not move, so the push failed for another reason.
				return WriteResult{}, classify("push "+branch, lastErr)
			}
		} else if !fromClone {
			if err := remote(); err != nil {
				return WriteResult{}, err
			}
		}
		commit, old, err := r.prepare(ed, edits, h, review, text)
		if fromClone && (err != nil || commit.IsZero()) {
			if err := remote(); err != nil {
				return WriteResult{}, err
			}
			commit, old, err = r.prepare(ed, edits, h, review, text)
		}
		if err != nil || commit.IsZero() {
			return WriteResult{Commit: old, Attempts: attempt - 1}, err
		}
		if staged.IsZero() && len(changes) >= stageMinChanges {
			stagingRef = newStagingRef(branch, time.Now())
			if staged, err = r.stage(ctx, objects, stagingRef, commit); err != nil {
				return WriteResult{Attempts: attempt - 1}, err
			}
		}
		if lastErr = r.push(ctx, objects, branch, old, commit, staged); lastErr == nil {
			res := WriteResult{Commit: commit, Pushed: true, Attempts: attempt}
			if err := objects.keep(r.storage); err != nil {
				// Pushed: the next poll fetches the commit into the clone.
				return res, fmt.Errorf("gitsync: store the pushed commit %s in the clone: %w", commit, err)
			}
			if err := r.setLocalHead(branch, commit); err != nil {
				return res, err
			}
			r.consolidate()
			return res, nil
		}
		prev = h
	}
	return WriteResult{}, &PushError{Branch: branch, Attempts: r.cfg.Retry.Attempts, Last: lastErr}
}

// localHeads are the heads of the authoritative branch and, for a review
// write, of the review branch as the clone last saw them; zero when the
// clone has not fetched the authoritative branch yet.
func (r *Repo) localHeads(review string) heads {
	h := heads{target: r.localHead(r.cfg.Branch)}
	if h.target.IsZero() || !r.hasCommit(h.target) {
		return heads{}
	}
	if review != "" {
		if h.review = r.localHead(review); !h.review.IsZero() && !r.hasCommit(h.review) {
			return heads{}
		}
	}
	return h
}

// fetchHeads refreshes the authoritative branch and, for a review write, the review branch.
func (r *Repo) fetchHeads(ctx context.Context, review string) (heads, error) {
	var h heads
	var err error
	if h.target, err = r.refresh(ctx, r.cfg.Branch); err != nil || review == "" {
		return h, err
	}
	h.review, err = r.refresh(ctx, review)
	return h, err
}

// prepare builds the commit for one attempt. It returns the commit (zero when
// the changes are already present) and the value the pushed branch must still
// have: the current head when nothing needs pushing.
func (r *Repo) prepare(ed *treeEditor, edits *editNode, h heads, review, text string) (commit, old plumbing.Hash, err error) {
	tree, changed, err := r.applyOn(ed, h.target, edits)
	if err != nil || !changed {
		return plumbing.ZeroHash, h.target, err
	}
	base := h.target
	if review != "" {
		if base, err = r.reviewBase(h); err != nil {
			return plumbing.ZeroHash, h.review, err
		}
		if base != h.target {
			if tree, changed, err = r.applyOn(ed, base, edits); err != nil || !changed {
				return plumbing.ZeroHash, h.review, err
			}
		}
		old = h.review
	} else {
		old = h.target
	}
	commit, err = r.newCommit(ed.s, tree, base, text)
	return commit, old, err
}

// reviewBase is the commit a review write builds on: the authoritative head
// unless the review branch holds commits the authoritative branch lacks.
func (r *Repo) reviewBase(h heads) (plumbing.Hash, error) {
	if h.review.IsZero() || h.target.IsZero() || h.review == h.target {
		return h.target, nil
	}
	rc, err := r.repo.CommitObject(h.review)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	tc, err := r.repo.CommitObject(h.target)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	merged, err := rc.IsAncestor(tc)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if merged {
		return h.target, nil
	}
	return h.review, nil
}

// applyOn applies edits to base's tree (no tree when base is zero) and returns
// the resulting tree and whether it differs.
func (r *Repo) applyOn(ed *treeEditor, base plumbing.Hash, edits *editNode) (plumbing.Hash, bool, error) {
	var t *object.Tree
	if !base.IsZero() {
		c, err := r.repo.CommitObject(base)
		if err != nil {
			return plumbing.ZeroHash, false, err
		}
		if t, err = c.Tree(); err != nil {
			return plumbing.ZeroHash, false, err
		}
	}
	h, changed, err := ed.apply(t, edits)
	if err != nil || !changed || !h.IsZero() {
		return h, changed, err
	}
	// Every file was deleted: the commit still needs a (empty) root tree.
	h, err = ed.writeTree(nil)
	return h, true, err
}

// push updates branch from old (zero: must not exist) to commit, sending
// what neither commit's parent nor staged (zero if none) holds. A remote that
// no longer has old refuses it.
func (r *Repo) push(ctx context.Context, s storer.EncodedObjectStorer, branch string, old, commit, staged plumbing.Hash) error {
	objects, err := newObjects(s, commit, staged)
	if err != nil {
		return err
	}
	return r.sendPack(ctx, s, refUpdate{name: plumbing.NewBranchReferenceName(branch), to: commit, cas: true, from: old}, objects)
}
