package gitsync

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/memory"
	"github.com/go-git/go-git/v5/utils/ioutil"
)

// errStaleHead: a compare-and-swap push found the remote ref elsewhere than
// expected and sent nothing (the remote's advertisement told).
var errStaleHead = errors.New("stale head")

// refUpdate is the one ref a push sets.
type refUpdate struct {
	name plumbing.ReferenceName
	// to is the new value; zero deletes the ref.
	to plumbing.Hash
	// cas makes the push conditional: the remote ref must be at from (zero:
	// absent) when the push starts, and the server applies it only if the
	// ref has not moved since.
	cas  bool
	from plumbing.Hash
}

// sendPack sends objects and updates one ref in one receive-pack exchange.
// Unlike go-git's Push, which walks everything reachable from every ref the
// remote advertises to decide what to send (at 10,000 peerings, about a
// second per push even for a one-file write), it sends exactly objects
// (see newObjects), whole (writePack): no delta search, which costs more
// memory than it saves on a write's files (keys, certificates, signatures).
func (r *Repo) sendPack(ctx context.Context, s storer.EncodedObjectStorer, u refUpdate, objects objectSet) (err error) {
	sess, adv, refs, err := r.openReceivePack(ctx)
	if err != nil {
		return err
	}
	defer ioutil.CheckClose(sess, &err)
	current := plumbing.ZeroHash
	if ref, err := refs.Reference(u.name); err == nil {
		current = ref.Hash()
	}
	switch {
	case u.cas && current != u.from:
		return fmt.Errorf("%w: remote ref %s is at %s, not %s", errStaleHead, u.name, current, u.from)
	case current == u.to:
		return nil
	case u.to.IsZero() && !adv.Capabilities.Supports(capability.DeleteRefs):
		return fmt.Errorf("server does not support deleting %s", u.name)
	}
	req := packp.NewReferenceUpdateRequestFromCapabilities(adv.Capabilities)
	req.Commands = []*packp.Command{{Name: u.name, Old: current, New: u.to}}
	if u.to.IsZero() {
		return reportError(sess.ReceivePack(ctx, req))
	}
	pack, w := io.Pipe()
	req.Packfile = pack
	encoded := make(chan error, 1)
	go func() {
		encoded <- w.CloseWithError(writePack(w, s, objects.hashes()))
	}()
	rs, err := sess.ReceivePack(ctx, req)
	_ = pack.CloseWithError(io.ErrClosedPipe) // ends the encoder if the server stopped reading
	if encErr := <-encoded; err == nil && encErr != nil {
		return encErr
	}
	return reportError(rs, err)
}

