package gitsync_test

import (
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/gitpeer/gitpeer/gitsync"
)

// TestBearerTokenOverCustomCA puts a TLS proxy with a self-signed certificate
// in front of the server; the proxy accepts only a bearer token.
func TestBearerTokenOverCustomCA(t *testing.T) {
	f := newFixture(t, "bearer")
	upstream, _ := url.Parse(f.repo.HTTPURL)
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: upstream.Scheme, Host: upstream.Host})
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer s3cret" {
			w.Header().Set("WWW-Authenticate", "Bearer")
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		r.SetBasicAuth(f.srv.Username, f.srv.Password)
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	u := srv.URL + upstream.Path

	auth, err := gitsync.AuthFromSecret(map[string][]byte{"bearerToken": []byte("s3cret"), "ca.crt": ca})
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, f.open(u, auth), "over tls", gitsync.Put("a.yaml", []byte("a")))

	if _, err := f.open(u, &gitsync.Auth{BearerToken: "s3cret"}).Poll(ctx(t)); !errors.Is(err, gitsync.ErrCertificateUntrusted) {
		t.Fatalf("untrusted certificate accepted or misreported: %v", err)
	}
	if _, err := f.open(u, &gitsync.Auth{BearerToken: "wrong", CA: ca}).Poll(ctx(t)); !errors.Is(err, gitsync.ErrAuthFailed) {
		t.Fatalf("wrong token: %v", err)
	}
}

// TestPassphraseProtectedSSHKey uses the server's client key re-encrypted with a passphrase.
func TestPassphraseProtectedSSHKey(t *testing.T) {
	f := newFixture(t, "passphrase")
	raw, err := ssh.ParseRawPrivateKey(f.srv.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKeyWithPassphrase(raw, "", []byte("hunter2"))
	if err != nil {
		t.Fatal(err)
	}
	secret := map[string][]byte{"identity": pem.EncodeToMemory(block), "password": []byte("hunter2"), "known_hosts": f.srv.KnownHosts}
	auth, err := gitsync.AuthFromSecret(secret)
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, f.open(f.repo.SSHURL, auth), "with passphrase", gitsync.Put("a.yaml", []byte("a")))

	// The same key signs commits.
	signer, err := gitsync.NewSSHSigner(secret["identity"], secret["password"])
	if err != nil {
		t.Fatal(err)
	}
	sig, err := signer.Sign(strings.NewReader("payload"))
	if err != nil || !strings.HasPrefix(string(sig), "-----BEGIN SSH SIGNATURE-----") {
		t.Fatalf("signature %q: %v", sig, err)
	}
}

// TestShallowCloneStaysIncremental clones only the tip, then follows the branch.
func TestShallowCloneStaysIncremental(t *testing.T) {
	f := newFixture(t, "shallow")
	writer := f.openHTTP()
	for _, v := range []string{"1", "2", "3"} {
		mustWrite(t, writer, "v"+v, gitsync.Put("p/c/nonce.yaml", []byte(v)))
	}
	agent := f.openHTTP(func(c *gitsync.Config) { c.Shallow = true })
	h1 := mustPoll(t, agent)
	h2 := mustWrite(t, writer, "v4", gitsync.Put("p/c/request.yaml", []byte("r"))).Commit
	if mustPoll(t, agent) != h2 {
		t.Fatal("shallow clone did not follow the branch")
	}
	cs, err := agent.Changes(h1, h2)
	if err != nil {
		t.Fatal(err)
	}
	assertChanges(t, cs, "added p/c/request.yaml")
	mustWrite(t, agent, "from shallow", gitsync.Put("p/c/tenant.yaml", []byte("t")))
}
