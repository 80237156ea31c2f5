package gitsync

import (
	"slices"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// TestTreeOrder sorts entries as git does: a directory's name compares as if
// it ended with "/", a file's as it is.
func TestTreeOrder(t *testing.T) {
	file := func(name string) object.TreeEntry { return object.TreeEntry{Name: name, Mode: filemode.Regular} }
	dir := func(name string) object.TreeEntry { return object.TreeEntry{Name: name, Mode: filemode.Dir} }
	want := []object.TreeEntry{file("a"), dir("a-"), file("a.b"), dir("a"), file("a0"), dir("ab"), file("b")}
	got := slices.Clone(want)
	slices.Reverse(got)
	slices.SortFunc(got, treeOrder)
	if !slices.Equal(got, want) {
		t.Fatalf("sorted %v, want %v", got, want)
	}
	if treeOrder(file("a"), dir("a")) == 0 || treeOrder(dir("a"), dir("a")) != 0 {
		t.Fatal("a file and a directory of one name must differ, two directories of one name not")
	}
}
