package gitsync_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/go-git/go-git/v5/plumbing"
	"golang.org/x/crypto/ssh"

	"github.com/gitpeer/gitpeer/gitsync"
)

// testKey returns a fresh OpenSSH PEM Ed25519 private key.
func testKey(t testing.TB) []byte {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(block)
}

func authorizedKey(t testing.TB, privPEM []byte) []byte {
	t.Helper()
	s, err := ssh.ParsePrivateKey(privPEM)
	if err != nil {
		t.Fatal(err)
	}
	return ssh.MarshalAuthorizedKey(s.PublicKey())
}

// pgpKey returns a fresh OpenPGP key as armored private and public key blocks.
func pgpKey(t testing.TB) (private, public []byte) {
	t.Helper()
	e, err := openpgp.NewEntity("gitpeer", "", "gitpeer@localhost", nil)
	if err != nil {
		t.Fatal(err)
	}
	var priv, pub bytes.Buffer
	w, _ := armor.Encode(&priv, openpgp.PrivateKeyType, nil)
	if err := e.SerializePrivate(w, nil); err != nil {
		t.Fatal(err)
	}
	w.Close()
	w, _ = armor.Encode(&pub, openpgp.PublicKeyType, nil)
	if err := e.Serialize(w); err != nil {
		t.Fatal(err)
	}
	w.Close()
	return priv.Bytes(), pub.Bytes()
}

func TestSignedCommitsAndVerification(t *testing.T) {
	f := newFixture(t, "signed")
	sshPriv := testKey(t)
	pgpPriv, pgpPub := pgpKey(t)
	sshSigner, err := gitsync.NewSSHSigner(sshPriv, nil)
	if err != nil {
		t.Fatal(err)
	}
	pgpSigner, err := gitsync.NewOpenPGPSigner(pgpPriv, nil)
	if err != nil {
		t.Fatal(err)
	}
	sshAgent := f.openSSH(func(c *gitsync.Config) { c.Signer = sshSigner; c.Path = "peers" })
	pgpAgent := f.openHTTP(func(c *gitsync.Config) { c.Signer = pgpSigner; c.Path = "peers" })

	c1 := mustWrite(t, sshAgent, "ssh signed", gitsync.Put("p/c/request.yaml", []byte("1"))).Commit
	c2 := mustWrite(t, pgpAgent, "pgp signed", gitsync.Put("p/c/nonce.yaml", []byte("2"))).Commit

	// git itself accepts the SSH signature.
	work := f.cliClone()
	signers := filepath.Join(t.TempDir(), "allowed_signers")
	if err := os.WriteFile(signers, append([]byte("gitpeer@localhost "), authorizedKey(t, sshPriv)...), 0o600); err != nil {
		t.Fatal(err)
	}
	git(t, work, "-c", "gpg.ssh.allowedSignersFile="+signers, "verify-commit", c1.String())

	// An unsigned commit by someone else, outside the root, is not reported;
	// one inside the root is, with its hash and author.
	git(t, work, "pull", "-q")
	for _, p := range []string{"README.md", "peers/p/c/tenant.yaml"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(work, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(work, p), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		git(t, work, "add", p)
		git(t, work, "commit", "-q", "-m", "unsigned "+p)
	}
	git(t, work, "push", "-q", "origin", "HEAD:main")
	unsigned := git(t, work, "rev-parse", "HEAD")
	head := mustPoll(t, sshAgent)

	trusted, err := gitsync.ParseTrustedKeys(map[string][]byte{"ssh": authorizedKey(t, sshPriv), "pgp": pgpPub})
	if err != nil {
		t.Fatal(err)
	}
	bad, err := sshAgent.VerifyCommitSignatures(plumbing.ZeroHash, head, trusted)
	if err != nil {
		t.Fatal(err)
	}
	if len(bad) != 1 || bad[0].Commit.String() != unsigned || bad[0].Author != "Mallory <mallory@example.com>" || bad[0].Reason != "unsigned" {
		t.Fatalf("verification: %v", bad)
	}

	// Only the SSH key trusted: the OpenPGP-signed commit is reported too.
	onlySSH, _ := gitsync.ParseTrustedKeys(map[string][]byte{"ssh": authorizedKey(t, sshPriv)})
	bad, err = sshAgent.VerifyCommitSignatures(c1, head, onlySSH)
	if err != nil || len(bad) != 2 || bad[1].Commit != c2 {
		t.Fatalf("ssh-only verification: %v %v", bad, err)
	}
	// Another SSH key: the SSH-signed commit is untrusted.
	other, _ := gitsync.ParseTrustedKeys(map[string][]byte{"ssh": authorizedKey(t, testKey(t))})
	bad, err = sshAgent.VerifyCommitSignatures(plumbing.ZeroHash, c1, other)
	if err != nil || len(bad) != 1 || !strings.Contains(bad[0].Reason, "untrusted key") {
		t.Fatalf("untrusted key: %v %v", bad, err)
	}
}
