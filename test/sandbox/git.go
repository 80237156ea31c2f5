package sandbox

import (
	"fmt"
	"os/exec"
	"strings"
)

// Reviewer is the person who merges pull requests in tests and the demo.
const (
	ReviewerName  = "Rita Reviewer"
	ReviewerEmail = "rita@example.com"
)

// Git runs the git command line in dir as the reviewer would.
func Git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{
		"-c", "user.name=" + ReviewerName, "-c", "user.email=" + ReviewerEmail, "-c", "init.defaultBranch=main",
	}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// Show returns the file at path on ref of the bare repository repoDir, or ""
// when it is absent.
func Show(repoDir, ref, path string) string {
	out, err := exec.Command("git", "--git-dir", repoDir, "show", ref+":"+path).Output()
	if err != nil {
		return ""
	}
	return string(out)
}

// LastCommit returns "<short hash> <subject>" of the newest commit on ref that touched path.
func LastCommit(repoDir, ref, path string) string {
	out, _ := exec.Command("git", "--git-dir", repoDir, "log", "-1", "--format=%h %s", ref, "--", path).Output()
	return strings.TrimSpace(string(out))
}
