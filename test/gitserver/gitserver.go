// Package gitserver starts a real Git server for tests and the demo: bare
// repositories served over smart HTTP (basic auth) and SSH (public-key auth,
// with a host key the client must verify). It is built on fluxcd/pkg/gittestserver,
// which runs the `git` binary (upload-pack / receive-pack) for every request.
package gitserver

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/fluxcd/gitkit"
	"github.com/fluxcd/pkg/gittestserver"
	"golang.org/x/crypto/ssh"
)

// TB is the part of testing.TB the harness needs; *testing.T, *testing.B and
// ginkgo's GinkgoT() all satisfy it.
type TB interface {
	Helper()
	Cleanup(func())
	Fatalf(format string, args ...any)
	TempDir() string
}

// Server is a running Git server. Its fields are what a client needs to reach it.
type Server struct {
	// Root is the directory holding the bare repositories (<Root>/<name>.git).
	Root string
	// Username and Password are the HTTP basic-auth credentials the server accepts.
	Username, Password string
	// ClientKey is an OpenSSH PEM Ed25519 private key the SSH server accepts.
	ClientKey []byte
	// KnownHosts is a known_hosts line for the server's SSH host key.
	KnownHosts []byte

	srv *gittestserver.GitServer
}

// Repo is one bare repository on a Server.
type Repo struct {
	// Name is the repository name without the .git suffix.
	Name string
	// Dir is the bare repository on disk, for tests that drive it with the git CLI.
	Dir string
	// HTTPURL is the smart-HTTP URL, without credentials.
	HTTPURL string
	// SSHURL is the SSH URL (ssh://git@127.0.0.1:<port>/<name>.git).
	SSHURL string
}

// gittestserver keeps its SSH key lookup function in a package variable read
// when the SSH listener starts; lookupMu serialises servers starting in parallel.
var lookupMu sync.Mutex

// Start runs a Git server with HTTP and SSH listeners on loopback until the test ends.
func Start(t TB) *Server {
	t.Helper()
	s, err := New(t.TempDir())
	if err != nil {
		t.Fatalf("start git server: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
}

// New runs a Git server whose repositories and keys live under dir. Call Stop when done.
func New(dir string) (*Server, error) {
	s := &Server{Root: filepath.Join(dir, "repos"), Username: "gitpeer", Password: randomString()}
	keyDir := filepath.Join(dir, "keys")
	if err := os.MkdirAll(keyDir, 0o700); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(s.Root, 0o755); err != nil {
		return nil, err
	}
	hostKey, err := writeHostKey(keyDir)
	if err != nil {
		return nil, err
	}
	clientPub, clientKey, err := newSSHKey()
	if err != nil {
		return nil, err
	}
	s.ClientKey = clientKey
	authorized := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(clientPub)))

	s.srv = gittestserver.NewGitServer(s.Root).KeyDir(keyDir).Auth(s.Username, s.Password)
	if err := s.srv.StartHTTP(); err != nil {
		return nil, fmt.Errorf("http listener: %w", err)
	}
	lookupMu.Lock()
	s.srv.PublicKeyLookupFunc(func(content string) (*gitkit.PublicKey, error) {
		if content != authorized {
			return nil, fmt.Errorf("public key not authorized")
		}
		return &gitkit.PublicKey{Id: "gitpeer"}, nil
	})
	err = s.srv.ListenSSH()
	lookupMu.Unlock()
	if err != nil {
		s.srv.StopHTTP()
		return nil, fmt.Errorf("ssh listener: %w", err)
	}
	go func() { _ = s.srv.StartSSH() }()

	host, port, err := net.SplitHostPort(strings.TrimPrefix(s.srv.SSHAddress(), "ssh://git@"))
	if err != nil {
		s.Stop()
		return nil, err
	}
	s.KnownHosts = []byte(fmt.Sprintf("[%s]:%s %s", host, port, ssh.MarshalAuthorizedKey(hostKey)))
	return s, nil
}

// Stop closes both listeners. Repositories stay on disk.
func (s *Server) Stop() {
	s.srv.StopHTTP()
	_ = s.srv.StopSSH()
}

// NewRepo creates an empty bare repository whose HEAD is refs/heads/main.
func (s *Server) NewRepo(name string) (Repo, error) {
	dir := filepath.Join(s.Root, name+".git")
	out, err := exec.Command("git", "init", "--quiet", "--bare", "--initial-branch=main", dir).CombinedOutput()
	if err != nil {
		return Repo{}, fmt.Errorf("git init %s: %v: %s", dir, err, out)
	}
	return s.Repo(name), nil
}

// Repo returns the addresses of the repository name (which need not exist yet).
func (s *Server) Repo(name string) Repo {
	return Repo{
		Name:    name,
		Dir:     filepath.Join(s.Root, name+".git"),
		HTTPURL: s.srv.HTTPAddress() + "/" + name + ".git",
		SSHURL:  s.srv.SSHAddress() + "/" + name + ".git",
	}
}

// HTTPURLWithCredentials returns the repository's HTTP URL with the basic-auth
// credentials embedded, for the git command line.
func (s *Server) HTTPURLWithCredentials(r Repo) string {
	return s.srv.HTTPAddressWithCredentials() + "/" + r.Name + ".git"
}

// writeHostKey writes a fresh Ed25519 host key where gitkit looks for it and
// returns its public half.
func writeHostKey(keyDir string) (ssh.PublicKey, error) {
	pub, pemBytes, err := newSSHKey()
	if err != nil {
		return nil, err
	}
	// gitkit reads its host key from <KeyDir>/gitkit.rsa whatever the key type.
	if err := os.WriteFile(filepath.Join(keyDir, "gitkit.rsa"), pemBytes, 0o600); err != nil {
		return nil, err
	}
	return pub, nil
}

// newSSHKey returns a fresh Ed25519 key as an SSH public key and an OpenSSH PEM private key.
func newSSHKey() (ssh.PublicKey, []byte, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		return nil, nil, err
	}
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		return nil, nil, err
	}
	return sshPub, pem.EncodeToMemory(block), nil
}

func randomString() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%x", b)
}
