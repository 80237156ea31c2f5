package gitsync_test

import (
	"bytes"
	"context"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitpeer/gitpeer/gitsync"
	"github.com/gitpeer/gitpeer/test/gitserver"
)

// fixture is one bare repository on a running test server.
type fixture struct {
	t    testing.TB
	srv  *gitserver.Server
	repo gitserver.Repo
}

func newFixture(t testing.TB, name string) *fixture {
	t.Helper()
	srv := gitserver.Start(t)
	repo, err := srv.NewRepo(name)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, srv: srv, repo: repo}
}

func (f *fixture) httpAuth() *gitsync.Auth {
	return &gitsync.Auth{Username: f.srv.Username, Password: f.srv.Password}
}

func (f *fixture) sshAuth() *gitsync.Auth {
	return &gitsync.Auth{Identity: f.srv.ClientKey, KnownHosts: f.srv.KnownHosts}
}

// open opens a fresh agent clone of the repository; mod adjusts the config.
func (f *fixture) open(url string, auth *gitsync.Auth, mod ...func(*gitsync.Config)) *gitsync.Repo {
	f.t.Helper()
	return openClone(f.t, url, auth, mod...)
}

// openClone opens a fresh agent clone of the repository at url until the test ends.
func openClone(t testing.TB, url string, auth *gitsync.Auth, mod ...func(*gitsync.Config)) *gitsync.Repo {
	t.Helper()
	cfg := gitsync.Config{URL: url, Dir: filepath.Join(t.TempDir(), "clone"), Auth: auth}
	for _, m := range mod {
		m(&cfg)
	}
	r, err := gitsync.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

func (f *fixture) openHTTP(mod ...func(*gitsync.Config)) *gitsync.Repo {
	return f.open(f.repo.HTTPURL, f.httpAuth(), mod...)
}

func (f *fixture) openSSH(mod ...func(*gitsync.Config)) *gitsync.Repo {
	return f.open(f.repo.SSHURL, f.sshAuth(), mod...)
}

// git runs the git CLI in dir and returns its trimmed output.
func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	return gitsync.RunGit(t, dir, args...)
}

// cliClone clones the repository with the git CLI into a fresh work tree.
func (f *fixture) cliClone() string {
	f.t.Helper()
	dir := filepath.Join(f.t.TempDir(), "work")
	git(f.t, "", "clone", "--quiet", f.srv.HTTPURLWithCredentials(f.repo), dir)
	return dir
}

func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return c
}

func mustPoll(t testing.TB, r *gitsync.Repo) plumbing.Hash {
	t.Helper()
	h, err := r.Poll(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// tenantReviewer returns a function that writes p/c/tenant.yaml with the
// given content to the review branch of agent.
func tenantReviewer(t testing.TB, agent *gitsync.Repo, branch string) func(content string) gitsync.WriteResult {
	return func(content string) gitsync.WriteResult {
		t.Helper()
		res, err := agent.WriteReview(ctx(t), branch, message("tenant"), []gitsync.FileChange{gitsync.Put("p/c/tenant.yaml", []byte(content))})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
}

// message is a commit message written verbatim.
type message string

func (m message) String() (string, error) { return string(m), nil }

func mustWrite(t testing.TB, r *gitsync.Repo, subject string, changes ...gitsync.FileChange) gitsync.WriteResult {
	t.Helper()
	res, err := r.Write(ctx(t), message(subject+"\n\nGitpeer-Action: test\n"), changes)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// counter is a reverse proxy in front of the HTTP server that counts ref
// advertisements and pack requests for upload-pack (fetch), and records the
// size of each push request (receive-pack: ref updates and pack).
type counter struct {
	URL                string
	adverts, downloads atomic.Int64
	// open counts the client connections to the proxy not closed yet.
	open atomic.Int64
	// CA is the proxy's certificate (PEM) when it serves HTTPS.
	CA []byte

	mu     sync.Mutex
	pushes []int64
	onPush func()
}

func newCounter(t testing.TB, repoURL string) *counter {
	return startCounter(t, repoURL, false)
}

// newTLSCounter is newCounter serving HTTPS, with its certificate in CA.
func newTLSCounter(t testing.TB, repoURL string) *counter {
	return startCounter(t, repoURL, true)
}

func startCounter(t testing.TB, repoURL string, useTLS bool) *counter {
	u, err := url.Parse(repoURL)
	if err != nil {
		t.Fatal(err)
	}
	c := &counter{}
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet && r.URL.Query().Get("service") == "git-upload-pack":
			c.adverts.Add(1)
		case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git-upload-pack"):
			c.downloads.Add(1)
		case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git-receive-pack"):
			c.pushing()
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			c.pushed(len(body))
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		proxy.ServeHTTP(w, r)
	}))
	srv.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		switch state {
		case http.StateNew:
			c.open.Add(1)
		case http.StateClosed, http.StateHijacked:
			c.open.Add(-1)
		}
	}
	if useTLS {
		srv.StartTLS()
		c.CA = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	c.URL = srv.URL + u.Path
	return c
}

// OpenConns returns the number of client connections not closed yet, once
// it is under want or after a few seconds (a client's close reaches the
// server a little later).
func (c *counter) OpenConns(want int64) int64 {
	for deadline := time.Now().Add(5 * time.Second); c.open.Load() >= want && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	return c.open.Load()
}

// OnPush arms hook: it runs once, when the next push request arrives and
// before it is forwarded.
func (c *counter) OnPush(hook func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.onPush = hook
}

func (c *counter) pushing() {
	c.mu.Lock()
	hook := c.onPush
	c.onPush = nil
	c.mu.Unlock()
	if hook != nil {
		hook()
	}
}

func (c *counter) pushed(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pushes = append(c.pushes, int64(n))
}

// Pushes returns the size in bytes of each push request so far, in order.
func (c *counter) Pushes() []int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.pushes)
}
