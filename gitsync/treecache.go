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
	s      storer.EncodedObjectStorer
	limits Limits
	m      map[plumbing.Hash]*object.Tree
}

func newTreeCache(s storer.EncodedObjectStorer, limits Limits) *treeCache {
	return &treeCache{s: s, limits: limits, m: map[plumbing.Hash]*object.Tree{}}
}

// get returns the decoded tree h, level levels below the root (0 for the
// root and the trees leading to it), refused as loadTree refuses it under the
// entry cap of its level; path names it in errors.
func (c *treeCache) get(h plumbing.Hash, path string, level int) (*object.Tree, error) {
	maxEntries := c.limits.treeEntries(level)
	if t, ok := c.m[h]; ok {
		if maxEntries > 0 && len(t.Entries) > maxEntries {
			return nil, tooManyEntries(path, len(t.Entries), maxEntries)
		}
		return t, nil
	}
	t, err := loadTree(c.s, h, path, maxEntries)
	if err != nil {
		return nil, err
	}
	if len(c.m) >= maxCachedTrees {
		clear(c.m)
	}
	c.m[h] = t
	return t, nil
}
