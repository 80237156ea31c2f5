package forge

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/go-github/v88/github"
)

// timeout bounds every forge request.
const timeout = 30 * time.Second

// gitHub is a repository on GitHub or GitHub Enterprise Server, through go-github.
type gitHub struct {
	c           *github.Client
	owner, name string
}

func newGitHub(repo Repository, token string) (Client, error) {
	base := withSlash(repo.APIURL)
	c, err := github.NewClient(github.WithAuthToken(token), github.WithURLs(&base, nil), github.WithTimeout(timeout))
	if err != nil {
		return nil, err
	}
	return &gitHub{c: c, owner: repo.Owner, name: repo.Name}, nil
}

func (g *gitHub) Find(ctx context.Context, head, base string) (*PullRequest, error) {
	prs, _, err := g.c.PullRequests.List(ctx, g.owner, g.name, &github.PullRequestListOptions{
		State: "all", Head: g.owner + ":" + head, Base: base, Sort: "created", Direction: "desc",
		ListOptions: github.ListOptions{PerPage: 1},
	})
	if err != nil || len(prs) == 0 {
		return nil, err
	}
	return fromGitHub(prs[0]), nil
}

func (g *gitHub) Create(ctx context.Context, head, base, title, body string) (*PullRequest, error) {
	pr, _, err := g.c.PullRequests.Create(ctx, g.owner, g.name, &github.NewPullRequest{Title: &title, Head: &head, Base: &base, Body: &body})
	if err != nil {
		return nil, err
	}
	return fromGitHub(pr), nil
}

func (g *gitHub) Edit(ctx context.Context, number int64, title, body string) (*PullRequest, error) {
	pr, _, err := g.c.PullRequests.Edit(ctx, g.owner, g.name, int(number), &github.PullRequest{Title: &title, Body: &body})
	if err != nil {
		return nil, err
	}
	return fromGitHub(pr), nil
}

func (g *gitHub) DeleteBranch(ctx context.Context, branch string) error {
	resp, err := g.c.Git.DeleteRef(ctx, g.owner, g.name, "heads/"+branch)
	// GitHub answers 422 "Reference does not exist" for a branch that is gone.
	if resp != nil && (resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusUnprocessableEntity) {
		return nil
	}
	return err
}

func (g *gitHub) ReadFile(ctx context.Context, ref, path string) ([]byte, error) {
	file, _, _, err := g.c.Repositories.GetContents(ctx, g.owner, g.name, path, &github.RepositoryContentGetOptions{Ref: ref})
	if err != nil {
		return nil, err
	}
	if file == nil {
		return nil, fmt.Errorf("%s is a directory", path)
	}
	content, err := file.GetContent()
	return []byte(content), err
}

func fromGitHub(pr *github.PullRequest) *PullRequest {
	out := &PullRequest{Number: int64(pr.GetNumber()), URL: pr.GetHTMLURL(), State: Open, Head: pr.GetHead().GetSHA(), Title: pr.GetTitle(), Body: pr.GetBody()}
	switch {
	case pr.MergedAt != nil || pr.GetMerged():
		out.State = Merged
	case pr.GetState() == "closed":
		out.State = Closed
	}
	return out
}

// withSlash ends u with "/", as the clients want their base URL.
func withSlash(u string) string {
	return strings.TrimSuffix(u, "/") + "/"
}
