package reconciler_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/gitpeer/gitpeer/examples/repofixture"
	"github.com/gitpeer/gitpeer/gitsync"
	"github.com/gitpeer/gitpeer/reconciler"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/test/rawgit"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// TestLoaderAgreesWithFreshLoad reads a sequence of commits, each adding,
// changing, fixing or removing hostile peering directories of provider-a,
// with one Loader kept across the commits (reconciler.LoadChanged, as the
// agent does) and with a fresh read of each commit (reconciler.LoadCommit,
// as `gitpeer verify` does), and asserts that both give every directory the
// same documents and rejections, and that the Loader decoded only the
// directories whose tree changed (the others are decoded when asked for). The provider's terms.yaml comes and goes
// meanwhile: kept directories carry the terms of the round, not of the round
// that decoded them.
func TestLoaderAgreesWithFreshLoad(t *testing.T) {
	r := newHostileRepo(t)
	ca := newCA(t)
	blob := func(s string) plumbing.Hash { return r.Blob([]byte(s)) }
	valid1 := r.peering("consumer-v1", repofixture.Requested, ca)
	valid2 := r.peering("consumer-v2", repofixture.Issued, ca)
	entries := func(dir plumbing.Hash) []object.TreeEntry {
		t, err := object.GetTree(r.Repo.Storer, dir)
		if err != nil {
			r.T.Fatal(err)
		}
		return t.Entries
	}
	replace := func(dir plumbing.Hash, name string, h plumbing.Hash, mode filemode.FileMode) plumbing.Hash {
		var es []object.TreeEntry
		for _, e := range entries(dir) {
			if e.Name == name {
				e.Hash, e.Mode = h, mode
			}
			es = append(es, e)
		}
		return r.Tree(es...)
	}
	request := func(consumer string) plumbing.Hash {
		for _, e := range entries(r.peering(consumer, repofixture.Requested, ca)) {
			if e.Name == "request.yaml" {
				return e.Hash
			}
		}
		t.Fatal("no request.yaml")
		return plumbing.ZeroHash
	}
	badYAML := r.Tree(rawgit.File("nonce.yaml", blob("spec: [unclosed\n")))
	symlink := r.Tree(object.TreeEntry{Name: "tenant.yaml", Mode: filemode.Symlink, Hash: blob("/etc/passwd")})
	remote := r.Tree(rawgit.File("kustomization.yaml", blob("resources: [https://example.com/tenant.yaml]\n")), rawgit.File("tenant.yaml", blob("kind: Tenant\n")))
	big := r.Tree(rawgit.File("tenant.yaml", r.Blob(bytes.Repeat([]byte("#"), protocol.MaxFileSize+1))))
	exec := r.Tree(object.TreeEntry{Name: "request.yaml", Mode: filemode.Executable, Hash: request("consumer-x")})
	dup := r.Tree(rawgit.File("tenant.yaml", blob("a")), rawgit.File("tenant.yaml", blob("b")))
	steps := []map[string]object.TreeEntry{
		{"consumer-v1": rawgit.Dir("consumer-v1", valid1), "consumer-v2": rawgit.Dir("consumer-v2", valid2),
			"consumer-y": rawgit.Dir("consumer-y", badYAML), "consumer-s": rawgit.Dir("consumer-s", symlink)},
		{"consumer-v1": rawgit.Dir("consumer-v1", valid1),
			"consumer-v2": rawgit.Dir("consumer-v2", replace(valid2, "tenant.yaml", blob("kind: Tenant\nspec: {}\n"), filemode.Regular)),
			"consumer-y":  rawgit.Dir("consumer-y", r.Tree(rawgit.File("request.yaml", request("consumer-y")))),
			"consumer-s":  rawgit.Dir("consumer-s", symlink), "consumer-k": rawgit.Dir("consumer-k", remote),
			"consumer-b": rawgit.Dir("consumer-b", big), "consumer-x": rawgit.Dir("consumer-x", exec)},
		{"consumer-v2": rawgit.Dir("consumer-v2", valid2), "consumer-y": rawgit.Dir("consumer-y", r.Tree(rawgit.File("request.yaml", request("consumer-z")))),
			"consumer-s": {Name: "consumer-s", Mode: filemode.Submodule, Hash: plumbing.NewHash(strings.Repeat("ab", 20))},
			"consumer-k": rawgit.Dir("consumer-k", remote), "consumer-d": rawgit.Dir("consumer-d", dup),
			"consumer-x": rawgit.Dir("consumer-x", replace(exec, "request.yaml", request("consumer-x"), filemode.Regular))},
		{"consumer-v2": rawgit.Dir("consumer-v2", valid2), "consumer-d": rawgit.Dir("consumer-d", valid1),
			"consumer-k": rawgit.Dir("consumer-k", remote), "consumer-b": rawgit.Dir("consumer-b", big)},
	}
	loader := new(protocol.Loader)
	var prev map[string]object.TreeEntry
	for i, step := range steps {
		var es []object.TreeEntry
		for _, name := range slices.Sorted(maps.Keys(step)) {
			es = append(es, step[name])
		}
		if i%2 == 0 { // the provider's terms come and go while some directories stay unchanged
			terms, err := repofixture.Terms("provider-a")
			if err != nil {
				t.Fatal(err)
			}
			es = append(es, rawgit.File("terms.yaml", r.Blob(terms)))
			slices.SortFunc(es, func(a, b object.TreeEntry) int { return strings.Compare(a.Name, b.Name) })
		}
		head := r.Commit(r.Tree(rawgit.Dir("provider-a", r.Tree(es...))))
		repo, err := gitsync.OpenLocal(r.Dir, gitsync.Config{MaxFileSize: protocol.MaxFileSize, Limits: protocol.Limits})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = repo.Close() })
		incremental, err := reconciler.LoadChanged(loader, repo, head, providerA)
		if err != nil {
			t.Fatal(err)
		}
		fresh := mustLoad(t, repo, head)
		decoded := maps.Clone(incremental.Peerings) // before verdicts decodes the directories carried over
		for k := range fresh.Peerings {
			if provider, consumer, _ := strings.Cut(k, "/"); !incremental.Has(provider, consumer) {
				t.Errorf("commit %d: the Loader does not have %s", i, k)
			}
		}
		if incremental.Has("provider-a", "consumer-none") {
			t.Errorf("commit %d: the Loader has a directory absent from the commit", i)
		}
		if got, want := verdicts(t, incremental), verdicts(t, fresh); !maps.Equal(got, want) {
			t.Errorf("commit %d: the Loader and a fresh read disagree:\nLoader: %v\nfresh:  %v", i, got, want)
		}
		if len(incremental.Peerings) != len(decoded) {
			t.Errorf("commit %d: the round keeps %d directories decoded after reading them all, want the %d Load decoded", i, len(incremental.Peerings), len(decoded))
		}
		if len(fresh.Rejected) == 0 {
			t.Errorf("commit %d rejects nothing", i)
		}
		for name, e := range step {
			k := "provider-a/" + name
			was, ok := prev[name]
			carried := ok && was == e && e.Mode == filemode.Dir
			if _, read := decoded[k]; read && carried || !read && !carried && fresh.Peerings[k] != nil {
				t.Errorf("commit %d: %s carried over %v, decoded by Load %v", i, k, carried, read)
			}
		}
		if got, want := incremental.Changed, changedDirs(prev, step); !slices.Equal(got, want) {
			t.Errorf("commit %d: Changed = %v, want %v", i, got, want)
		}
		prev = step
	}
}

