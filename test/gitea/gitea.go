// Package gitea starts a real Gitea forge for tests: the gitea binary `make
// tools` builds from the Go module proxy (test/giteatools), run from a
// temporary directory with sqlite, loopback HTTP only and no SSH. Users,
// tokens and repositories are created through its REST API with Gitea's own
// SDK, as a forge admin would.
package gitea

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	sdk "code.gitea.io/sdk/gitea"

	"github.com/gitpeer/gitpeer/test/process"
)

// TB is the part of testing.TB the harness needs; *testing.T and ginkgo's
// GinkgoT() satisfy it.
type TB interface {
	Helper()
	Cleanup(func())
	Fatalf(format string, args ...any)
	TempDir() string
}

// Server is a running Gitea.
type Server struct {
	// URL is the HTTP root of the forge, e.g. http://127.0.0.1:41234/.
	URL string
	// Admin is the site administrator created at start; AdminToken is its API token (all scopes).
	Admin, AdminPassword, AdminToken string

	dir string
	web *process.Process
}

// Start runs Gitea until the test ends.
func Start(t TB) *Server {
	t.Helper()
	s, err := New(t.TempDir())
	if err != nil {
		t.Fatalf("start gitea: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
}

// StartWithRepo runs Gitea until the test ends, with a user owning the
// repository user/repo (an initial commit on main) and a token of AgentScopes,
// and returns that user and an API client acting as it.
func StartWithRepo(t TB, user, repo string) (*Server, User, *sdk.Client) {
	t.Helper()
	s := Start(t)
	u, err := s.CreateUser(user, AgentScopes...)
	if err != nil {
		t.Fatalf("%v", err)
	}
	if _, err := s.CreateRepo(u.Name, repo); err != nil {
		t.Fatalf("%v", err)
	}
	c, err := s.Client(u.Token)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return s, u, c
}

// New runs Gitea with its data under dir. Call Stop when done.
func New(dir string) (*Server, error) {
	bin, static, err := findGitea()
	if err != nil {
		return nil, err
	}
	ports, err := process.FreePorts(1)
	if err != nil {
		return nil, err
	}
	port := ports[0]
	s := &Server{URL: fmt.Sprintf("http://127.0.0.1:%d/", port), Admin: "forge-admin", AdminPassword: randomString(), dir: dir}
	if err := os.WriteFile(s.configPath(), []byte(appINI(dir, static, port)), 0o600); err != nil {
		return nil, err
	}
	if _, err := s.run(bin, "migrate"); err != nil {
		return nil, err
	}
	if _, err := s.run(bin, "admin", "user", "create", "--admin", "--username", s.Admin, "--password", s.AdminPassword,
		"--email", s.Admin+"@example.com", "--must-change-password=false"); err != nil {
		return nil, err
	}
	token, err := s.run(bin, "admin", "user", "generate-access-token", "--username", s.Admin, "--token-name", "harness", "--scopes", "all", "--raw")
	if err != nil {
		return nil, err
	}
	// Gitea logs to stdout too (as root it warns): the token is the last line.
	lines := strings.Split(strings.TrimSpace(token), "\n")
	s.AdminToken = strings.TrimSpace(lines[len(lines)-1])
	if err := s.startWeb(bin); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Server) configPath() string { return filepath.Join(s.dir, "app.ini") }

// env is the environment of every gitea command: its own HOME (gitea runs git), and the switch
// that lets it run as root in containers.
func (s *Server) env() []string {
	return append(os.Environ(), "HOME="+s.dir, "GITEA_WORK_DIR="+s.dir, "GITEA_I_AM_BEING_UNSAFE_RUNNING_AS_ROOT=true")
}

// run runs one gitea CLI command against the configuration and returns its output.
func (s *Server) run(bin string, args ...string) (string, error) {
	cmd := exec.Command(bin, append([]string{"--config", s.configPath(), "--work-path", s.dir}, args...)...)
	cmd.Env, cmd.Dir = s.env(), s.dir
	out, err := cmd.Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return "", fmt.Errorf("gitea %s: %v: %s%s", strings.Join(args, " "), err, out, exit.Stderr)
		}
		return "", fmt.Errorf("gitea %s: %w", strings.Join(args, " "), err)
	}
	return string(out), nil
}

// startWeb starts `gitea web` and waits until its API answers.
func (s *Server) startWeb(bin string) error {
	cmd := exec.Command(bin, "--config", s.configPath(), "--work-path", s.dir, "web")
	cmd.Env, cmd.Dir = s.env(), s.dir
	var err error
	if s.web, err = process.Start("gitea web", cmd, filepath.Join(s.dir, "gitea.log")); err != nil {
		return err
	}
	if err := process.WaitUntil(context.Background(), 2*time.Minute, 200*time.Millisecond, "gitea's API", process.HTTPReady(http.DefaultClient, s.URL+"api/v1/version"), s.web); err != nil {
		s.Stop()
		return fmt.Errorf("%w: %s", err, s.Log())
	}
	return nil
}

