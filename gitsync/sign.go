package gitsync

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/ProtonMail/go-crypto/openpgp"
	git "github.com/go-git/go-git/v5"
	"github.com/hiddeco/sshsig"
	"golang.org/x/crypto/ssh"
)

// sshNamespace is the sshsig namespace git uses for commit signatures.
const sshNamespace = "git"

// sshSigner signs commits in git's SSH signature format (an armored sshsig
// blob, as `git commit -S` with gpg.format=ssh writes).
type sshSigner struct {
	key ssh.Signer
}

// NewSSHSigner returns a commit signer for a PEM (OpenSSH or PKCS) SSH private
// key, decrypted with passphrase when it is not empty.
func NewSSHSigner(privateKey, passphrase []byte) (git.Signer, error) {
	var key ssh.Signer
	var err error
	if len(passphrase) > 0 {
		key, err = ssh.ParsePrivateKeyWithPassphrase(privateKey, passphrase)
	} else {
		key, err = ssh.ParsePrivateKey(privateKey)
	}
	if err != nil {
		return nil, fmt.Errorf("gitsync: ssh signing key: %w", err)
	}
	return &sshSigner{key: key}, nil
}

// Sign implements git.Signer.
func (s *sshSigner) Sign(message io.Reader) ([]byte, error) {
	sig, err := sshsig.Sign(message, s.key, sshsig.HashSHA512, sshNamespace)
	if err != nil {
		return nil, err
	}
	return sshsig.Armor(sig), nil
}

// openPGPSigner signs commits with an armored detached OpenPGP signature.
type openPGPSigner struct {
	entity *openpgp.Entity
}

// NewOpenPGPSigner returns a commit signer for the first private key in an
// armored OpenPGP key ring, decrypted with passphrase when it is encrypted.
func NewOpenPGPSigner(armoredPrivateKey, passphrase []byte) (git.Signer, error) {
	ring, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(armoredPrivateKey))
	if err != nil {
		return nil, fmt.Errorf("gitsync: openpgp signing key: %w", err)
	}
	for _, e := range ring {
		if e.PrivateKey == nil {
			continue
		}
		if e.PrivateKey.Encrypted {
			if err := e.DecryptPrivateKeys(passphrase); err != nil {
				return nil, fmt.Errorf("gitsync: openpgp signing key: %w", err)
			}
		}
		return &openPGPSigner{entity: e}, nil
	}
	return nil, errors.New("gitsync: openpgp key ring holds no private key")
}

// Sign implements git.Signer.
func (s *openPGPSigner) Sign(message io.Reader) ([]byte, error) {
	var b bytes.Buffer
	if err := openpgp.ArmoredDetachSign(&b, s.entity, message, nil); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
