package gitsync_test

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/gitpeer/gitpeer/gitsync"
	"github.com/gitpeer/gitpeer/test/rawgit"
)

// rawRepo builds hostile trees with rawgit and opens them with gitsync.
type rawRepo struct{ *rawgit.Must }

func newRawRepo(t *testing.T) *rawRepo { return &rawRepo{rawgit.New(t)} }

var file, dir = rawgit.File, rawgit.Dir

// commit stores a commit of root and opens the repository with limits.
func (r *rawRepo) commit(root plumbing.Hash, limits gitsync.Limits) (*gitsync.Repo, plumbing.Hash) {
	r.T.Helper()
	h := r.Commit(root)
	repo, err := gitsync.OpenLocal(r.Dir, gitsync.Config{Limits: limits})
	if err != nil {
		r.T.Fatal(err)
	}
	r.T.Cleanup(func() { _ = repo.Close() })
	return repo, h
}

// TestMalformedTrees checks that a directory holding two entries of one name,
// or entries out of Git's order, is refused as a whole by the listing and by
// ReadFile alike (before, List kept the last of two entries and ReadFile
// read the first), while its sibling directories are read.
func TestMalformedTrees(t *testing.T) {
	for _, tc := range []struct {
		name    string
		entries func(r *rawRepo, a, b plumbing.Hash) []object.TreeEntry
		detail  string
	}{
		{name: "duplicate file", detail: `two entries named "tenant.yaml"`, entries: func(r *rawRepo, a, b plumbing.Hash) []object.TreeEntry {
			return []object.TreeEntry{file("tenant.yaml", a), file("tenant.yaml", b)}
		}},
		{name: "unsorted", detail: `entry "nonce.yaml" is not sorted after "tenant.yaml"`, entries: func(r *rawRepo, a, b plumbing.Hash) []object.TreeEntry {
			return []object.TreeEntry{file("tenant.yaml", a), file("nonce.yaml", b)}
		}},
		{name: "file and directory of one name", detail: `two entries named "tenant.yaml"`, entries: func(r *rawRepo, a, b plumbing.Hash) []object.TreeEntry {
			return []object.TreeEntry{file("tenant.yaml", a), file("tenant.yaml.bak", b), dir("tenant.yaml", r.Tree(file("x", b)))}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRawRepo(t)
			a, b := r.Blob([]byte("first")), r.Blob([]byte("second"))
			good := r.Tree(file("tenant.yaml", a))
			bad := r.Tree(tc.entries(r, a, b)...)
			repo, head := r.commit(r.Tree(dir("p", r.Tree(dir("bad", bad), dir("good", good)))), gitsync.Limits{})
			l, err := repo.List(head)
			if err != nil {
				t.Fatal(err)
			}
			if len(l.Files) != 1 || l.Files[0].Path != "p/good/tenant.yaml" {
				t.Fatalf("files: %+v", l.Files)
			}
			want := "p/bad: malformed tree (" + tc.detail + ")"
			if len(l.Skipped) != 1 || l.Skipped[0].Error() != want || !errors.Is(l.Skipped[0], gitsync.ErrMalformedTree) {
				t.Fatalf("skipped: %v, want %q", l.Skipped, want)
			}
			if _, err := repo.ReadFile(head, "p/bad/tenant.yaml"); !errors.Is(err, gitsync.ErrMalformedTree) {
				t.Fatalf("ReadFile: %v", err)
			}
		})
	}
}

