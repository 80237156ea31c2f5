package main

import (
	gocrypto "crypto"
	"errors"
	"fmt"
	"io"
	"path"
	"runtime"
	"time"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"golang.org/x/sync/errgroup"
	"sigs.k8s.io/yaml"

	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// consumer is one simulated consumer cluster: its key, and what it saw of its peering directory.
type consumer struct {
	id  string
	key gocrypto.Signer
	// dir is the tree of its peering directory when last checked.
	dir plumbing.Hash
	// nonce is the provider's nonce from the first valid nonce.yaml seen, the one its Tenant signs.
	nonce string
	// checked is the identity.yaml blob last verified; err why it was refused.
	checked plumbing.Hash
	err     error
	// validAt is when a valid identity.yaml was first seen.
	validAt time.Time
}

// parallel runs f(0) … f(n-1) on every CPU and returns the first error.
func parallel(n int, f func(i int) error) error {
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i := range n {
		g.Go(func() error { return f(i) })
	}
	return g.Wait()
}

// newConsumers generates n consumers with Ed25519 keys, named consumer-00000 … .
func newConsumers(n int) ([]*consumer, error) {
	cs := make([]*consumer, n)
	err := parallel(n, func(i int) error {
		key, err := crypto.GenerateKey(crypto.Ed25519)
		cs[i] = &consumer{id: fmt.Sprintf("consumer-%05d", i), key: key}
		return err
	})
	return cs, err
}

// files renders one document per consumer with doc, in parallel, keyed by its path in the
// repository: <provider>/<consumer>/<kind>.
func files(provider string, cs []*consumer, kind vocabulary.FileKind, doc func(c *consumer) ([]byte, error)) (map[string][]byte, error) {
	data := make([][]byte, len(cs))
	if err := parallel(len(cs), func(i int) (err error) {
		data[i], err = doc(cs[i])
		return err
	}); err != nil {
		return nil, err
	}
	out := make(map[string][]byte, len(cs))
	for i, c := range cs {
		out[protocol.Path{Provider: provider, Consumer: c.id, Kind: kind}.String()] = data[i]
	}
	return out, nil
}

// requestFiles are the consumers' request.yaml files.
func requestFiles(provider string, cs []*consumer) (map[string][]byte, error) {
	return files(provider, cs, vocabulary.RequestFile, func(c *consumer) ([]byte, error) {
		return protocol.RequestDocument(provider, c.id, c.key.Public())
	})
}

// tenantFiles are the consumers' tenant.yaml files, each signing the nonce the consumer saw.
func tenantFiles(provider string, cs []*consumer) (map[string][]byte, error) {
	return files(provider, cs, vocabulary.TenantFile, func(c *consumer) ([]byte, error) {
		t, err := protocol.NewTenant(c.id, c.key, c.nonce)
		if err != nil {
			return nil, err
		}
		return yaml.Marshal(t)
	})
}

// observer reads the provider's directory on main of a bare repository as each consumer would.
type observer struct {
	dir, provider string
	// ca is the provider cluster's CA, which must have signed every certificate.
	ca        []byte
	consumers map[string]*consumer
}

// progress is what one observation counted.
type progress struct {
	nonces, valid, invalid int
}

// observe records, for each consumer, the nonce of its first nonce.yaml and whether its
// identity.yaml is valid: a certificate for its key and CN, signed by the cluster CA.
func (o *observer) observe(now time.Time) (progress, error) {
	var p progress
	repo, err := gogit.PlainOpen(o.dir)
	if err != nil {
		return p, err
	}
	ref, err := repo.Reference(plumbing.NewBranchReferenceName("main"), true)
	if err != nil {
		return p, err
	}
	commit, err := repo.CommitObject(ref.Hash())
	if err != nil {
		return p, err
	}
	root, err := commit.Tree()
	if err != nil {
		return p, err
	}
	dir, err := root.Tree(o.provider)
	if errors.Is(err, object.ErrDirectoryNotFound) {
		return p, nil
	} else if err != nil {
		return p, err
	}
	for _, e := range dir.Entries {
		c := o.consumers[e.Name]
		if c == nil || !c.validAt.IsZero() || e.Hash == c.dir {
			continue
		}
		sub, err := repo.TreeObject(e.Hash)
		if err != nil {
			return p, err
		}
		if err := o.check(repo, sub, c, now); err != nil {
			return p, err
		}
		c.dir = e.Hash
	}
	for _, c := range o.consumers {
		switch {
		case !c.validAt.IsZero():
			p.valid++
		case c.err != nil:
			p.invalid++
		}
		if c.nonce != "" {
			p.nonces++
		}
	}
	return p, nil
}

// check reads the nonce and identity files of consumer c in its directory tree dir.
func (o *observer) check(repo *gogit.Repository, dir *object.Tree, c *consumer, now time.Time) error {
	for _, e := range dir.Entries {
		kind := vocabulary.FileKind(e.Name)
		if kind == vocabulary.NonceFile && c.nonce == "" || kind == vocabulary.IdentityFile && e.Hash != c.checked {
			blob, err := repo.BlobObject(e.Hash)
			if err != nil {
				return err
			}
			data, err := readBlob(blob)
			if err != nil {
				return err
			}
			pe := &protocol.Documents{Provider: o.provider, Consumer: c.id}
			err = pe.Decode(protocol.Path{Provider: o.provider, Consumer: c.id, Kind: kind}, data)
			switch {
			case kind == vocabulary.NonceFile && err == nil:
				c.nonce = pe.Nonce.Spec.Nonce
			case kind == vocabulary.IdentityFile:
				c.checked, c.err = e.Hash, err
				if err == nil {
					c.err = o.verify(pe, c, now)
				}
				if c.err == nil {
					c.validAt = now
				}
			}
		}
	}
	return nil
}

// verify checks an identity as the consumer's agent would (its key, CN=consumer, O=liqo.io,
// chaining to the Identity's CA) and that the cluster CA signed it.
func (o *observer) verify(pe *protocol.Documents, c *consumer, now time.Time) error {
	if _, err := protocol.CheckIdentity(pe.Identity, c.key.Public(), c.id, now); err != nil {
		return err
	}
	if _, err := crypto.VerifyClientCertificate(pe.Identity.Spec.AuthParams.SignedCRT, o.ca, c.key.Public(), now); err != nil {
		return fmt.Errorf("%s: not signed by the cluster CA: %w", path.Join(o.provider, c.id), err)
	}
	return nil
}

// readBlob returns a blob's content.
func readBlob(b *object.Blob) ([]byte, error) {
	r, err := b.Reader()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	data := make([]byte, b.Size)
	_, err = io.ReadFull(r, data)
	return data, err
}
