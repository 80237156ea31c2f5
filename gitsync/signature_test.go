package gitsync_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitpeer/gitpeer/gitsync"
)

// signingAgent opens an agent clone of f, rooted at peers, that signs its
// commits with a fresh SSH key, and returns it with that key as trusted keys.
func signingAgent(t *testing.T, f *fixture) (*gitsync.Repo, *gitsync.TrustedKeys) {
	t.Helper()
	key := testKey(t)
	signer, err := gitsync.NewSSHSigner(key, nil)
	if err != nil {
		t.Fatal(err)
	}
	trusted, err := gitsync.ParseTrustedKeys(map[string][]byte{"agent.sshpub": authorizedKey(t, key)})
	if err != nil {
		t.Fatal(err)
	}
	return f.openSSH(func(c *gitsync.Config) { c.Signer = signer; c.Path = "peers" }), trusted
}

// TestVerifyCommitSignaturesWith checks which commits each selection verifies: an
// agent signs its commits under peers/p/c, someone else pushes unsigned
// commits under peers/p/other, outside the root, and under peers/p/c.
func TestVerifyCommitSignaturesWith(t *testing.T) {
	f := newFixture(t, "verify-scope")
	agent, trusted := signingAgent(t, f)
	signed := mustWrite(t, agent, "signed", gitsync.Put("p/c/request.yaml", []byte("1"))).Commit

	work := f.cliClone()
	unsigned := map[string]plumbing.Hash{}
	for _, p := range []string{"peers/p/other/tenant.yaml", "README.md", "peers/p/c/tenant.yaml"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(work, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(work, p), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		git(t, work, "add", p)
		git(t, work, "commit", "-q", "-m", "unsigned "+p)
		unsigned[p] = plumbing.NewHash(git(t, work, "rev-parse", "HEAD"))
	}
	git(t, work, "push", "-q", "origin", "HEAD:main")
	head := mustPoll(t, agent)
	if head != unsigned["peers/p/c/tenant.yaml"] {
		t.Fatalf("head %s, want the last unsigned commit", head)
	}

	for _, tc := range []struct {
		name     string
		from, to plumbing.Hash
		opts     gitsync.SignatureOptions
		want     []plumbing.Hash
	}{
		{"root", plumbing.ZeroHash, head, gitsync.SignatureOptions{},
			[]plumbing.Hash{unsigned["peers/p/c/tenant.yaml"], unsigned["peers/p/other/tenant.yaml"]}},
		{"own dir", plumbing.ZeroHash, head, gitsync.SignatureOptions{Dirs: []string{"p/c"}},
			[]plumbing.Hash{unsigned["peers/p/c/tenant.yaml"]}},
		{"own dir, before the unsigned commit there", plumbing.ZeroHash, unsigned["README.md"], gitsync.SignatureOptions{Dirs: []string{"p/c"}}, nil},
		{"other dir", signed, head, gitsync.SignatureOptions{Dirs: []string{"p/c", "p/other"}},
			[]plumbing.Hash{unsigned["peers/p/c/tenant.yaml"], unsigned["peers/p/other/tenant.yaml"]}},
		{"absent dir", plumbing.ZeroHash, head, gitsync.SignatureOptions{Dirs: []string{"q/c"}}, nil},
		{"all", signed, head, gitsync.SignatureOptions{All: true},
			[]plumbing.Hash{unsigned["peers/p/c/tenant.yaml"], unsigned["README.md"], unsigned["peers/p/other/tenant.yaml"]}},
		{"head only", signed, head, gitsync.SignatureOptions{HeadOnly: true}, []plumbing.Hash{head}},
		{"head only, signed", plumbing.ZeroHash, signed, gitsync.SignatureOptions{HeadOnly: true}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad, err := agent.VerifyCommitSignaturesWith(tc.from, tc.to, trusted, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			var got []plumbing.Hash
			for _, u := range bad {
				if u.Reason != "unsigned" || u.Author != "Mallory <mallory@example.com>" {
					t.Errorf("unexpected report %v", u)
				}
				got = append(got, u.Commit)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("got %v, want %v", got, tc.want)
				}
			}
		})
	}

	if _, err := agent.VerifyCommitSignaturesWith(plumbing.ZeroHash, head, trusted, gitsync.SignatureOptions{Dirs: []string{"p/../x"}}); err == nil {
		t.Fatal("an unsafe directory was accepted")
	}
}
