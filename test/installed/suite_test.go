package installed_test

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/gitpeer/gitpeer/test/gitserver"
	"github.com/gitpeer/gitpeer/test/sandbox"
)

func TestInstalled(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "gitpeer as installed")
}

var (
	// binary is the gitpeer binary built from ./cmd/gitpeer.
	binary string
	gitSrv *gitserver.Server
	// repo is the current container's repository (newRepo), one of repos made so far.
	repo  gitserver.Repo
	repos int
)

var _ = BeforeSuite(func() {
	binary = filepath.Join(GinkgoT().TempDir(), "gitpeer")
	build := exec.Command("go", "build", "-o", binary, "github.com/gitpeer/gitpeer/cmd/gitpeer")
	build.Stdout, build.Stderr = GinkgoWriter, GinkgoWriter
	Expect(build.Run()).To(Succeed(), "go build ./cmd/gitpeer")

	gitSrv = gitserver.Start(GinkgoT())
})

// newRepo makes repo a new repository with an initial commit on main, for the current container.
func newRepo() {
	GinkgoHelper()
	var err error
	repos++
	repo, err = gitSrv.NewRepo(fmt.Sprintf("peering-%d", repos))
	Expect(err).NotTo(HaveOccurred())
	w := clone()
	gitCLI(w, "commit", "-q", "--allow-empty", "-m", "Peering repository")
	gitCLI(w, "push", "-q", "origin", "HEAD:main")
}

// gitCLI runs git in dir as the reviewer would.
func gitCLI(dir string, args ...string) {
	GinkgoHelper()
	_, err := sandbox.Git(dir, args...)
	Expect(err).NotTo(HaveOccurred())
}

// commitAsReviewer applies change (git commands) to a fresh clone of main and pushes it, again on
// a fresh clone when an agent's commit reached the branch first, as a reviewer would.
func commitAsReviewer(change ...[]string) {
	GinkgoHelper()
	Eventually(func() error {
		w := clone()
		for _, args := range append(change, []string{"push", "-q", "origin", "HEAD:main"}) {
			if out, err := sandbox.Git(w, args...); err != nil {
				return fmt.Errorf("git %v: %w: %s", args, err, out)
			}
		}
		return nil
	}).WithTimeout(time.Minute).Should(Succeed())
}

// clone returns a fresh clone of the suite's repository.
func clone() string {
	GinkgoHelper()
	w := filepath.Join(GinkgoT().TempDir(), "w")
	gitCLI(filepath.Dir(w), "clone", "-q", repo.Dir, w)
	return w
}

// show returns a file on ref of the suite's repository, or "" if absent.
func show(ref, path string) string { return sandbox.Show(repo.Dir, ref, path) }