// Log returns Gitea's log.
func (s *Server) Log() string {
	if s.web == nil {
		return ""
	}
	return s.web.Log()
}

// Stop ends Gitea: SIGTERM, then SIGKILL after 10s.
func (s *Server) Stop() {
	if s.web != nil {
		s.web.Stop(10 * time.Second)
	}
}

// Client returns an API client acting with token.
func (s *Server) Client(token string) (*sdk.Client, error) {
	return sdk.NewClient(s.URL, sdk.SetToken(token))
}

// AgentScopes are the token scopes gitpeer's agent needs: push to the
// repository and open pull requests, read its own user.
var AgentScopes = []sdk.AccessTokenScope{"write:repository", "read:user"}

// User is a forge account with an API token.
type User struct {
	Name, Password, Token string
}

// CreateUser creates a user and an API token of it with scopes (e.g. "write:repository").
func (s *Server) CreateUser(name string, scopes ...sdk.AccessTokenScope) (User, error) {
	admin, err := s.Client(s.AdminToken)
	if err != nil {
		return User{}, err
	}
	u := User{Name: name, Password: randomString()}
	if _, _, err := admin.AdminCreateUser(sdk.CreateUserOption{Username: name, Email: name + "@example.com", Password: u.Password,
		MustChangePassword: new(bool)}); err != nil {
		return User{}, fmt.Errorf("create user %s: %w", name, err)
	}
	basic, err := sdk.NewClient(s.URL, sdk.SetBasicAuth(name, u.Password))
	if err != nil {
		return User{}, err
	}
	tok, _, err := basic.CreateAccessToken(sdk.CreateAccessTokenOption{Name: "gitpeer", Scopes: scopes})
	if err != nil {
		return User{}, fmt.Errorf("create token of %s: %w", name, err)
	}
	u.Token = tok.Token
	return u, nil
}

// CreateRepo creates the repository owner/name, owned by the user owner, with an initial commit on main.
func (s *Server) CreateRepo(owner, name string) (*sdk.Repository, error) {
	admin, err := s.Client(s.AdminToken)
	if err != nil {
		return nil, err
	}
	repo, _, err := admin.AdminCreateRepo(owner, sdk.CreateRepoOption{Name: name, AutoInit: true, DefaultBranch: "main", Readme: "Default"})
	if err != nil {
		return nil, fmt.Errorf("create repository %s/%s: %w", owner, name, err)
	}
	return repo, nil
}

// findGitea returns the gitea binary and its module directory (STATIC_ROOT_PATH: locales,
// templates): $GITPEER_GITEA and $GITPEER_GITEA_ROOT as the Makefile sets them, or the only
// build under .cache/gitea of the enclosing checkout and its version in the module cache.
func findGitea() (bin, static string, err error) {
	if bin, err = process.Find("GITPEER_GITEA", filepath.Join("gitea", "gitea-v*")); err != nil {
		return "", "", fmt.Errorf("gitea: %w", err)
	}
	static = os.Getenv("GITPEER_GITEA_ROOT")
	if static == "" {
		version := strings.TrimPrefix(filepath.Base(bin), "gitea-")
		out, err := exec.Command("go", "env", "GOMODCACHE").Output()
		if err != nil {
			return "", "", fmt.Errorf("go env GOMODCACHE: %w", err)
		}
		static = filepath.Join(strings.TrimSpace(string(out)), "code.gitea.io", "gitea@"+version)
	}
	if _, err := os.Stat(filepath.Join(static, "options", "locale")); err != nil {
		return "", "", fmt.Errorf("gitea's module directory %s lacks options/locale: run `make tools` or set GITPEER_GITEA_ROOT", static)
	}
	return bin, static, nil
}

// appINI is Gitea's configuration: installed, sqlite, loopback HTTP, no SSH, no mail, nothing
// fetched from outside.
func appINI(dir, static string, port int) string {
	return fmt.Sprintf(`APP_NAME = gitpeer test forge
RUN_MODE = prod
WORK_PATH = %[1]s

[server]
PROTOCOL = http
HTTP_ADDR = 127.0.0.1
HTTP_PORT = %[3]d
ROOT_URL = http://127.0.0.1:%[3]d/
DISABLE_SSH = true
START_SSH_SERVER = false
OFFLINE_MODE = true
LFS_START_SERVER = false
STATIC_ROOT_PATH = %[2]s
APP_DATA_PATH = %[1]s/data

[database]
DB_TYPE = sqlite3
PATH = %[1]s/data/gitea.db

[repository]
ROOT = %[1]s/repositories

[security]
INSTALL_LOCK = true
SECRET_KEY = %[4]s

[service]
DISABLE_REGISTRATION = true

[mailer]
ENABLED = false

[actions]
ENABLED = false

[cron]
ENABLED = false

[cron.update_checker]
ENABLED = false

[log]
MODE = console
LEVEL = warn
ROOT_PATH = %[1]s/log
`, dir, static, port, randomString())
}

func randomString() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
