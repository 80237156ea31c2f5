package forge

import (
	"context"
	"net/http"

	sdk "code.gitea.io/sdk/gitea"
)

// gitea is a repository on Gitea or Forgejo, through Gitea's SDK.
type gitea struct {
	url, token  string
	owner, name string
}

func newGitea(repo Repository, token string) (Client, error) {
	return &gitea{url: repo.APIURL, token: token, owner: repo.Owner, name: repo.Name}, nil
}

// client returns an SDK client bound to ctx. The SDK asks the server's version when it is built.
func (g *gitea) client(ctx context.Context) (*sdk.Client, error) {
	return sdk.NewClient(g.url, sdk.SetToken(g.token), sdk.SetContext(ctx), sdk.SetHTTPClient(&http.Client{Timeout: timeout}))
}

// maxPages bounds the pull requests Find reads (50 a page, newest first).
const maxPages = 10

func (g *gitea) Find(ctx context.Context, head, base string) (*PullRequest, error) {
	c, err := g.client(ctx)
	if err != nil {
		return nil, err
	}
	for page := 1; page <= maxPages; page++ {
		prs, resp, err := c.ListRepoPullRequests(g.owner, g.name, sdk.ListPullRequestsOptions{
			State: sdk.StateAll, Sort: "newest", ListOptions: sdk.ListOptions{Page: page, PageSize: 50},
		})
		if err != nil {
			return nil, err
		}
		for _, pr := range prs {
			// Head.Name is the head branch's name; Head.Ref becomes refs/pull/<n>/head once it is deleted.
			if pr.Head != nil && pr.Base != nil && (pr.Head.Name == head || pr.Head.Ref == head) && pr.Base.Ref == base {
				return fromGitea(pr), nil
			}
		}
		if resp == nil || resp.NextPage == 0 {
			break
		}
	}
	return nil, nil
}

func (g *gitea) Create(ctx context.Context, head, base, title, body string) (*PullRequest, error) {
	c, err := g.client(ctx)
	if err != nil {
		return nil, err
	}
	pr, _, err := c.CreatePullRequest(g.owner, g.name, sdk.CreatePullRequestOption{Head: head, Base: base, Title: title, Body: body})
	if err != nil {
		return nil, err
	}
	return fromGitea(pr), nil
}

func (g *gitea) Edit(ctx context.Context, number int64, title, body string) (*PullRequest, error) {
	c, err := g.client(ctx)
	if err != nil {
		return nil, err
	}
	pr, _, err := c.EditPullRequest(g.owner, g.name, number, sdk.EditPullRequestOption{Title: title, Body: &body})
	if err != nil {
		return nil, err
	}
	return fromGitea(pr), nil
}

func (g *gitea) DeleteBranch(ctx context.Context, branch string) error {
	c, err := g.client(ctx)
	if err != nil {
		return err
	}
	_, resp, err := c.DeleteRepoBranch(g.owner, g.name, branch)
	if resp != nil && resp.StatusCode == http.StatusNotFound {
		return nil
	}
	return err
}

func (g *gitea) ReadFile(ctx context.Context, ref, path string) ([]byte, error) {
	c, err := g.client(ctx)
	if err != nil {
		return nil, err
	}
	data, _, err := c.GetRawFile(g.owner, g.name, path, ref) // ?ref=: a branch name may hold slashes
	return data, err
}

func fromGitea(pr *sdk.PullRequest) *PullRequest {
	out := &PullRequest{Number: pr.Index, URL: pr.HTMLURL, State: Open, Title: pr.Title, Body: pr.Body}
	if pr.Head != nil {
		out.Head = pr.Head.Sha
	}
	switch {
	case pr.HasMerged:
		out.State = Merged
	case pr.State == sdk.StateClosed:
		out.State = Closed
	}
	return out
}
