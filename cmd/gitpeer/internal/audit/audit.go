// Package audit reads the history of a peering repository into a timeline of
// handshake events, as `gitpeer audit` prints it. Agent commits are read from
// their Gitpeer-* trailers (reconciler/protocol), believed only on commits
// signed with the agent's key (Options.AgentKeys) and otherwise shown as
// claims; approvals, revocations and requests made by people are read from
// what each commit of the branch's first-parent chain (merge commits
// included) changed in the peering directories. Events are in the order of
// the commit graph (GraphOrder), never of the dates commits carry: anyone
// who can push chooses those.
package audit

import (
	"cmp"
	"fmt"
	"path"
	"strings"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/gitpeer/gitpeer/gitsync"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// Event names.
const (
	Requested       = "requested"
	NonceIssued     = "nonce-issued"
	TenantProposed  = "tenant-proposed"
	Approved        = "approved"
	TenantChanged   = "tenant-changed"
	IdentityIssued  = "identity-issued"
	IdentityRenewed = "identity-renewed"
	Revoked         = "revoked"
	TermsPublished  = "terms-published"
)

// agentEvents maps the agent's actions (protocol.Actions) to events.
var agentEvents = map[string]string{
	vocabulary.ActionRequest:       Requested,
	vocabulary.ActionIssueNonce:    NonceIssued,
	vocabulary.ActionProposeTenant: TenantProposed,
	vocabulary.ActionIssueIdentity: IdentityIssued,
	vocabulary.ActionRenewIdentity: IdentityRenewed,
	vocabulary.ActionRevoke:        Revoked,
	vocabulary.ActionPublishTerms:  TermsPublished,
}

// The sources of an event: how much of it is proven.
const (
	// SourceAgent: the trailers of a commit with a valid signature of one of
	// the agent's keys (Options.AgentKeys): the agent made this step.
	SourceAgent = "agent"
	// SourceClaim: the trailers of a commit without such a signature. Anyone
	// who can push may write them, author name and date included: what the
	// commit claims, not a fact.
	SourceClaim = "claim"
	// SourceBranch: what a commit of the branch's first-parent chain changed
	// in the peering directories (the tree is a fact; its author and date
	// are what the commit says).
	SourceBranch = "branch"
)

// Person is a commit author or committer.
type Person struct {
	Name  string `json:"name"`
	Email string `json:"email"`
}

// Event is one step of a peering's history.
type Event struct {
	// Time is the commit's committer date, as the commit states it: only
	// the agent's signed commits (SourceAgent) vouch for it.
	Time     time.Time `json:"time"`
	Event    string    `json:"event"`
	Provider string    `json:"provider"`
	Consumer string    `json:"consumer"`
	// By is who made the step: the commit's author (for a merge, the person
	// who merged the pull request).
	By        Person `json:"by"`
	Committer Person `json:"committer"`
	Commit    string `json:"commit"`
	Merge     bool   `json:"merge,omitempty"`
	// Source says how the event was read: SourceAgent, SourceClaim or SourceBranch.
	Source  string `json:"source"`
	Serial  string `json:"serial,omitempty"`
	Expires string `json:"expires,omitempty"`
	// Override names the admin's overrides an identity was issued under (Gitpeer-Override).
	Override string `json:"override,omitempty"`
	Details  string `json:"details,omitempty"`
}

// Options of Read.
type Options struct {
	// Branch is the authoritative branch; default main. A local branch is
	// preferred, then origin's remote-tracking branch; "HEAD" reads HEAD.
	Branch string
	// Path is the peering root inside the repository (spec.path).
	Path string
	// Provider and Consumer filter the events; empty keeps all.
	Provider, Consumer string
	// Since, if set, keeps the events from the first one (in graph order)
	// dated at or after it: a backdated commit after it is still shown.
	Since time.Time
	// AgentKeys are the public keys of the agent's commit signing key
	// (spec.commit.signingKey): trailers are believed (SourceAgent) only on
	// commits with a valid signature of one of them. Nil believes none.
	AgentKeys *gitsync.TrustedKeys
}

// Read opens the Git repository at (or above) dir and returns the events of
// the branch's history in graph order (GraphOrder): parents before children.
func Read(dir string, opts Options) ([]Event, error) {
	repo, head, err := Open(dir, opts.Branch)
	if err != nil {
		return nil, err
	}
	commits, err := GraphOrder(repo, head)
	if err != nil {
		return nil, err
	}
	chain, err := firstParents(repo, head)
	if err != nil {
		return nil, err
	}
	r := &reader{opts: opts, root: path.Clean(strings.Trim(opts.Path, "/"))}
	for _, h := range commits {
		c, err := repo.CommitObject(h)
		if err != nil {
			return nil, err
		}
		r.trailers(c)
		if chain[h] {
			if err := r.diff(c); err != nil {
				return nil, fmt.Errorf("commit %s: %w", c.Hash, err)
			}
		}
	}
	out := []Event{}
	for _, e := range r.events {
		if r.keep(e) {
			out = append(out, e)
		}
	}
	if !opts.Since.IsZero() {
		first := len(out)
		for i, e := range out {
			if !e.Time.Before(opts.Since) {
				first = i
				break
			}
		}
		out = out[first:]
	}
	return out, nil
}

// Open opens the Git repository at (or above) dir and resolves branch
// (default main; see Options.Branch).
func Open(dir, branch string) (*git.Repository, plumbing.Hash, error) {
	repo, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{DetectDotGit: true})
	if err != nil {
		return nil, plumbing.ZeroHash, fmt.Errorf("open %s: %w", dir, err)
	}
	head, err := resolve(repo, branch)
	return repo, head, err
}

