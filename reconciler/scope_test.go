package reconciler_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"

	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/reconciler"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/test/rawgit"
)

// junk returns a directory of MaxTreeEntries directories each holding a
// tenant.yaml of MaxFileSize bytes: with itself more directories than
// MaxDirectoriesPerRound, more bytes than MaxBytesPerRound.
func (r *hostileRepo) junk() plumbing.Hash {
	leaf := r.Tree(rawgit.File("tenant.yaml", r.Blob(bytes.Repeat([]byte("#"), protocol.MaxFileSize))))
	var es []object.TreeEntry
	for i := range protocol.MaxTreeEntries {
		es = append(es, rawgit.Dir(fmt.Sprintf("consumer-%05d", i), leaf))
	}
	return r.Tree(es...)
}

// TestLoadCapsCountOnlyScope checks that the caps of one reading count only
// the directories the agent reads: another provider's folder (and, for a
// consumer, another consumer's folder under its provider) holding more than
// MaxDirectoriesPerRound directories and MaxBytesPerRound bytes, sorting
// before the agent's own, leaves the agent's peering read and valid. Before,
// the listing counted the whole repository, so the agent's own peering was
// over the cap, reported invalid and skipped every round.
func TestLoadCapsCountOnlyScope(t *testing.T) {
	consumer1 := &gitpeerv1alpha1.PeeringRepository{Spec: gitpeerv1alpha1.PeeringRepositorySpec{
		ClusterID: "consumer-1", Consumer: &gitpeerv1alpha1.ConsumerSpec{Providers: []authv1beta1.ClusterID{"provider-a"}},
	}}
	for _, tc := range []struct {
		name      string
		obj       *gitpeerv1alpha1.PeeringRepository
		consumers func(junk plumbing.Hash) map[string]plumbing.Hash
	}{
		{name: "provider", obj: providerA, consumers: func(plumbing.Hash) map[string]plumbing.Hash { return map[string]plumbing.Hash{} }},
		{name: "consumer", obj: consumer1, consumers: func(junk plumbing.Hash) map[string]plumbing.Hash {
			return map[string]plumbing.Hash{"aaaa": junk}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newHostileRepo(t)
			junk := r.junk()
			repo, head := r.commit(tc.consumers(junk), rawgit.Dir("aaaa", junk))
			loaded, err := reconciler.LoadCommit(repo, head, tc.obj)
			if err != nil {
				t.Fatal(err)
			}
			if len(loaded.Rejected) != 0 {
				t.Errorf("rejected: %v", loaded.Rejected)
			}
			if pe := loaded.Documents("provider-a", "consumer-1"); pe.Tenant == nil || pe.Identity == nil || len(pe.Invalid) != 0 {
				t.Errorf("own peering not read: %+v", pe)
			}
		})
	}
}
