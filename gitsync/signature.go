package gitsync

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
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

// SignatureOptions selects the commits VerifyCommitSignaturesWith checks.
type SignatureOptions struct {
	// HeadOnly checks the commit to alone, whatever it changes.
	HeadOnly bool
	// All checks every commit reachable from to and not from from, whatever
	// it changes.
	All bool
	// Dirs are directories (or files) relative to the configured root (""
	// is the root itself): a commit is checked when it changes something
	// under one of them relative to any of its parents (a merge that takes a
	// directory from one parent changes it relative to the others). None
	// means the root. Ignored when HeadOnly or All is set.
	Dirs []string
}

// VerifyCommitSignatures checks the signature of every commit reachable from to and
// not from from (zero: the whole history) that changes the configured root,
// and returns those not signed by a trusted key.
func (r *Repo) VerifyCommitSignatures(from, to plumbing.Hash, keys *TrustedKeys) ([]Unverified, error) {
	return r.VerifyCommitSignaturesWith(from, to, keys, SignatureOptions{})
}

// VerifyCommitSignaturesWith checks the signature of the commits reachable from to and
// not from from (zero: the whole history) that opts selects, and returns
// those not signed by a trusted key, newest first.
func (r *Repo) VerifyCommitSignaturesWith(from, to plumbing.Hash, keys *TrustedKeys, opts SignatureOptions) ([]Unverified, error) {
	dirs, err := checkDirs("verify commit signatures", opts.Dirs)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	tc, err := r.repo.CommitObject(to)
	if err != nil {
		return nil, fmt.Errorf("gitsync: commit %s: %w", to, err)
	}
	var bad []Unverified
	check := func(c *object.Commit) {
		if reason := keys.Check(c); reason != "" {
			bad = append(bad, Unverified{Commit: c.Hash, Author: fmt.Sprintf("%s <%s>", c.Author.Name, c.Author.Email), Reason: reason})
		}
	}
	if opts.HeadOnly {
		check(tc)
		return bad, nil
	}
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
	err = object.NewCommitPreorderIter(tc, seen, nil).ForEach(func(c *object.Commit) error {
		if !opts.All {
			touches, err := r.touches(c, dirs)
			if err != nil || !touches {
				return err
			}
		}
		check(c)
		return nil
	})
	if errors.Is(err, storer.ErrStop) {
		err = nil
	}
	return bad, err
}

// checkDirs returns dirs, or the root alone if there are none, after checking
// each is a clean path relative to the configured root; op names the caller in errors.
func checkDirs(op string, dirs []string) ([]string, error) {
	if len(dirs) == 0 {
		return []string{""}, nil
	}
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if _, err := cleanRel(d); err != nil {
			return nil, fmt.Errorf("gitsync: %s: %w", op, err)
		}
	}
	return dirs, nil
}

// touches reports whether c changes something under one of dirs (relative to
// the configured root) relative to any of its parents or, for a root commit,
// has anything there. A merge whose directory is one parent's changes it
// relative to the others: taking an old parent's side is a change too.
func (r *Repo) touches(c *object.Commit, dirs []string) (bool, error) {
	parents := []plumbing.Hash{plumbing.ZeroHash} // a root commit is compared with nothing
	if c.NumParents() > 0 {
		parents = c.ParentHashes
	}
	for _, d := range dirs {
		mine, err := r.entryAt(c.Hash, d)
		if refused(err) {
			return true, nil // a tree the reader refuses: verify rather than skip
		}
		if err != nil {
			return false, err
		}
		for _, p := range parents {
			var theirs object.TreeEntry
			if !p.IsZero() {
				theirs, err = r.entryAt(p, d)
			}
			if refused(err) || errors.Is(err, plumbing.ErrObjectNotFound) {
				return true, nil // refused, or beyond a shallow boundary: verify rather than skip
			}
			if err != nil {
				return false, err
			}
			if !sameEntry(mine, theirs) {
				return true, nil
			}
		}
	}
	return false, nil
}

// entryAt returns the entry commit holds at dir under the configured root
// (for the root itself, a directory entry of its tree), the zero entry if
// absent. Comparing entries (sameEntry) compares their kinds too, so a file
// that became a symlink, or a directory replaced by a file, is a change.
func (r *Repo) entryAt(commit plumbing.Hash, dir string) (object.TreeEntry, error) {
	t, err := r.rootTree(commit)
	if err != nil || t == nil {
		return object.TreeEntry{}, err
	}
	if dir == "" {
		return object.TreeEntry{Mode: filemode.Dir, Hash: t.Hash}, nil
	}
	parts := strings.Split(dir, "/")
	for i, part := range parts {
		e := findEntry(t, part)
		if e == nil {
			return object.TreeEntry{}, nil
		}
		if i == len(parts)-1 {
			return *e, nil
		}
		if t, err = r.subtree(e, strings.Join(parts[:i+1], "/")); err != nil || t == nil {
			return object.TreeEntry{}, err
		}
	}
	return object.TreeEntry{}, nil
}

// refused reports whether err is a tree that loadTree refused: duplicate or
// unsorted entries, or over a cap.
func refused(err error) bool {
	return errors.Is(err, ErrMalformedTree) || errors.Is(err, ErrLimitExceeded)
}

// Check returns why c's signature is not acceptable (missing, invalid, or
// not by one of the keys), or "" if it is.
func (k *TrustedKeys) Check(c *object.Commit) string {
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
