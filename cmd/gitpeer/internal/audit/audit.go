// Package audit reads the history of a peering repository into a timeline of
// handshake events, as `gitpeer audit` prints it. Agent commits are read from
// their Gitpeer-* trailers (reconciler/protocol); approvals, revocations and requests made by people
// are read from what each commit of the branch's first-parent chain (merge
// commits included) changed in the peering directories.
package audit

import (
	"cmp"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/gitpeer/gitpeer/reconciler/protocol"
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
	protocol.ActionRequest:       Requested,
	protocol.ActionIssueNonce:    NonceIssued,
	protocol.ActionProposeTenant: TenantProposed,
	protocol.ActionIssueIdentity: IdentityIssued,
	protocol.ActionRenewIdentity: IdentityRenewed,
	protocol.ActionRevoke:        Revoked,
	protocol.ActionPublishTerms:  TermsPublished,
}

// Person is a commit author or committer.
type Person struct {
	Name  string `json:"name"`
	Email string `json:"email"`
}

// Event is one step of a peering's history.
type Event struct {
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
	Serial    string `json:"serial,omitempty"`
	Expires   string `json:"expires,omitempty"`
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
	// Provider, Consumer and Since filter the events; zero values keep all.
	Provider, Consumer string
	Since              time.Time
}

// Read opens the Git repository at (or above) dir and returns the events of
// the branch's history, oldest first.
func Read(dir string, opts Options) ([]Event, error) {
	repo, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{DetectDotGit: true})
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", dir, err)
	}
	head, err := resolve(repo, opts.Branch)
	if err != nil {
		return nil, err
	}
	r := &reader{opts: opts, root: path.Clean(strings.Trim(opts.Path, "/"))}
	if err := r.walkAll(repo, head); err != nil {
		return nil, err
	}
	if err := r.walkFirstParents(repo, head); err != nil {
		return nil, err
	}
	slices.SortStableFunc(r.events, func(a, b indexed) int {
		if c := a.Time.Compare(b.Time); c != 0 {
			return c
		}
		return b.order - a.order // the walk visits children first: within a second, ancestors come first
	})
	out := make([]Event, 0, len(r.events))
	for _, e := range r.events {
		if r.keep(e.Event) {
			out = append(out, e.Event)
		}
	}
	return out, nil
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

// indexed is an event with the topological position of its commit, which
// orders events of the same second.
type indexed struct {
	Event
	order int
}

type reader struct {
	opts   Options
	root   string
	events []indexed
	// order is each commit's position in a walk from the head that visits a
	// commit before its parents (and a merge's merged branch before its base).
	order map[plumbing.Hash]int
}

// walkAll records an event for every step an agent commit reachable from head
// records in its trailers (protocol.Records), following merges into review
// branches (where propose-tenant commits live).
func (r *reader) walkAll(repo *git.Repository, head plumbing.Hash) error {
	iter, err := repo.Log(&git.LogOptions{From: head, Order: git.LogOrderDFSPost})
	if err != nil {
		return err
	}
	r.order = map[plumbing.Hash]int{}
	err = iter.ForEach(func(c *object.Commit) error {
		r.order[c.Hash] = len(r.order)
		for _, rec := range protocol.Records(c.Message) {
			name, ok := agentEvents[rec.Action]
			if !ok {
				name = rec.Action
			}
			e := r.event(c, name, rec.Provider, rec.Consumer, cmp.Or(rec.Summary, subject(c)))
			e.Serial, e.Expires, e.Override = rec.Serial, rec.Expires, rec.Override
			r.add(c, e)
		}
		return nil
	})
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		return nil // a shallow clone: history stops here
	}
	return err
}

func (r *reader) event(c *object.Commit, name, provider, consumer, details string) Event {
	return Event{
		Time: c.Committer.When.UTC(), Event: name, Provider: provider, Consumer: consumer,
		By:        Person{Name: c.Author.Name, Email: c.Author.Email},
		Committer: Person{Name: c.Committer.Name, Email: c.Committer.Email},
		Commit:    c.Hash.String(), Merge: c.NumParents() > 1, Details: details,
	}
}

func (r *reader) add(c *object.Commit, e Event) {
	r.events = append(r.events, indexed{Event: e, order: r.order[c.Hash]})
}

func (r *reader) keep(e Event) bool {
	return (r.opts.Provider == "" || e.Provider == r.opts.Provider) &&
		(r.opts.Consumer == "" || e.Consumer == r.opts.Consumer) &&
		(r.opts.Since.IsZero() || !e.Time.Before(r.opts.Since))
}

func subject(c *object.Commit) string {
	s, _, _ := strings.Cut(strings.TrimSpace(c.Message), "\n")
	return s
}
