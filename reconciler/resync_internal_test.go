package reconciler

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/examples/repofixture"
	"github.com/gitpeer/gitpeer/gitsync"
	"github.com/gitpeer/gitpeer/reconciler/plan/incremental"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/test/rawgit"
)

// countingReader counts the carried peering directories a round reads again to decode them.
type countingReader struct {
	*gitsync.Repo
	decoded int
}

func (c *countingReader) ListDir(commit plumbing.Hash, dir string, tree plumbing.Hash) (*gitsync.Listing, error) {
	c.decoded++
	return c.Repo.ListDir(commit, dir, tree)
}

// TestResyncComparesHashes runs the planning of a provider's rounds over a
// real clone and Loader: a quiet round for the resync period decodes no
// directory unchanged since its last visit, and still visits one whose tree
// or cluster objects changed; a resync while the branch moved visits all.
func TestResyncComparesHashes(t *testing.T) {
	r := rawgit.New(t)
	ca, err := repofixture.NewCA("provider-a", time.Now().Add(-time.Minute), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	trees := map[string]plumbing.Hash{}
	for _, c := range []string{"c1", "c2", "c3"} {
		p, err := repofixture.Build("provider-a", c, repofixture.Issued, repofixture.Options{CA: ca, APIServer: "https://provider-a.example:6443", NotBefore: time.Now().Add(-time.Minute), TTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		var entries []object.TreeEntry
		for _, name := range slices.Sorted(maps.Keys(p.Files)) {
			entries = append(entries, rawgit.File(name, r.Blob(p.Files[name])))
		}
		trees[c] = r.Tree(entries...)
	}
	commit := func() plumbing.Hash {
		var dirs []object.TreeEntry
		for _, c := range slices.Sorted(maps.Keys(trees)) {
			dirs = append(dirs, rawgit.Dir(c, trees[c]))
		}
		return r.Commit(r.Tree(rawgit.Dir("provider-a", r.Tree(dirs...))))
	}
	head := commit()
	clone, err := gitsync.OpenLocal(r.Dir, gitsync.Config{MaxFileSize: protocol.MaxFileSize, Limits: protocol.Limits})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = clone.Close() })
	reader := &countingReader{Repo: clone}

	t0 := time.Now()
	now := t0
	obj := &gitpeerv1alpha1.PeeringRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "peering", Generation: 1},
		Spec:       gitpeerv1alpha1.PeeringRepositorySpec{ClusterID: "provider-a", Provider: &gitpeerv1alpha1.ProviderSpec{Enabled: true}},
		Status: gitpeerv1alpha1.PeeringRepositoryStatus{ObservedGeneration: 1, OwnershipVersion: gitpeerv1alpha1.CurrentOwnershipVersion,
			Conditions: []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionTrue}}},
	}
	rec := &PeeringRepositoryReconciler{fullResyncPeriod: 10 * time.Minute, Now: func() time.Time { return now }}
	loader := new(protocol.Loader)
	// round loads head, plans, decodes the visited peerings as the round's
	// steps do, and remembers them settled; it returns the plan and how many
	// directories it decoded.
	round := func(quiet bool) (*providerPlan, int) {
		t.Helper()
		loaded, err := loader.Load(reader, head, loadScope(obj))
		if err != nil {
			t.Fatal(err)
		}
		obj.Status.LastProcessedCommit = ""
		if quiet {
			obj.Status.LastProcessedCommit = head.String()
		}
		s := sessionOf(rec, obj)
		s.loader, s.loaded, s.head = loader, loaded, head
		reader.decoded = 0
		p := s.planRound([]string{"c1", "c2", "c3"})
		var results []result
		for _, c := range p.visit {
			if pe := s.peering("provider-a", c); pe.Identity == nil {
				t.Fatalf("%s: no identity decoded: %+v", c, pe)
			}
			results = append(results, result{peer: c, role: gitpeerv1alpha1.ProviderRole, settled: true})
		}
		s.remember(context.Background(), p, results, nil)
		return p, reader.decoded
	}
	expect := func(name string, quiet bool, full string, visit []string, decoded int) {
		t.Helper()
		p, n := round(quiet)
		if p.full != full || !slices.Equal(p.visit, visit) || n != decoded {
			t.Errorf("%s: full %q, visited %v, decoded %d carried directories; want %q, %v, %d", name, p.full, p.visit, n, full, visit, decoded)
		}
	}

	expect("first round", false, incremental.FirstRound, []string{"c1", "c2", "c3"}, 0) // all read by the Load
	now = t0.Add(time.Minute)
	expect("quiet round", true, "", nil, 0)
	now = t0.Add(11 * time.Minute)
	expect("quiet resync, nothing changed", true, incremental.Resync, nil, 0)

	now = t0.Add(22 * time.Minute)
	rec.rounds.noteChanged("c2")
	expect("quiet resync, a cluster object of c2 changed", true, incremental.Resync, []string{"c2"}, 1)

	// c3's directory changes without the Loader seeing the change as such:
	// a new Loader reads every directory again, which is reported changed, so
	// the memory is made to hold another tree for c3 instead.
	now = t0.Add(33 * time.Minute)
	rec.rounds.mu.Lock()
	for _, pr := range rec.rounds.m {
		pe := pr.last.Peerings["c3"]
		pe.Tree = trees["c1"]
		pr.last.Peerings["c3"] = pe
	}
	rec.rounds.mu.Unlock()
	expect("quiet resync, c3's tree differs from its last visit's", true, incremental.Resync, []string{"c3"}, 1)

	now = t0.Add(44 * time.Minute)
	expect("resync while the branch moved", false, incremental.Resync, []string{"c1", "c2", "c3"}, 3)
}