// TestLimits checks each cap of gitsync.Limits: a tree with too many
// entries and the directories beyond the per-listing cap are listed as
// skipped (present, unread), and a Round refuses the file that would take it
// past its byte budget before reading it.
func TestLimits(t *testing.T) {
	r := newRawRepo(t)
	blob := r.Blob(bytes.Repeat([]byte("x"), 1000))
	var many []object.TreeEntry
	for i := range 6 {
		many = append(many, file(fmt.Sprintf("f%d.yaml", i), blob))
	}
	var dirs []object.TreeEntry
	for i := range 4 {
		dirs = append(dirs, dir(fmt.Sprintf("d%d", i), r.Tree(file("a.yaml", blob), file("b.yaml", blob))))
	}
	root := r.Tree(append(dirs, dir("many", r.Tree(many...)))...)
	repo, head := r.commit(root, gitsync.Limits{MaxTreeEntries: 5, MaxDirectories: 3, MaxRoundBytes: 2500})
	l, err := repo.List(head)
	if err != nil {
		t.Fatal(err)
	}
	var files, skipped []string
	for _, f := range l.Files {
		files = append(files, f.Path)
	}
	for _, s := range l.Skipped {
		skipped = append(skipped, s.Error())
	}
	if got := strings.Join(files, ","); got != "d0/a.yaml,d0/b.yaml,d1/a.yaml,d1/b.yaml,d2/a.yaml,d2/b.yaml" {
		t.Fatalf("files: %s", got)
	}
	wantSkipped := "d3: read limit exceeded in this round (directory not read: a listing reads at most 3 directories)\n" +
		"many: read limit exceeded in this round (directory not read: a listing reads at most 3 directories)"
	if got := strings.Join(skipped, "\n"); got != wantSkipped {
		t.Fatalf("skipped:\n%s", got)
	}
	if _, err := repo.ReadFile(head, "many/f0.yaml"); !errors.Is(err, gitsync.ErrLimitExceeded) || !strings.Contains(err.Error(), "6 entries, limit 5") {
		t.Fatalf("ReadFile in a tree over the entry cap: %v", err)
	}
	round := repo.NewRound(head)
	for i, want := range []error{nil, nil, gitsync.ErrLimitExceeded} {
		if size, err := round.Size(l.Files[i]); err != nil || size != 1000 {
			t.Fatalf("Size: %d %v", size, err)
		}
		if _, err := round.ReadFile(l.Files[i]); !errors.Is(err, want) && !(want == nil && err == nil) {
			t.Fatalf("read %d: %v, want %v", i, err, want)
		}
	}
}