// changedDirs is what Loaded.Changed must list going from the peering
// directories of provider-a prev (nil: a new Loader) to next: those added,
// changed or gone.
func changedDirs(prev, next map[string]object.TreeEntry) []string {
	var out []string
	for name, e := range next {
		if was, ok := prev[name]; !ok || was.Hash != e.Hash || was.Mode != e.Mode {
			out = append(out, "provider-a/"+name)
		}
	}
	for name := range prev {
		if _, ok := next[name]; !ok {
			out = append(out, "provider-a/"+name)
		}
	}
	slices.Sort(out)
	return out
}

// verdicts renders what a Loaded says of every peering directory and file,
// decoding every directory a Loader carried over (Loaded.Documents).
func verdicts(t *testing.T, l *protocol.Loaded) map[string]string {
	t.Helper()
	all := maps.Clone(l.Peerings) // Documents does not keep the directories it decodes again
	for _, d := range l.Dirs() {
		all[d.Provider+"/"+d.Consumer] = l.Documents(d.Provider, d.Consumer)
	}
	out := map[string]string{}
	for k, pe := range all {
		invalid := map[vocabulary.FileKind]string{}
		for kind, err := range pe.Invalid {
			invalid[kind] = err.Error()
		}
		var build, terms string
		if pe.BuildFailed != nil {
			build = pe.BuildFailed.Error()
		}
		if pe.TermsErr != nil {
			terms = pe.TermsErr.Error()
		}
		data, err := json.Marshal([]any{pe.Request, pe.Nonce, pe.Tenant, pe.Identity, invalid, build, pe.Terms, terms})
		if err != nil {
			t.Fatal(err)
		}
		out[k] = string(data)
	}
	for _, rj := range l.Rejected {
		out["rejected "+rj.Path] += rj.Err.Error() + "\n"
	}
	return out
}

