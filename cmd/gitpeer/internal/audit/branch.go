package audit

import (
	"fmt"
	"path"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/utils/merkletrie"

	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// diff diffs c, a commit of the branch's first-parent chain, against its
// first parent: that is what the commit brought to the branch (for a merge,
// the whole pull request). tenant.yaml appearing is the approval, tenant.yaml
// changing is a change of its condition, tenant.yaml disappearing is a
// revocation, and request.yaml added by a person (not by an agent, whose
// commit already has a trailer) is a request.
func (r *reader) diff(c *object.Commit) error {
	parent, err := FirstParent(c)
	if err != nil {
		return err
	}
	tree, err := c.Tree()
	if err != nil {
		return err
	}
	var before *object.Tree
	if parent != nil {
		if before, err = parent.Tree(); err != nil {
			return err
		}
	}
	changes, err := object.DiffTree(before, tree)
	if err != nil {
		return err
	}
	byAgent := len(protocol.Records(c.Message)) > 0
	for _, ch := range changes {
		action, err := ch.Action()
		if err != nil {
			return err
		}
		name := ch.To.Name
		if action == merkletrie.Delete {
			name = ch.From.Name
		}
		p, ok := r.parse(name)
		if !ok {
			continue
		}
		if e, ok := r.changeEvent(c, p, action, byAgent); ok {
			e.Source = SourceBranch
			r.events = append(r.events, e)
		}
	}
	return nil
}

// changeEvent names the event of a change of p by commit c, if it is one.
func (r *reader) changeEvent(c *object.Commit, p protocol.Path, action merkletrie.Action, byAgent bool) (Event, bool) {
	how := "committed directly to the branch"
	if c.NumParents() > 1 {
		how = fmt.Sprintf("merged by %s: %s", c.Author.Name, subject(c))
	}
	switch {
	case p.Kind == vocabulary.TenantFile && action == merkletrie.Insert:
		return r.event(c, Approved, p.Provider, p.Consumer, "tenant.yaml "+how), true
	case p.Kind == vocabulary.TenantFile && action == merkletrie.Modify:
		return r.event(c, TenantChanged, p.Provider, p.Consumer, "tenant.yaml "+how), true
	case p.Kind == vocabulary.TenantFile && action == merkletrie.Delete:
		return r.event(c, Revoked, p.Provider, p.Consumer, "tenant.yaml deleted, "+how), true
	case p.Kind == vocabulary.RequestFile && action == merkletrie.Insert && !byAgent:
		return r.event(c, Requested, p.Provider, p.Consumer, "request.yaml "+how), true
	}
	return Event{}, false
}

// parse maps a repository path to a document under the peering root.
func (r *reader) parse(name string) (protocol.Path, bool) {
	rel := name
	if r.root != "." {
		if !strings.HasPrefix(name, r.root+"/") {
			return protocol.Path{}, false
		}
		rel = strings.TrimPrefix(name, r.root+"/")
	}
	p, ok, err := protocol.ParsePath(path.Clean(rel))
	return p, ok && err == nil
}
