package gitsync

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"slices"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
)

// TestKnownHostsAlgorithmsPerHost checks the algorithms offered to a server are
// those of its own known_hosts lines, with the SHA-2 RSA variants first.
func TestKnownHostsAlgorithmsPerHost(t *testing.T) {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	rsaPub, err := ssh.NewPublicKey(&rsaKey.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	edPub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	edSSH, err := ssh.NewPublicKey(edPub)
	if err != nil {
		t.Fatal(err)
	}
	lines := "# comment\n[git.example]:2222 " + string(ssh.MarshalAuthorizedKey(rsaPub)) +
		"other.example " + string(ssh.MarshalAuthorizedKey(edSSH))
	_, algos, err := knownHostsCallback([]byte(lines), "ssh://git@git.example:2222/repo.git")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA}
	if !slices.Equal(algos, want) {
		t.Fatalf("algorithms = %v, want %v", algos, want)
	}
}

func TestKnownHostsMalformed(t *testing.T) {
	_, _, err := knownHostsCallback([]byte("git.example ssh-ed25519 not-base64!\n"), "git@git.example:repo.git")
	if err == nil || !strings.Contains(err.Error(), "known_hosts") {
		t.Fatalf("err = %v, want a known_hosts parse error", err)
	}
}
