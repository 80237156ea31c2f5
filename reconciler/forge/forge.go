// Package forge opens and follows the pull request (merge request on GitLab)
// of a consumer's review branch on the forge hosting the peering repository:
// GitHub (and GitHub Enterprise), GitLab and Gitea/Forgejo, each through its
// own client library. It opens the request once and updates it afterwards,
// with the proposer's own offline checks in its description, reports a merge
// or a close, and deletes the review branch once the request is merged or
// closed. It posts no commit status: the check a reviewer relies on is the
// repository's CI (`gitpeer verify --base`), never the proposer's word.
package forge

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// Provider names a kind of forge, as spec.consumer.pullRequest.provider does.
type Provider string

const (
	// GitHub is github.com or GitHub Enterprise Server.
	GitHub Provider = "github"
	// GitLab is gitlab.com or a self-managed GitLab.
	GitLab Provider = "gitlab"
	// Gitea is Gitea or Forgejo (Codeberg).
	Gitea Provider = "gitea"
)

// State is the state of a pull request.
type State string

const (
	// Open: waiting for review.
	Open State = "open"
	// Merged: a reviewer merged it; the peering is approved.
	Merged State = "merged"
	// Closed: closed without merging; the peering is not approved.
	Closed State = "closed"
)

// PullRequest is a pull request as the forge reports it.
type PullRequest struct {
	// Number is the pull request's number (GitLab: its IID).
	Number int64
	// URL is its web page.
	URL string
	// State is open, merged or closed.
	State State
	// Head is the commit at the head of its source branch.
	Head string
	// Title and Body are its title and description.
	Title, Body string
}

// Client is what the agent does on a forge, for one repository.
type Client interface {
	// Find returns the most recent pull request from head into base, in any state, or nil.
	Find(ctx context.Context, head, base string) (*PullRequest, error)
	// Create opens a pull request from head into base.
	Create(ctx context.Context, head, base, title, body string) (*PullRequest, error)
	// Edit sets the title and description of pull request number.
	Edit(ctx context.Context, number int64, title, body string) (*PullRequest, error)
	// DeleteBranch deletes a branch; a branch that is already gone is not an error.
	DeleteBranch(ctx context.Context, branch string) error
	// ReadFile returns the content of the file at path in commit or branch ref.
	ReadFile(ctx context.Context, ref, path string) ([]byte, error)
}

// Repository locates a repository on a forge.
type Repository struct {
	// Provider is the kind of forge.
	Provider Provider
	// APIURL is the root of its API: https://api.github.com/, https://<host>/api/v3/ for GitHub
	// Enterprise, https://<host>/ for GitLab and Gitea.
	APIURL string
	// Owner is the repository's owner; on GitLab, its namespace (group/subgroup).
	Owner string
	// Name is the repository's name, without .git.
	Name string
}

// New returns the client of repo acting with token.
func New(repo Repository, token string) (Client, error) {
	if token == "" {
		return nil, errors.New("forge token is empty")
	}
	switch repo.Provider {
	case GitHub:
		return newGitHub(repo, token)
	case GitLab:
		return newGitLab(repo, token)
	case Gitea:
		return newGitea(repo, token)
	}
	return nil, fmt.Errorf("unknown forge provider %q: one of github, gitlab, gitea", repo.Provider)
}

// ErrUnknownForge is returned by Locate when the provider cannot be told from the URL.
var ErrUnknownForge = errors.New("cannot tell the forge from the repository URL: set spec.consumer.pullRequest.provider")

// Locate finds the repository behind a Git URL (https://host/owner/name.git,
// ssh://git@host/owner/name.git). provider and apiURL override what the URL
// implies; provider is needed unless the host is github.com, gitlab.com or
// codeberg.org. The API of an SSH URL's host is taken to be on HTTPS.
func Locate(gitURL string, provider Provider, apiURL string) (Repository, error) {
	u, err := url.Parse(gitURL)
	if err != nil {
		return Repository{}, fmt.Errorf("repository URL: %w", err)
	}
	scheme, host := u.Scheme, u.Host
	switch scheme {
	case "ssh":
		scheme, host = "https", u.Hostname() // an SSH port says nothing about the web port
	case "http", "https":
	default:
		return Repository{}, fmt.Errorf("repository URL %q: want an http, https or ssh URL", gitURL)
	}
	path := strings.TrimSuffix(strings.Trim(u.Path, "/"), ".git")
	i := strings.LastIndex(path, "/")
	if i <= 0 || i == len(path)-1 {
		return Repository{}, fmt.Errorf("repository URL %q: want <host>/<owner>/<name>", gitURL)
	}
	repo := Repository{Provider: provider, Owner: path[:i], Name: path[i+1:], APIURL: apiURL}
	if repo.Provider == "" {
		if repo.Provider = knownHosts[u.Hostname()]; repo.Provider == "" {
			return Repository{}, ErrUnknownForge
		}
	}
	if repo.APIURL == "" {
		repo.APIURL = defaultAPIURL(repo.Provider, scheme, host)
	}
	return repo, nil
}

// knownHosts are the public forges whose kind the URL tells.
var knownHosts = map[string]Provider{"github.com": GitHub, "gitlab.com": GitLab, "codeberg.org": Gitea}

// defaultAPIURL is the API root of a forge of kind p at host.
func defaultAPIURL(p Provider, scheme, host string) string {
	switch {
	case p == GitHub && host == "github.com":
		return "https://api.github.com/"
	case p == GitHub:
		return fmt.Sprintf("%s://%s/api/v3/", scheme, host)
	}
	return fmt.Sprintf("%s://%s/", scheme, host)
}
