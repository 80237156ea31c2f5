package gitserver_test

import (
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-billy/v5/memfs"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"github.com/go-git/go-git/v5/storage/memory"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/gitpeer/gitpeer/test/gitserver"
)

// sshAuth builds go-git SSH auth that verifies the host key against knownHosts.
func sshAuth(srv *gitserver.Server, knownHosts []byte) transport.AuthMethod {
	auth, err := gitssh.NewPublicKeys("git", srv.ClientKey, "")
	Expect(err).NotTo(HaveOccurred())
	file := filepath.Join(GinkgoT().TempDir(), "known_hosts")
	Expect(os.WriteFile(file, knownHosts, 0o600)).To(Succeed())
	auth.HostKeyCallback, err = gitssh.NewKnownHostsCallback(file)
	Expect(err).NotTo(HaveOccurred())
	return auth
}

// commitAndPush makes one commit with file name in a fresh in-memory repository and pushes it.
func commitAndPush(url string, auth transport.AuthMethod, name string) error {
	r, err := git.Init(memory.NewStorage(), memfs.New())
	Expect(err).NotTo(HaveOccurred())
	wt, err := r.Worktree()
	Expect(err).NotTo(HaveOccurred())
	f, err := wt.Filesystem.Create(name)
	Expect(err).NotTo(HaveOccurred())
	_, _ = f.Write([]byte("hello\n"))
	Expect(f.Close()).To(Succeed())
	_, err = wt.Add(name)
	Expect(err).NotTo(HaveOccurred())
	_, err = wt.Commit("add "+name, &git.CommitOptions{Author: &object.Signature{Name: "t", Email: "t@example.com", When: time.Now()}})
	Expect(err).NotTo(HaveOccurred())
	_, err = r.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{url}})
	Expect(err).NotTo(HaveOccurred())
	return r.Push(&git.PushOptions{RemoteName: "origin", Auth: auth, RefSpecs: []config.RefSpec{"refs/heads/master:refs/heads/main"}})
}

// clonedFiles clones url and returns the file names at the tip of main.
func clonedFiles(url string, auth transport.AuthMethod) ([]string, error) {
	r, err := git.Clone(memory.NewStorage(), nil, &git.CloneOptions{URL: url, Auth: auth})
	if err != nil {
		return nil, err
	}
	head, err := r.Head()
	Expect(err).NotTo(HaveOccurred())
	c, err := r.CommitObject(head.Hash())
	Expect(err).NotTo(HaveOccurred())
	var names []string
	iter, err := c.Files()
	Expect(err).NotTo(HaveOccurred())
	_ = iter.ForEach(func(f *object.File) error { names = append(names, f.Name); return nil })
	return names, nil
}

var _ = Describe("Git server", func() {
	var srv *gitserver.Server
	BeforeEach(func() { srv = gitserver.Start(GinkgoT()) })

	It("serves clone and push over HTTP with basic auth", func() {
		repo, err := srv.NewRepo("http")
		Expect(err).NotTo(HaveOccurred())
		auth := &githttp.BasicAuth{Username: srv.Username, Password: srv.Password}
		Expect(commitAndPush(repo.HTTPURL, auth, "a.txt")).To(Succeed())
		Expect(clonedFiles(repo.HTTPURL, auth)).To(ConsistOf("a.txt"))
	})

	It("refuses a wrong HTTP password", func() {
		repo, err := srv.NewRepo("http-denied")
		Expect(err).NotTo(HaveOccurred())
		_, err = clonedFiles(repo.HTTPURL, &githttp.BasicAuth{Username: srv.Username, Password: "wrong"})
		Expect(err).To(MatchError(transport.ErrAuthenticationRequired))
		err = commitAndPush(repo.HTTPURL, &githttp.BasicAuth{Username: srv.Username, Password: "wrong"}, "x")
		Expect(err).To(MatchError(transport.ErrAuthenticationRequired))
	})

	It("serves clone and push over SSH with a verified host key", func() {
		repo, err := srv.NewRepo("ssh")
		Expect(err).NotTo(HaveOccurred())
		auth := sshAuth(srv, srv.KnownHosts)
		Expect(commitAndPush(repo.SSHURL, auth, "b.txt")).To(Succeed())
		Expect(clonedFiles(repo.SSHURL, auth)).To(ConsistOf("b.txt"))
	})

	It("lets the client refuse a wrong SSH host key", func() {
		repo, err := srv.NewRepo("ssh-hostkey")
		Expect(err).NotTo(HaveOccurred())
		// Same host and port, another server's key: what a man in the middle would present.
		other := gitserver.Start(GinkgoT())
		host := strings.Fields(string(srv.KnownHosts))[0]
		otherKey := strings.SplitN(string(other.KnownHosts), " ", 2)[1]
		_, err = clonedFiles(repo.SSHURL, sshAuth(srv, []byte(host+" "+otherKey)))
		Expect(err).To(MatchError(ContainSubstring("key mismatch")))
	})

	It("refuses an SSH client key it does not know", func() {
		repo, err := srv.NewRepo("ssh-denied")
		Expect(err).NotTo(HaveOccurred())
		other := gitserver.Start(GinkgoT())
		auth := sshAuth(other, srv.KnownHosts)
		_, err = clonedFiles(repo.SSHURL, auth)
		Expect(err).To(MatchError(ContainSubstring("unable to authenticate")))
	})
})