// openReceivePack opens a receive-pack session with the remote and reads the
// refs it advertises. The caller closes the session.
func (r *Repo) openReceivePack(ctx context.Context) (_ transport.ReceivePackSession, _ *packp.AdvRefs, _ memory.ReferenceStorage, err error) {
	ep, err := transport.NewEndpoint(r.cfg.URL)
	if err != nil {
		return nil, nil, nil, err
	}
	ep.CaBundle = r.cfg.Auth.caBundle()
	c, err := client.NewClient(ep)
	if err != nil {
		return nil, nil, nil, err
	}
	sess, err := c.NewReceivePackSession(ep, r.auth)
	if err != nil {
		return nil, nil, nil, err
	}
	if ep.Protocol == "http" || ep.Protocol == "https" {
		auth, _ := r.auth.(githttp.AuthMethod)
		sess = &streamingSession{ReceivePackSession: sess, client: r.httpClient,
			url: ep.String() + "/" + transport.ReceivePackServiceName, auth: auth}
	}
	defer func() {
		if err != nil {
			_ = sess.Close()
		}
	}()
	adv, err := sess.AdvertisedReferencesContext(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	refs, err := adv.AllReferences()
	if err != nil {
		return nil, nil, nil, err
	}
	return sess, adv, refs, nil
}

// reportError is the error of a receive-pack exchange: its transport error,
// or the first ref the server refused.
func reportError(rs *packp.ReportStatus, err error) error {
	if err != nil || rs == nil {
		return err
	}
	return rs.Error()
}

// objectSet is a set of objects to send, with their types.
type objectSet map[plumbing.Hash]plumbing.ObjectType

func (o objectSet) hashes() []plumbing.Hash {
	hs := make([]plumbing.Hash, 0, len(o))
	for h := range o {
		hs = append(hs, h)
	}
	return hs
}

// newObjects returns commit and the trees and blobs under it that a remote
// holding commit's parents and the commits in haves (zero ones ignored) may
// lack: every object of commit's tree except those found at the same path in
// one of their trees, descending only into the directories that differ. It
// may list objects the remote holds elsewhere (sending them again is
// harmless), never leaves out one it lacks, and costs reading the changed
// directories only, whatever the size of the history.
func newObjects(s storer.EncodedObjectStorer, commit plumbing.Hash, haves ...plumbing.Hash) (objectSet, error) {
	if slices.Contains(haves, commit) {
		return nil, nil
	}
	c, err := object.GetCommit(s, commit)
	if err != nil {
		return nil, err
	}
	var haveTrees []plumbing.Hash
	for _, h := range append(slices.Clone(c.ParentHashes), haves...) {
		if h.IsZero() {
			continue
		}
		hc, err := object.GetCommit(s, h)
		if err != nil {
			return nil, err
		}
		haveTrees = append(haveTrees, hc.TreeHash)
	}
	out := objectSet{commit: plumbing.CommitObject}
	return out, newInTree(s, c.TreeHash, haveTrees, out)
}

// newInTree adds to out the tree h and the objects under it that are not at
// the same path in one of the trees have (the same directory in the trees
// the remote holds). Entries are looked up in the have trees by binary
// search in git's order (treeOrder), without an index: a directory of a
// provider holds one entry per consumer. A tree out of order only makes an
// entry not found, and sent again.
func newInTree(s storer.EncodedObjectStorer, h plumbing.Hash, have []plumbing.Hash, out objectSet) error {
	if _, done := out[h]; done || slices.Contains(have, h) {
		return nil
	}
	out[h] = plumbing.TreeObject
	t, err := object.GetTree(s, h)
	if err != nil {
		return err
	}
	haveTrees := make([]*object.Tree, len(have))
	for i, hh := range have {
		if haveTrees[i], err = object.GetTree(s, hh); err != nil {
			return err
		}
	}
	for _, e := range t.Entries {
		if e.Mode == filemode.Submodule {
			continue
		}
		var held bool
		var subtrees []plumbing.Hash // the same directory in the have trees
		for _, ht := range haveTrees {
			i, found := slices.BinarySearchFunc(ht.Entries, e, treeOrder)
			if !found {
				continue
			}
			held = held || ht.Entries[i].Hash == e.Hash
			if e.Mode == filemode.Dir {
				subtrees = append(subtrees, ht.Entries[i].Hash)
			}
		}
		switch {
		case held:
		case e.Mode == filemode.Dir:
			if err := newInTree(s, e.Hash, subtrees, out); err != nil {
				return err
			}
		default:
			out[e.Hash] = plumbing.BlobObject
		}
	}
	return nil
}

// treeOrder compares tree entries as git orders them: by name, that of a
// directory as if it ended with "/". Entries equal in this order have the
// same name and are both directories or both not.
func treeOrder(a, b object.TreeEntry) int {
	n := min(len(a.Name), len(b.Name))
	if c := strings.Compare(a.Name[:n], b.Name[:n]); c != 0 {
		return c
	}
	return cmp.Compare(orderByte(a, n), orderByte(b, n))
}

// orderByte is the byte at i of e's name in git's order: past its end, "/"
// for a directory, else none (0).
func orderByte(e object.TreeEntry, i int) byte {
	switch {
	case i < len(e.Name):
		return e.Name[i]
	case e.Mode == filemode.Dir:
		return '/'
	}
	return 0
}
