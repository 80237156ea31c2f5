package forge

import (
	"context"
	"net/http"

	gitlab "gitlab.com/gitlab-org/api/client-go"
)

// gitLab is a project on GitLab, through GitLab's client-go. Its pull requests are merge requests.
type gitLab struct {
	c       *gitlab.Client
	project string
}

func newGitLab(repo Repository, token string) (Client, error) {
	c, err := gitlab.NewClient(token, gitlab.WithBaseURL(repo.APIURL), gitlab.WithHTTPClient(&http.Client{Timeout: timeout}), gitlab.WithoutRetries())
	if err != nil {
		return nil, err
	}
	return &gitLab{c: c, project: repo.Owner + "/" + repo.Name}, nil
}

func (g *gitLab) Find(ctx context.Context, head, base string) (*PullRequest, error) {
	mrs, _, err := g.c.MergeRequests.ListProjectMergeRequests(g.project, &gitlab.ListProjectMergeRequestsOptions{
		State: gitlab.Ptr("all"), SourceBranch: &head, TargetBranch: &base, OrderBy: gitlab.Ptr("created_at"), Sort: gitlab.Ptr("desc"),
		ListOptions: gitlab.ListOptions{PerPage: 1},
	}, gitlab.WithContext(ctx))
	if err != nil || len(mrs) == 0 {
		return nil, err
	}
	return fromGitLab(mrs[0]), nil
}

func (g *gitLab) Create(ctx context.Context, head, base, title, body string) (*PullRequest, error) {
	mr, _, err := g.c.MergeRequests.CreateMergeRequest(g.project, &gitlab.CreateMergeRequestOptions{
		Title: &title, Description: &body, SourceBranch: &head, TargetBranch: &base,
	}, gitlab.WithContext(ctx))
	if err != nil {
		return nil, err
	}
	return fromGitLab(&mr.BasicMergeRequest), nil
}

func (g *gitLab) Edit(ctx context.Context, number int64, title, body string) (*PullRequest, error) {
	mr, _, err := g.c.MergeRequests.UpdateMergeRequest(g.project, number, &gitlab.UpdateMergeRequestOptions{Title: &title, Description: &body}, gitlab.WithContext(ctx))
	if err != nil {
		return nil, err
	}
	return fromGitLab(&mr.BasicMergeRequest), nil
}

func (g *gitLab) DeleteBranch(ctx context.Context, branch string) error {
	resp, err := g.c.Branches.DeleteBranch(g.project, branch, gitlab.WithContext(ctx))
	if resp != nil && resp.StatusCode == http.StatusNotFound {
		return nil
	}
	return err
}

func (g *gitLab) ReadFile(ctx context.Context, ref, path string) ([]byte, error) {
	data, _, err := g.c.RepositoryFiles.GetRawFile(g.project, path, &gitlab.GetRawFileOptions{Ref: &ref}, gitlab.WithContext(ctx))
	return data, err
}

func fromGitLab(mr *gitlab.BasicMergeRequest) *PullRequest {
	out := &PullRequest{Number: mr.IID, URL: mr.WebURL, State: Open, Head: mr.SHA, Title: mr.Title, Body: mr.Description}
	switch mr.State {
	case "merged":
		out.State = Merged
	case "closed", "locked":
		out.State = Closed
	}
	return out
}