// TestLoaderRoundCaps checks that the caps of a round count what it reads,
// and what the Loader holds: a directory left unread over
// MaxDirectories is reported and read in the next round (the directories
// kept from the first are not counted again), and one left unread over
// MaxRoundBytes stays unread while the Loader holds the others, as a fresh
// read leaves it, and is read once they are gone (its refusal is not kept).
func TestLoaderRoundCaps(t *testing.T) {
	r := newHostileRepo(t)
	var es []object.TreeEntry
	for i := range 6 {
		es = append(es, rawgit.Dir(fmt.Sprintf("consumer-%d", i), r.Tree(rawgit.File("tenant.yaml", r.Blob(bytes.Repeat([]byte{'#', byte('0' + i)}, 500))))))
	}
	head := r.Commit(r.Tree(rawgit.Dir("provider-a", r.Tree(es...))))
	smaller := r.Commit(r.Tree(rawgit.Dir("provider-a", r.Tree(es[3:]...))))
	scope := protocol.Scope(func(provider, _ string) bool { return provider == "provider-a" })
	unread := func(l *protocol.Loaded) (paths []string) {
		for _, rj := range l.Rejected {
			if errors.Is(rj.Err, gitsync.ErrRoundLimitExceeded) {
				paths = append(paths, rj.Path)
			}
		}
		return paths
	}
	open := func(limits gitsync.Limits) *gitsync.Repo {
		repo, err := gitsync.OpenLocal(r.Dir, gitsync.Config{MaxFileSize: protocol.MaxFileSize, Limits: limits})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = repo.Close() })
		return repo
	}
	for _, tc := range []struct {
		name   string
		limits gitsync.Limits
		unread [][]string // by round: head twice, then smaller
	}{
		{name: "directories", limits: gitsync.Limits{MaxDirectories: 4},
			unread: [][]string{{"provider-a/consumer-3", "provider-a/consumer-4", "provider-a/consumer-5"}, nil, nil}},
		{name: "bytes", limits: gitsync.Limits{MaxRoundBytes: 4500}, unread: [][]string{
			{"provider-a/consumer-4/tenant.yaml", "provider-a/consumer-5/tenant.yaml"},
			{"provider-a/consumer-4/tenant.yaml", "provider-a/consumer-5/tenant.yaml"}, nil}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := open(tc.limits)
			loader := new(protocol.Loader)
			for round, commit := range []plumbing.Hash{head, head, smaller} {
				want := tc.unread[round]
				loaded, err := loader.Load(repo, commit, scope)
				if err != nil {
					t.Fatal(err)
				}
				if got := unread(loaded); !slices.Equal(got, want) {
					t.Errorf("round %d left unread %v, want %v", round+1, got, want)
				}
			}
		})
	}
}

