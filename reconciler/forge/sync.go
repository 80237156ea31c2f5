package forge

import (
	"context"
	"fmt"
)

// Proposal is the pull request a consumer wants open for its review branch.
type Proposal struct {
	// Head is the review branch, Base the branch the provider trusts.
	Head, Base string
	// Title of the pull request.
	Title string
	// Facts are what the consumer proposes; the description is rendered from them.
	Facts Facts
	// Verify runs the proposer's offline checks on the proposal as the pull request holds it:
	// read returns a file of the commit checked. It returns the description's lines.
	Verify func(ctx context.Context, read func(path string) ([]byte, error)) []string
	// KeepClosed keeps the review branch of a pull request closed without merging, for a proposal
	// whose author would otherwise push it again (the consumer's request.yaml).
	KeepClosed bool
}

// Action is what Sync did.
type Action string

const (
	// Opened: a new pull request was opened.
	Opened Action = "opened"
	// Updated: the open pull request got a new title or description.
	Updated Action = "updated"
	// Unchanged: the open pull request already said everything.
	Unchanged Action = "unchanged"
	// WasMerged: the pull request of this proposal was merged; its branch was deleted.
	WasMerged Action = "merged"
	// WasClosed: the pull request of this proposal was closed without merging; its branch was
	// deleted and it is not reopened until the proposal changes.
	WasClosed Action = "closed"
)

// Result is the pull request after Sync and what Sync did to it.
type Result struct {
	PullRequest *PullRequest
	Action      Action
}

// Sync brings the forge in line with p: it opens the pull request from p.Head into p.Base, or
// updates the open one (its description says what changed since the proposal it described, and
// the result of p.Verify run on the files of the commit it names). It posts no commit status:
// the proposer's checks are its own claim, and the check a reviewer relies on is computed by the
// repository's CI on the exact commit it posts on. A merged or closed pull request of the same
// proposal (same Facts.ID) is reported and its branch deleted; it is never reopened. A later
// proposal (a new nonce, a new key) opens a new pull request once the consumer has pushed it.
func Sync(ctx context.Context, c Client, p Proposal) (Result, error) {
	pr, err := c.Find(ctx, p.Head, p.Base)
	if err != nil {
		return Result{}, fmt.Errorf("find pull request %s → %s: %w", p.Head, p.Base, err)
	}
	if pr != nil && pr.State != Open && proposalID(pr.Body) == p.Facts.ID() {
		if pr.State == Closed && p.KeepClosed {
			return Result{PullRequest: pr, Action: WasClosed}, nil
		}
		return finished(ctx, c, p.Head, pr)
	}
	var previous *Facts
	ref := p.Head // a new pull request will start at the branch's head
	if pr != nil && pr.State == Open {
		previous, ref = parseFacts(pr.Body), pr.Head // the commit, read once: a later push is checked next time
	}
	lines := p.Verify(ctx, func(path string) ([]byte, error) { return c.ReadFile(ctx, ref, path) })
	p.Facts.Checks, p.Facts.CheckedRef = lines, ref
	body, err := Describe(p.Facts, previous)
	if err != nil {
		return Result{}, err
	}
	res := Result{Action: Unchanged, PullRequest: pr}
	switch {
	case pr == nil || pr.State != Open:
		res.Action = Opened
		res.PullRequest, err = c.Create(ctx, p.Head, p.Base, p.Title, body)
	case pr.Title != p.Title || pr.Body != body:
		res.Action = Updated
		res.PullRequest, err = c.Edit(ctx, pr.Number, p.Title, body)
	}
	if err != nil {
		return Result{}, fmt.Errorf("%s pull request %s → %s: %w", res.Action, p.Head, p.Base, err)
	}
	return res, nil
}

// Finish deletes the review branch head once its most recent pull request into base is merged or
// closed; an open one, or none, is left alone (Unchanged).
func Finish(ctx context.Context, c Client, head, base string) (Result, error) {
	pr, err := c.Find(ctx, head, base)
	if err != nil {
		return Result{}, fmt.Errorf("find pull request %s → %s: %w", head, base, err)
	}
	if pr == nil || pr.State == Open {
		return Result{PullRequest: pr, Action: Unchanged}, nil
	}
	return finished(ctx, c, head, pr)
}

// finished deletes the review branch of a merged or closed pull request.
func finished(ctx context.Context, c Client, branch string, pr *PullRequest) (Result, error) {
	if err := c.DeleteBranch(ctx, branch); err != nil {
		return Result{}, fmt.Errorf("delete review branch %s: %w", branch, err)
	}
	action := WasClosed
	if pr.State == Merged {
		action = WasMerged
	}
	return Result{PullRequest: pr, Action: action}, nil
}
