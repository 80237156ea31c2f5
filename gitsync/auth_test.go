package gitsync_test

import (
	"context"
	"errors"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gitpeer/gitpeer/gitsync"
	"github.com/gitpeer/gitpeer/test/gitserver"
)

func TestAuthFailuresAreTyped(t *testing.T) {
	f := newFixture(t, "auth")
	mustWrite(t, f.openHTTP(), "seed", gitsync.Put("a.yaml", []byte("a")))
	other := gitserver.Start(t)
	otherRepo, err := other.NewRepo("other")
	if err != nil {
		t.Fatal(err)
	}

	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := closed.Addr().String()
	closed.Close()
	// A server that accepts connections and never answers.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { silent.Close() })
	silentAddr := silent.Addr().String()
	deadSSH := strings.Replace(f.repo.SSHURL, sshHostPort(t, f.repo.SSHURL), deadAddr, 1)

	cases := []struct {
		name string
		url  string
		auth *gitsync.Auth
		want error
		msg  string
	}{
		{"http wrong password", f.repo.HTTPURL, &gitsync.Auth{Username: f.srv.Username, Password: "wrong"}, gitsync.ErrAuthFailed, "authentication"},
		{"http no credentials", f.repo.HTTPURL, nil, gitsync.ErrAuthFailed, "authentication"},
		{"ssh unknown client key", f.repo.SSHURL, &gitsync.Auth{Identity: testKey(t), KnownHosts: f.srv.KnownHosts}, gitsync.ErrAuthFailed, "unable to authenticate"},
		{"ssh wrong host key", f.repo.SSHURL, &gitsync.Auth{Identity: f.srv.ClientKey, KnownHosts: replaceHost(other.KnownHosts, f.srv.KnownHosts)}, gitsync.ErrHostKeyMismatch, "does not match known_hosts"},
		{"ssh host not in known_hosts", f.repo.SSHURL, &gitsync.Auth{Identity: f.srv.ClientKey, KnownHosts: other.KnownHosts}, gitsync.ErrHostKeyMismatch, "not in known_hosts"},
		{"http unreachable", "http://" + deadAddr + "/x.git", nil, gitsync.ErrUnreachable, "connection refused"},
		{"ssh unreachable", deadSSH, f.sshAuth(), gitsync.ErrUnreachable, "connection refused"},
		{"http unresponsive", "http://" + silentAddr + "/x.git", nil, gitsync.ErrUnreachable, "deadline exceeded"},
		{"http missing repository", otherRepo.HTTPURL + "-missing", &gitsync.Auth{Username: other.Username, Password: other.Password}, gitsync.ErrRepositoryNotFound, "not found"},
		{"ssh missing repository", strings.TrimSuffix(f.repo.SSHURL, ".git") + "-missing.git", f.sshAuth(), gitsync.ErrRepositoryNotFound, "not found"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := f.open(tc.url, tc.auth)
			_, err := r.Poll(shortCtx(t))
			t.Log(err)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("poll: %v, want %v containing %q", err, tc.want, tc.msg)
			}
			_, err = r.Write(shortCtx(t), message("x"), []gitsync.FileChange{gitsync.Put("b.yaml", []byte("b"))})
			if !errors.Is(err, tc.want) {
				t.Fatalf("write: %v, want %v", err, tc.want)
			}
		})
	}

	// The explicit opt-out accepts any host key.
	r := f.open(f.repo.SSHURL, &gitsync.Auth{Identity: f.srv.ClientKey, InsecureSkipHostKeyCheck: true})
	if _, err := r.Poll(ctx(t)); err != nil {
		t.Fatalf("insecure skip: %v", err)
	}
}

// replaceHost returns the known_hosts line of keyLine's key for hostLine's host.
func replaceHost(keyLine, hostLine []byte) []byte {
	host, _, _ := strings.Cut(string(hostLine), " ")
	_, key, _ := strings.Cut(string(keyLine), " ")
	return []byte(host + " " + key)
}

// sshHostPort returns the host:port of an ssh:// URL.
func sshHostPort(t *testing.T, raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// shortCtx bounds one call to an unresponsive server.
func shortCtx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(ctx(t), 2*time.Second)
	t.Cleanup(cancel)
	return c
}
