package gitsync_test

import (
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitpeer/gitpeer/gitsync"
)

// TestReadFileAcrossCommits: reads alternating between commits each see their
// own commit's content (the repository remembers the tree of the last commit
// read).
func TestReadFileAcrossCommits(t *testing.T) {
	f := newFixture(t, "across")
	r := f.openHTTP()
	first := mustWrite(t, r, "first", gitsync.Put("p/c/nonce.yaml", []byte("one"))).Commit
	second := mustWrite(t, r, "second", gitsync.Put("p/c/nonce.yaml", []byte("two")), gitsync.Put("p/d/nonce.yaml", []byte("d"))).Commit
	for _, read := range []struct {
		commit plumbing.Hash
		path   string
		want   string
	}{
		{first, "p/c/nonce.yaml", "one"},
		{second, "p/c/nonce.yaml", "two"},
		{second, "p/d/nonce.yaml", "d"},
		{first, "p/c/nonce.yaml", "one"},
		{first, "p/d/nonce.yaml", ""},
	} {
		got, err := r.ReadFile(read.commit, read.path)
		if read.want == "" {
			if err == nil {
				t.Errorf("ReadFile(%s, %s) = %q, want not found", read.commit, read.path, got)
			}
			continue
		}
		if err != nil || string(got) != read.want {
			t.Errorf("ReadFile(%s, %s) = %q, %v; want %q", read.commit, read.path, got, err, read.want)
		}
	}
}
