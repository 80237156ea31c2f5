package gitsync

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/hiddeco/sshsig"
	"golang.org/x/crypto/ssh"
)

// TrustedKeys are the keys whose commit signatures are accepted.
type TrustedKeys struct {
	SSH     []ssh.PublicKey
	OpenPGP openpgp.EntityList
}

// ParseTrustedKeys reads trusted keys from a Secret's data, as in Flux's
// spec.verify: each value is either an armored OpenPGP public key block or
// authorized_keys lines of SSH public keys. Key names are free.
func ParseTrustedKeys(data map[string][]byte) (*TrustedKeys, error) {
	k := &TrustedKeys{}
	for name, v := range data {
		if bytes.Contains(v, []byte("-----BEGIN PGP PUBLIC KEY BLOCK-----")) {
			ring, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(v))
			if err != nil {
				return nil, fmt.Errorf("gitsync: trusted key %s: %w", name, err)
			}
			k.OpenPGP = append(k.OpenPGP, ring...)
			continue
		}
		for rest := bytes.TrimSpace(v); len(rest) > 0; rest = bytes.TrimSpace(rest) {
			pub, _, _, next, err := ssh.ParseAuthorizedKey(rest)
			if err != nil {
				return nil, fmt.Errorf("gitsync: trusted key %s: %w", name, err)
			}
			k.SSH = append(k.SSH, pub)
			rest = next
		}
	}
	return k, nil
}

// Unverified is a commit whose signature is missing, invalid or untrusted.
type Unverified struct {
	Commit plumbing.Hash
	// Author is "Name <email>".
	Author string
	Reason string
}

func (u Unverified) String() string {
	return fmt.Sprintf("%s by %s: %s", u.Commit, u.Author, u.Reason)
}

// VerifyCommits checks the signature of every commit reachable from to and
// not from from (zero: the whole history) that changes the configured root,
// and returns those not signed by a trusted key.
func (r *Repo) VerifyCommits(from, to plumbing.Hash, keys *TrustedKeys) ([]Unverified, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := map[plumbing.Hash]bool{}
	if !from.IsZero() {
		fc, err := r.repo.CommitObject(from)
		if err != nil {
			return nil, fmt.Errorf("gitsync: commit %s: %w", from, err)
		}
		if err := object.NewCommitPreorderIter(fc, nil, nil).ForEach(func(c *object.Commit) error {
			seen[c.Hash] = true
			return nil
		}); err != nil {
			return nil, err
		}
	}
	tc, err := r.repo.CommitObject(to)
	if err != nil {
		return nil, fmt.Errorf("gitsync: commit %s: %w", to, err)
	}
	var bad []Unverified
	err = object.NewCommitPreorderIter(tc, seen, nil).ForEach(func(c *object.Commit) error {
		touches, err := r.touchesRoot(c)
		if err != nil || !touches {
			return err
		}
		if reason := keys.check(c); reason != "" {
			bad = append(bad, Unverified{Commit: c.Hash, Author: fmt.Sprintf("%s <%s>", c.Author.Name, c.Author.Email), Reason: reason})
		}
		return nil
	})
	if errors.Is(err, storer.ErrStop) {
		err = nil
	}
	return bad, err
}

// touchesRoot reports whether c changes the configured root relative to its
// first parent (or, for a root commit, has anything under it).
func (r *Repo) touchesRoot(c *object.Commit) (bool, error) {
	mine, err := r.rootHash(c)
	if err != nil {
		return false, err
	}
	if c.NumParents() == 0 {
		return !mine.IsZero(), nil
	}
	parent, err := c.Parent(0)
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		return true, nil // beyond a shallow boundary: verify rather than skip
	}
	if err != nil {
		return false, err
	}
	theirs, err := r.rootHash(parent)
	return mine != theirs, err
}

// rootHash is the tree hash of the configured root in c (zero if absent).
func (r *Repo) rootHash(c *object.Commit) (plumbing.Hash, error) {
	t, err := r.rootTree(c.Hash)
	if err != nil || t == nil {
		return plumbing.ZeroHash, err
	}
	return t.Hash, nil
}

// check returns why c's signature is not acceptable, or "" if it is.
func (k *TrustedKeys) check(c *object.Commit) string {
	sig := c.PGPSignature
	if sig == "" {
		return "unsigned"
	}
	payload := &plumbing.MemoryObject{}
	if err := c.EncodeWithoutSignature(payload); err != nil {
		return err.Error()
	}
	rd, err := payload.Reader()
	if err != nil {
		return err.Error()
	}
	switch {
	case strings.HasPrefix(sig, "-----BEGIN SSH SIGNATURE-----"):
		return k.checkSSH(rd, sig)
	case strings.HasPrefix(sig, "-----BEGIN PGP SIGNATURE-----"):
		if len(k.OpenPGP) == 0 {
			return "signed with OpenPGP, no trusted OpenPGP keys"
		}
		if _, err := openpgp.CheckArmoredDetachedSignature(k.OpenPGP, rd, strings.NewReader(sig), nil); err != nil {
			return "OpenPGP signature not from a trusted key or invalid: " + err.Error()
		}
		return ""
	}
	return "unknown signature format"
}

func (k *TrustedKeys) checkSSH(payload io.Reader, armored string) string {
	sig, err := sshsig.Unarmor([]byte(armored))
	if err != nil {
		return "malformed SSH signature: " + err.Error()
	}
	for _, pub := range k.SSH {
		if bytes.Equal(pub.Marshal(), sig.PublicKey.Marshal()) {
			if err := sshsig.Verify(payload, sig, pub, sig.HashAlgorithm, sshNamespace); err != nil {
				return "invalid SSH signature: " + err.Error()
			}
			return ""
		}
	}
	return "SSH signature by untrusted key " + ssh.FingerprintSHA256(sig.PublicKey)
}
