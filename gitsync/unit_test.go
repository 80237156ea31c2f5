package gitsync_test

import (
	"errors"
	"testing"

	"github.com/gitpeer/gitpeer/gitsync"
)

func TestAuthFromSecret(t *testing.T) {
	a, err := gitsync.AuthFromSecret(map[string][]byte{"username": []byte("u"), "password": []byte("p"), "ca.crt": []byte("CA")})
	if err != nil || a.Username != "u" || a.Password != "p" || string(a.CA) != "CA" {
		t.Fatalf("basic: %+v %v", a, err)
	}
	a, err = gitsync.AuthFromSecret(map[string][]byte{"identity": []byte("KEY"), "known_hosts": []byte("KH"), "password": []byte("pass")})
	if err != nil || string(a.Identity) != "KEY" || string(a.KnownHosts) != "KH" || a.Password != "pass" {
		t.Fatalf("ssh: %+v %v", a, err)
	}
	if _, err := gitsync.AuthFromSecret(map[string][]byte{"bearerToken": []byte("t"), "username": []byte("u")}); err == nil {
		t.Fatal("bearer token with basic auth accepted")
	}
}

func TestOpenRefusesSSHWithoutKnownHosts(t *testing.T) {
	_, err := gitsync.Open(gitsync.Config{URL: "ssh://git@127.0.0.1:1/x.git", Dir: t.TempDir(),
		Auth: &gitsync.Auth{Identity: testKey(t)}})
	if err == nil {
		t.Fatal("ssh without known_hosts accepted")
	}
	_, err = gitsync.Open(gitsync.Config{URL: "ssh://git@127.0.0.1:1/x.git", Dir: t.TempDir(),
		Auth: &gitsync.Auth{Identity: testKey(t), InsecureSkipHostKeyCheck: true}})
	if err != nil {
		t.Fatalf("explicit skip refused: %v", err)
	}
}

func TestRootPathValidation(t *testing.T) {
	for _, p := range []string{"../up", "a/../../b", "a//b"} {
		_, err := gitsync.Open(gitsync.Config{URL: "https://example.invalid/r.git", Dir: t.TempDir(), Path: p})
		if !errors.Is(err, gitsync.ErrUnsafePath) {
			t.Errorf("root %q: %v", p, err)
		}
	}
}
