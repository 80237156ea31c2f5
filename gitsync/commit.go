package gitsync

import (
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// newCommit stores a commit of tree on parent (none when zero), authored and
// committed by the agent and signed when a Signer is configured.
func (r *Repo) newCommit(s storer.EncodedObjectStorer, tree, parent plumbing.Hash, message string) (plumbing.Hash, error) {
	sig := object.Signature{Name: r.cfg.AuthorName, Email: r.cfg.AuthorEmail, When: r.cfg.Now()}
	c := &object.Commit{Author: sig, Committer: sig, Message: message, TreeHash: tree}
	if !parent.IsZero() {
		c.ParentHashes = []plumbing.Hash{parent}
	}
	if r.cfg.Signer != nil {
		unsigned := s.NewEncodedObject()
		if err := c.EncodeWithoutSignature(unsigned); err != nil {
			return plumbing.ZeroHash, err
		}
		rd, err := unsigned.Reader()
		if err != nil {
			return plumbing.ZeroHash, err
		}
		signature, err := r.cfg.Signer.Sign(rd)
		if err != nil {
			return plumbing.ZeroHash, fmt.Errorf("gitsync: sign commit: %w", err)
		}
		c.PGPSignature = string(signature)
	}
	obj := s.NewEncodedObject()
	if err := c.Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	return s.SetEncodedObject(obj)
}
