package gitsync

import (
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// maxCachedTrees bounds the decoded-tree cache; it is emptied when full.
const maxCachedTrees = 1024

// treeCache keeps decoded trees by hash (trees are immutable), so reading many
// files under the same directories decodes each directory once. Not safe for
// concurrent use; Repo serialises access.
type treeCache struct {
	s          storer.EncodedObjectStorer
	maxEntries int
	m          map[plumbing.Hash]*object.Tree
}

func newTreeCache(s storer.EncodedObjectStorer, maxEntries int) *treeCache {
	return &treeCache{s: s, maxEntries: maxEntries, m: map[plumbing.Hash]*object.Tree{}}
}

// get returns the decoded tree h, refused as loadTree refuses it; path names
// it in errors.
func (c *treeCache) get(h plumbing.Hash, path string) (*object.Tree, error) {
	if t, ok := c.m[h]; ok {
		return t, nil
	}
	t, err := loadTree(c.s, h, path, c.maxEntries)
	if err != nil {
		return nil, err
	}
	if len(c.m) >= maxCachedTrees {
		clear(c.m)
	}
	c.m[h] = t
	return t, nil
}