// TestLoaderCarriesUnreadableEntries checks that a peering directory the
// Loader cannot read (a symlink, a submodule, or a directory refused for its
// size in place of <providerID>/<consumerID>) is reported every round, with
// the same rejection as a fresh read, but counts as changed (Loaded.Changed,
// so visited) only in the round it appears or its entry changes.
func TestLoaderCarriesUnreadableEntries(t *testing.T) {
	r := newHostileRepo(t)
	blob := func(s string) plumbing.Hash { return r.Blob([]byte(s)) }
	var wide []object.TreeEntry
	for i := range protocol.MaxTreeEntries + 1 {
		wide = append(wide, rawgit.File(fmt.Sprintf("f%04d", i), blob("x")))
	}
	submodule := plumbing.NewHash(strings.Repeat("ab", 20))
	entries := map[string]object.TreeEntry{
		"consumer-m": {Name: "consumer-m", Mode: filemode.Submodule, Hash: submodule},
		"consumer-s": {Name: "consumer-s", Mode: filemode.Symlink, Hash: blob("/etc/passwd")},
		"consumer-v": rawgit.Dir("consumer-v", r.peering("consumer-v", repofixture.Issued, newCA(t))),
		"consumer-w": rawgit.Dir("consumer-w", r.Tree(wide...)),
	}
	commit := func(change map[string]object.TreeEntry) plumbing.Hash {
		maps.Copy(entries, change)
		var es []object.TreeEntry
		for _, name := range slices.Sorted(maps.Keys(entries)) {
			es = append(es, entries[name])
		}
		return r.Commit(r.Tree(rawgit.Dir("provider-a", r.Tree(es...))))
	}
	repo, err := gitsync.OpenLocal(r.Dir, gitsync.Config{MaxFileSize: protocol.MaxFileSize, Limits: protocol.Limits})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = repo.Close() })
	all := []string{"provider-a/consumer-m", "provider-a/consumer-s", "provider-a/consumer-v", "provider-a/consumer-w"}
	first := commit(nil)
	steps := []struct {
		name    string
		commit  plumbing.Hash
		changed []string
	}{
		{"first round", first, all},
		{"nothing changed", first, nil},
		{"again", first, nil},
		{"symlink retargeted", commit(map[string]object.TreeEntry{"consumer-s": {Name: "consumer-s", Mode: filemode.Symlink, Hash: blob("/etc/shadow")}}), []string{"provider-a/consumer-s"}},
		{"submodule becomes a symlink", commit(map[string]object.TreeEntry{"consumer-m": {Name: "consumer-m", Mode: filemode.Symlink, Hash: blob("/etc/shadow")}}), []string{"provider-a/consumer-m"}},
		{"refused directory grows", commit(map[string]object.TreeEntry{"consumer-w": rawgit.Dir("consumer-w", r.Tree(append(wide, rawgit.File("g", blob("y")))...))}), []string{"provider-a/consumer-w"}},
		{"after the changes", commit(nil), nil},
	}
	loader := new(protocol.Loader)
	for _, step := range steps {
		loaded, err := reconciler.LoadChanged(loader, repo, step.commit, providerA)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(loaded.Changed, step.changed) {
			t.Errorf("%s: Changed = %v, want %v", step.name, loaded.Changed, step.changed)
		}
		if got, want := verdicts(t, loaded), verdicts(t, mustLoad(t, repo, step.commit)); !maps.Equal(got, want) {
			t.Errorf("%s: the Loader and a fresh read disagree:\nLoader: %v\nfresh:  %v", step.name, got, want)
		}
		if len(loaded.Rejected) != 3 {
			t.Errorf("%s: rejected %v, want the three unreadable entries", step.name, loaded.Rejected)
		}
	}
}

