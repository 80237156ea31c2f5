package main

import (
	"bytes"
	"fmt"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gitpeer/gitpeer/test/sandbox"
)

// reviewer merges pull requests into the branch main of a repository as a Git host's merge
// button does: a merge commit of the pull request's branch on top of main as it is at that
// moment, pushed; when an agent's commit lands first the push is refused and the merge is
// redone on the new main. It works in a bare clone of its own, without a work tree, so that
// even a pull request of 10,000 directories is merged in seconds.
type reviewer struct {
	dir, origin string
	// merges counts the pull requests merged through this reviewer; retries the refused pushes.
	stats *mergeStats
	prs   int
}

// mergeStats counts merges and refused pushes; several reviewers may share one.
type mergeStats struct {
	mu                      sync.Mutex
	merges, retries, maxTry int
}

// add records a merge that needed retries refused pushes.
func (s *mergeStats) add(retries int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.merges++
	s.retries += retries
	s.maxTry = max(s.maxTry, retries)
}

// get returns merges, total retries and the most retries one merge needed.
func (s *mergeStats) get() (merges, retries, maxRetries int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.merges, s.retries, s.maxTry
}

// newReviewer makes a bare repository in dir that merges into origin (a bare repository path).
func newReviewer(dir, origin string, stats *mergeStats) (*reviewer, error) {
	r := &reviewer{dir: dir, origin: origin, stats: stats}
	if _, err := sandbox.Git(filepath.Dir(dir), "init", "-q", "--bare", dir); err != nil {
		return nil, err
	}
	return r, nil
}

// git runs git in the reviewer's repository.
func (r *reviewer) git(args ...string) (string, error) {
	out, err := sandbox.Git(r.dir, args...)
	return strings.TrimSpace(out), err
}

// fetch updates refs/remotes/origin/main and returns its hash.
func (r *reviewer) fetch() (string, error) {
	if _, err := r.git("fetch", "-q", r.origin, "+refs/heads/main:refs/remotes/origin/main"); err != nil {
		return "", err
	}
	return r.git("rev-parse", "refs/remotes/origin/main")
}

// propose commits files (path → content) on top of the current main as the branch of a new
// pull request, with git fast-import, and returns the branch.
func (r *reviewer) propose(title string, files map[string][]byte) (string, error) {
	base, err := r.fetch()
	if err != nil {
		return "", err
	}
	r.prs++
	branch := fmt.Sprintf("refs/heads/pr-%d", r.prs)
	var stream bytes.Buffer
	fmt.Fprintf(&stream, "commit %s\ncommitter %s <%s> %d +0000\ndata %d\n%s\nfrom %s\n",
		branch, sandbox.ReviewerName, sandbox.ReviewerEmail, time.Now().Unix(), len(title), title, base)
	for _, p := range slices.Sorted(maps.Keys(files)) {
		fmt.Fprintf(&stream, "M 100644 inline %s\ndata %d\n%s\n", p, len(files[p]), files[p])
	}
	cmd := exec.Command("git", "fast-import", "--quiet")
	cmd.Dir, cmd.Stdin = r.dir, &stream
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("git fast-import: %w: %s", err, out)
	}
	return branch, nil
}

// merge merges branch into main with a merge commit and pushes it, redoing the merge on the
// new main each time the push is refused because main moved. It records the refused pushes.
func (r *reviewer) merge(branch, message string) error {
	for retries := 0; ; retries++ {
		base, err := r.fetch()
		if err != nil {
			return err
		}
		tree, err := r.git("merge-tree", "--write-tree", base, branch)
		if err != nil {
			return fmt.Errorf("merging %s: %w", branch, err)
		}
		commit, err := r.git("commit-tree", tree, "-p", base, "-p", branch, "-m", message)
		if err != nil {
			return err
		}
		out, err := r.git("push", "-q", r.origin, commit+":refs/heads/main")
		if err == nil {
			r.stats.add(retries)
			return nil
		}
		if !strings.Contains(out, "fetch first") && !strings.Contains(out, "non-fast-forward") && !strings.Contains(out, "cannot lock ref") {
			return err
		}
		if retries > 100 {
			return fmt.Errorf("merging %s: refused %d times: %w", branch, retries, err)
		}
	}
}

// proposeAndMerge opens a pull request with files and merges it.
func (r *reviewer) proposeAndMerge(title string, files map[string][]byte) error {
	branch, err := r.propose(title, files)
	if err != nil {
		return err
	}
	return r.merge(branch, fmt.Sprintf("Merge pull request #%d: %s", r.prs, title))
}

// countCommitsBy counts the commits on main of the bare repository dir whose author has email.
func countCommitsBy(dir, email string) (int, error) {
	out, err := exec.Command("git", "--git-dir", dir, "rev-list", "--count", "--author=<"+email+">", "refs/heads/main").Output()
	if err != nil {
		return 0, fmt.Errorf("git rev-list: %w", err)
	}
	var n int
	_, err = fmt.Sscan(string(out), &n)
	return n, err
}