// TestSignatureCheckAgreesWithReader checks that a commit whose tree the
// reader refuses is selected by the directory-scoped signature check: before,
// the check looked up the first of two entries named "c" (unchanged, so the
// unsigned commit was skipped) while the listing read the second.
func TestSignatureCheckAgreesWithReader(t *testing.T) {
	r := newRawRepo(t)
	signed := r.Tree(file("tenant.yaml", r.Blob([]byte("signed"))))
	forged := r.Tree(file("tenant.yaml", r.Blob([]byte("forged"))))
	first := r.Commit(r.Tree(dir("p", r.Tree(dir("c", signed)))))
	second := r.Commit(r.Tree(dir("p", r.Tree(dir("c", signed), dir("c", forged)))), first)
	repo, err := gitsync.OpenLocal(r.Dir, gitsync.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer repo.Close()
	bad, err := repo.VerifyCommitSignaturesWith(first, second, &gitsync.TrustedKeys{}, gitsync.SignatureOptions{Dirs: []string{"p/c"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(bad) != 1 || bad[0].Commit != second {
		t.Fatalf("unverified: %v, want %s", bad, second)
	}
	if l, err := repo.List(second); err != nil || len(l.Files) != 0 || len(l.Skipped) != 1 || !errors.Is(l.Skipped[0], gitsync.ErrMalformedTree) {
		t.Fatalf("listing: %+v %v", l, err)
	}
}

// TestListWithin checks that a listing restricted to some directories
// neither loads nor counts the others: before, MaxDirectories+3 directories
// under aaa/, which sorts first, left the peering directory in scope unread
// (skipped, over the cap), so anyone who could push anywhere could keep a
// reader from its own directories.
func TestListWithin(t *testing.T) {
	r := newRawRepo(t)
	limits := gitsync.Limits{MaxTreeEntries: 4, MaxDirectories: 4}
	leaf := r.Tree(file("tenant.yaml", r.Blob([]byte("junk"))))
	mid := r.Tree(dir("x0", leaf), dir("x1", leaf))
	junk := r.Tree(dir("y0", mid), dir("y1", mid), dir("y2", mid)) // 1+3+6 directories
	tenant := r.Blob([]byte("mine"))
	missing := plumbing.NewHash(strings.Repeat("ab", 20)) // loading it would fail
	root := r.Tree(dir("aaa", junk), dir("bbb", missing), dir("provider-a", r.Tree(dir("consumer-1", r.Tree(file("tenant.yaml", tenant))))))
	repo, head := r.commit(root, limits)
	var asked []string
	l, err := repo.ListWithin(head, func(d string) bool {
		asked = append(asked, d)
		return strings.HasPrefix(d+"/", "provider-a/")
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Files) != 1 || l.Files[0].Path != "provider-a/consumer-1/tenant.yaml" || len(l.Skipped) != 0 {
		t.Fatalf("files %+v, skipped %v", l.Files, l.Skipped)
	}
	if got := strings.Join(asked, ","); got != "aaa,bbb,provider-a,provider-a/consumer-1" {
		t.Fatalf("directories considered: %s", got)
	}
	if data, err := repo.NewRound(head).ReadFile(l.Files[0]); err != nil || string(data) != "mine" {
		t.Fatalf("read %q: %v", data, err)
	}
	all, err := repo.List(head) // over the cap before it reaches bbb
	if err != nil || !slices.ContainsFunc(all.Skipped, func(fe *gitsync.FileError) bool {
		return fe.Path == "provider-a" && errors.Is(fe, gitsync.ErrLimitExceeded)
	}) {
		t.Fatalf("the unrestricted listing read provider-a: %+v %v", all, err)
	}
}

// TestTopTreeEntries checks that MaxTopTreeEntries caps the trees of the top
// TopLevels levels instead of MaxTreeEntries, in a listing and in ReadFile,
// and that ListUnknown neither reads nor lists a directory the reader knows.
func TestTopTreeEntries(t *testing.T) {
	r := newRawRepo(t)
	blob := r.Blob([]byte("x"))
	leaf := r.Tree(file("a.yaml", blob))
	wide := func(n int, e object.TreeEntry) plumbing.Hash {
		es := []object.TreeEntry{e}
		for i := range n {
			es = append(es, dir(fmt.Sprintf("c%02d", i), leaf))
		}
		return r.Tree(es...)
	}
	tooWideLeaf := r.Tree(file("a.yaml", blob), file("b.yaml", blob), file("c.yaml", blob), file("d.yaml", blob), file("e.yaml", blob))
	root := r.Tree(dir("p", wide(9, dir("b-wide", tooWideLeaf))))
	repo, head := r.commit(root, gitsync.Limits{MaxTreeEntries: 4, MaxTopTreeEntries: 10, TopLevels: 2})
	l, err := repo.List(head)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Files) != 9 || len(l.Skipped) != 1 || l.Skipped[0].Path != "p/b-wide" || !errors.Is(l.Skipped[0], gitsync.ErrLimitExceeded) {
		t.Fatalf("files %d, skipped %v", len(l.Files), l.Skipped)
	}
	if _, err := repo.ReadFile(head, "p/c08/a.yaml"); err != nil {
		t.Fatalf("ReadFile under a wide provider directory: %v", err)
	}
	if _, err := repo.ReadFile(head, "p/b-wide/a.yaml"); !errors.Is(err, gitsync.ErrLimitExceeded) {
		t.Fatalf("ReadFile in a peering directory over MaxTreeEntries: %v", err)
	}
	known, err := repo.ListUnknown(head, nil, func(d string, h plumbing.Hash) bool { return h == leaf && d != "p/c00" })
	if err != nil {
		t.Fatal(err)
	}
	if len(known.Files) != 1 || known.Files[0].Path != "p/c00/a.yaml" {
		t.Fatalf("ListUnknown listed %v", known.Files)
	}
	var kept int
	for _, d := range known.Dirs {
		if d.Known {
			kept++
		}
	}
	if kept != 8 || len(known.Dirs) != 10 { // p, c00 read; c01..c08 known; b-wide refused
		t.Fatalf("dirs %+v", known.Dirs)
	}
	over, head := r.commit(r.Tree(dir("p", wide(10, dir("b", leaf)))), gitsync.Limits{MaxTreeEntries: 4, MaxTopTreeEntries: 10, TopLevels: 2})
	if l, err := over.List(head); err != nil || len(l.Skipped) != 1 || l.Skipped[0].Path != "p" {
		t.Fatalf("a provider directory over MaxTopTreeEntries: %+v %v", l, err)
	}
}

// TestListDir checks that ListDir lists a directory of a listing, by its
// tree hash, as the listing of the whole commit does (its files, its
// subdirectories, the entries it skips, with their object ids), and that a
// refused directory is skipped, not an error.
func TestListDir(t *testing.T) {
	r := newRawRepo(t)
	a, b := r.Blob([]byte("a")), r.Blob([]byte("b"))
	sub := r.Tree(file("x.yaml", b))
	link := object.TreeEntry{Name: "link.yaml", Mode: filemode.Symlink, Hash: a}
	peering := r.Tree(file("a.yaml", a), link, dir("sub", sub))
	wide := r.Tree(file("1", a), file("2", a), file("3", a), file("4", a), file("5", a))
	root := r.Tree(dir("p", r.Tree(dir("c1", peering), dir("c2", wide))))
	repo, head := r.commit(root, gitsync.Limits{MaxTreeEntries: 4, MaxTopTreeEntries: 10, TopLevels: 2})
	all, err := repo.List(head)
	if err != nil {
		t.Fatal(err)
	}
	render := func(l *gitsync.Listing, under string) string {
		var out []string
		for _, f := range l.Files {
			if strings.HasPrefix(f.Path, under) {
				out = append(out, "file "+f.Path+" "+f.Hash.String())
			}
		}
		for _, d := range l.Dirs {
			if strings.HasPrefix(d.Path, under) {
				out = append(out, "dir "+d.Path+" "+d.Hash.String())
			}
		}
		for _, sk := range l.Skipped {
			if strings.HasPrefix(sk.Path, under) {
				out = append(out, "skipped "+sk.Error()+" "+sk.Hash.String())
			}
		}
		return strings.Join(out, "\n")
	}
	for _, tc := range []struct {
		dir  string
		tree plumbing.Hash
		want []string // lines of the rendering
	}{
		{dir: "p/c1", tree: peering, want: []string{"file p/c1/a.yaml " + a.String(), "file p/c1/sub/x.yaml " + b.String(),
			"dir p/c1 " + peering.String(), "dir p/c1/sub " + sub.String(), "skipped p/c1/link.yaml: not a regular file (symlink) " + a.String()}},
		{dir: "p/c2", tree: wide, want: []string{"skipped p/c2: read limit exceeded (5 entries, limit 4) " + wide.String()}},
	} {
		l, err := repo.ListDir(head, tc.dir, tc.tree)
		if err != nil {
			t.Fatal(err)
		}
		got := render(l, tc.dir)
		if want := strings.Join(tc.want, "\n"); got != want {
			t.Errorf("ListDir(%s):\n%s\nwant:\n%s", tc.dir, got, want)
		}
		if whole := render(all, tc.dir); got != whole {
			t.Errorf("ListDir(%s):\n%s\nthe listing of the commit:\n%s", tc.dir, got, whole)
		}
	}
}