// TestLoaderCarriedDirectoryLost checks that a directory the Loader carried
// over whose tree can no longer be read when the round asks for its
// documents (its object deleted from the clone) is present with every kind
// invalid, never absent, while the others are still decoded.
func TestLoaderCarriedDirectoryLost(t *testing.T) {
	r := newHostileRepo(t)
	ca := newCA(t)
	lost := r.peering("consumer-l", repofixture.Issued, ca)
	head := r.Commit(r.Tree(rawgit.Dir("provider-a", r.providerTree(map[string]plumbing.Hash{
		"consumer-l": lost, "consumer-v": r.peering("consumer-v", repofixture.Issued, ca)}))))
	open := func() *gitsync.Repo {
		repo, err := gitsync.OpenLocal(r.Dir, gitsync.Config{MaxFileSize: protocol.MaxFileSize, Limits: protocol.Limits})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = repo.Close() })
		return repo
	}
	loader := new(protocol.Loader)
	if _, err := reconciler.LoadChanged(loader, open(), head, providerA); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(r.Dir, "objects", lost.String()[:2], lost.String()[2:])); err != nil {
		t.Fatal(err)
	}
	loaded, err := reconciler.LoadChanged(loader, open(), head, providerA)
	if err != nil {
		t.Fatal(err)
	}
	if len(loaded.Changed) != 0 || len(loaded.Peerings) != 0 || !loaded.Has("provider-a", "consumer-l") {
		t.Fatalf("changed %v, decoded %d, want both carried over", loaded.Changed, len(loaded.Peerings))
	}
	pe := loaded.Documents("provider-a", "consumer-l")
	for _, k := range vocabulary.FileKinds {
		if err := pe.Invalid[k]; err == nil || !strings.Contains(err.Error(), "provider-a/consumer-l: reading the directory again") {
			t.Errorf("%s: invalid %v, want the read error", k, err)
		}
	}
	if pe.Request != nil || pe.Tenant != nil {
		t.Errorf("documents of an unread directory: %+v", pe)
	}
	if v := loaded.Documents("provider-a", "consumer-v"); v.Identity == nil || len(v.Invalid) != 0 {
		t.Errorf("consumer-v: identity %v, invalid %v", v.Identity, v.Invalid)
	}
}

// TestLoaderWroteReadsAgain: after the reader's own commit changed a peering
// directory, a push may bring it back to the tree the Loader read before the
// commit (a replaced identity.yaml); the next Load must still report it
// changed, or a provider would never repair its identity.yaml. The other
// directories stay carried.
func TestLoaderWroteReadsAgain(t *testing.T) {
	r := newHostileRepo(t)
	ca := newCA(t)
	head := r.Commit(r.Tree(rawgit.Dir("provider-a", r.providerTree(map[string]plumbing.Hash{
		"consumer-w": r.peering("consumer-w", repofixture.Issued, ca), "consumer-v": r.peering("consumer-v", repofixture.Issued, ca)}))))
	repo, err := gitsync.OpenLocal(r.Dir, gitsync.Config{MaxFileSize: protocol.MaxFileSize, Limits: protocol.Limits})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = repo.Close() })
	loader := new(protocol.Loader)
	load := func() *protocol.Loaded {
		t.Helper()
		loaded, err := reconciler.LoadChanged(loader, repo, head, providerA)
		if err != nil {
			t.Fatal(err)
		}
		return loaded
	}
	load()
	if loaded := load(); len(loaded.Changed) != 0 {
		t.Fatalf("the same head again: changed %v, want none", loaded.Changed)
	}
	// The agent's commit wrote identity.yaml; the branch is back at the tree read before it.
	loader.Wrote("provider-a/consumer-w/identity.yaml", "provider-a/terms.yaml")
	loaded := load()
	if want := []string{"provider-a/consumer-w"}; !slices.Equal(loaded.Changed, want) {
		t.Fatalf("changed %v, want %v", loaded.Changed, want)
	}
	if pe := loaded.Documents("provider-a", "consumer-w"); pe == nil || pe.Identity == nil {
		t.Fatalf("documents of the directory read again: %+v", pe)
	}
	if loaded := load(); len(loaded.Changed) != 0 {
		t.Fatalf("after it was read again: changed %v, want none", loaded.Changed)
	}
}