func resolve(repo *git.Repository, branch string) (plumbing.Hash, error) {
	if branch == "" {
		branch = "main"
	}
	names := []plumbing.ReferenceName{plumbing.NewBranchReferenceName(branch), plumbing.NewRemoteReferenceName("origin", branch)}
	if branch == "HEAD" {
		names = []plumbing.ReferenceName{plumbing.HEAD}
	}
	for _, n := range names {
		if ref, err := repo.Reference(n, true); err == nil {
			return ref.Hash(), nil
		}
	}
	return plumbing.ZeroHash, fmt.Errorf("branch %q not found (neither %s nor %s)", branch, names[0], names[len(names)-1])
}

type reader struct {
	opts   Options
	root   string
	events []Event
}

// trailers records an event for every step c records in its trailers
// (protocol.Records): SourceAgent if c is signed with the agent's key,
// SourceClaim otherwise.
func (r *reader) trailers(c *object.Commit) {
	records := protocol.Records(c.Message)
	if len(records) == 0 {
		return
	}
	source := SourceClaim
	if r.opts.AgentKeys != nil && r.opts.AgentKeys.Check(c) == "" {
		source = SourceAgent
	}
	for _, rec := range records {
		name, ok := agentEvents[rec.Action]
		if !ok {
			name = rec.Action
		}
		e := r.event(c, name, rec.Provider, rec.Consumer, cmp.Or(rec.Summary, subject(c)))
		e.Serial, e.Expires, e.Override, e.Source = rec.Serial, rec.Expires, rec.Override, source
		r.events = append(r.events, e)
	}
}

func (r *reader) event(c *object.Commit, name, provider, consumer, details string) Event {
	return Event{
		Time: c.Committer.When.UTC(), Event: name, Provider: provider, Consumer: consumer,
		By:        Person{Name: c.Author.Name, Email: c.Author.Email},
		Committer: Person{Name: c.Committer.Name, Email: c.Committer.Email},
		Commit:    c.Hash.String(), Merge: c.NumParents() > 1, Details: details,
	}
}

func (r *reader) keep(e Event) bool {
	return (r.opts.Provider == "" || e.Provider == r.opts.Provider) &&
		(r.opts.Consumer == "" || e.Consumer == r.opts.Consumer)
}

func subject(c *object.Commit) string {
	s, _, _ := strings.Cut(strings.TrimSpace(c.Message), "\n")
	return s
}
