package verify

import (
	"bytes"
	gocrypto "crypto"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/examples/repofixture"
	"github.com/gitpeer/gitpeer/gitsync"
	"github.com/gitpeer/gitpeer/reconciler"
	"github.com/gitpeer/gitpeer/reconciler/check"
	"github.com/gitpeer/gitpeer/reconciler/plan/provider"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/test/rawgit"
	"github.com/gitpeer/gitpeer/test/sandbox"
)

// TestAgentAndVerifyAgree builds one repository holding every hostile shape
// of the corpus, each in its own peering directory of provider-a beside two
// valid ones, and asserts that the agent and `gitpeer verify` give every file
// of provider-a the same verdict. First the reading: the agent's loading
// (reconciler.LoadCommit, as provider-a) and verify reject the same files
// (modes, sizes, malformed trees and YAML, duplicate keys, case-variant
// fields, IDs, kustomizations), for the same reasons. Then the trust rules,
// on directories whose files all decode (hostileDirectories: bad signatures,
// a wrong nonce, swapped keys and identities, terms violations, a forbidden
// authzPolicy, CSR and proxyURL, an expired certificate, files no one reads):
// the provider agent's and the consumer agent's own checks (agentVerdicts)
// refuse exactly the tenant.yaml and identity.yaml files verify refuses.
func TestAgentAndVerifyAgree(t *testing.T) {
	c := newCheckout(t)
	request, tenant := c.proposed.Files["request.yaml"], c.proposed.Files["tenant.yaml"]
	c.write(t, "provider-a/consumer-3/README.md", []byte("symlinked tenant\n"))
	if err := os.Symlink("/etc/passwd", filepath.Join(c.root, "provider-a/consumer-3/tenant.yaml")); err != nil {
		t.Fatal(err)
	}
	c.write(t, "provider-a/consumer-4/request.yaml", request)
	if err := os.Chmod(filepath.Join(c.root, "provider-a/consumer-4/request.yaml"), 0o755); err != nil {
		t.Fatal(err)
	}
	c.write(t, "provider-a/consumer-6/tenant.yaml", bytes.Repeat([]byte("#"), 100<<10))
	c.write(t, "provider-a/consumer-7/nonce.yaml", []byte("spec: [unclosed\n"))
	c.write(t, "provider-a/consumer-8/request.yaml", request)
	c.write(t, "provider-a/consumer-9/tenant.yaml", tenant)
	c.write(t, "provider-a/consumer-9/kustomization.yaml", []byte("resources: [https://example.com/tenant.yaml]\n"))
	for _, name := range []string{"a.yaml", "b.yaml", "c.yaml", "d.yaml", "e.yaml"} {
		c.write(t, "provider-a/consumer-10/"+name, bytes.Repeat([]byte("#"), 60<<10))
	}
	c.write(t, "provider-a/consumer-10/kustomization.yaml", []byte("resources: [a.yaml]\n"))
	c.write(t, "provider-a/Consumer_11/request.yaml", request)
	c.write(t, "provider-a/consumer-14/request.yaml", append(bytes.Clone(request), []byte("kind: PeeringRequest\n")...))
	c.write(t, "provider-a/consumer-15/tenant.yaml", bytes.Replace(tenant, []byte("tenantCondition"), []byte("tenantcondition"), 1))
	state := writeHostileDirectories(t, c)
	commitAll(t, c.root)
	for _, args := range [][]string{
		{"update-index", "--add", "--cacheinfo", "160000," + strings.Repeat("ab", 20) + ",provider-a/consumer-5"},
		{"commit", "-q", "-m", "submodule"},
	} {
		if out, err := sandbox.Git(c.root, args...); err != nil {
			t.Fatal(out, err)
		}
	}
	addMalformedTrees(t, c.root, tenant)

	results, err := resultsOf(Check(c.root, Options{}))
	if err != nil {
		t.Fatal(err)
	}
	byVerify := map[string]string{}
	for _, r := range results {
		if !r.Valid && strings.HasPrefix(r.Path, "provider-a/") {
			byVerify[r.Path] = r.Reason
		}
	}
	repo, err := gitsync.OpenLocal(c.root, gitsync.Config{MaxFileSize: protocol.MaxFileSize, Limits: protocol.Limits})
	if err != nil {
		t.Fatal(err)
	}
	defer repo.Close()
	head, err := repo.Resolve("HEAD")
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := reconciler.LoadCommit(repo, head, &gitpeerv1alpha1.PeeringRepository{Spec: gitpeerv1alpha1.PeeringRepositorySpec{
		ClusterID: "provider-a", Provider: &gitpeerv1alpha1.ProviderSpec{Enabled: true},
	}})
	if err != nil {
		t.Fatal(err)
	}
	byAgent := map[string]string{}
	for _, rj := range loaded.Rejected {
		byAgent[rj.Path] = trimPath(rj.Err, rj.Path)
	}
	want := map[string]string{
		"provider-a/consumer-3/tenant.yaml":         "not a regular file (symlink)",
		"provider-a/consumer-4/request.yaml":        "not a regular file (executable)",
		"provider-a/consumer-5":                     "not a regular file (submodule)",
		"provider-a/consumer-6/tenant.yaml":         "file exceeds size limit (102400 bytes, limit 65536)",
		"provider-a/consumer-7/nonce.yaml":          "malformed YAML",
		"provider-a/consumer-8/request.yaml":        "are not the IDs in its path",
		"provider-a/consumer-9/kustomization.yaml":  "remote resources are not allowed",
		"provider-a/consumer-10/kustomization.yaml": "the directory's files exceed 262144 bytes; provider-a/consumer-10/kustomization.yaml is not built",
		"provider-a/Consumer_11/request.yaml":       "is not an RFC 1123 label",
		"provider-a/consumer-14/request.yaml":       `duplicate key "kind"`,
		"provider-a/consumer-15/tenant.yaml":        `unknown field "spec.tenantcondition"`,
		"provider-a/consumer-12":                    `malformed tree (two entries named "tenant.yaml")`,
		"provider-a/consumer-13":                    `malformed tree (entry "nonce.yaml" is not sorted after "tenant.yaml")`,
	}
	for p, reason := range want {
		if !strings.Contains(byAgent[p], reason) {
			t.Errorf("agent on %s: %q, want %q", p, byAgent[p], reason)
		}
	}
	if len(byAgent) != len(want) {
		t.Errorf("agent rejected %d files, want %d: %v", len(byAgent), len(want), byAgent)
	}
	for p, reason := range byAgent {
		if byVerify[p] != reason {
			t.Errorf("%s: agent %q, verify %q", p, reason, byVerify[p])
		}
	}
	for p, reason := range byVerify {
		if _, ok := byAgent[p]; !ok && !inState(state, p) {
			t.Errorf("%s: verify %q, the agent accepted it", p, reason)
		}
	}

	// The trust corpus: every file of those directories decodes; the agents'
	// checks and verify's must refuse the same ones.
	refused := agentVerdicts(t, loaded, state, time.Now())
	for _, h := range hostileDirectories {
		for name, reason := range h.invalid {
			p := path.Join("provider-a", h.consumer, name)
			if !strings.Contains(byVerify[p], reason) || refused[p] == "" {
				t.Errorf("%s: verify %q, agent %q; want both to refuse it (%q)", p, byVerify[p], refused[p], reason)
			}
		}
	}
	for p, reason := range refused {
		if _, ok := byVerify[p]; !ok {
			t.Errorf("%s: the agent refused it (%s), verify accepted it", p, reason)
		}
	}
	for p, reason := range byVerify {
		if _, ok := refused[p]; !ok && inState(state, p) {
			t.Errorf("%s: verify refused it (%s), the agent accepted it", p, reason)
		}
	}
}

// inState reports whether p is a file of a directory of the trust corpus.
func inState(state map[string]agentState, p string) bool {
	_, ok := state[path.Dir(p)]
	return ok
}

// addMalformedTrees commits, on top of HEAD, provider-a/consumer-12 with two
// tenant.yaml entries and provider-a/consumer-13 with unsorted entries, trees
// git itself never writes.
func addMalformedTrees(t *testing.T, dir string, tenant []byte) {
	t.Helper()
	repo, err := gogit.PlainOpen(dir)
	if err != nil {
		t.Fatal(err)
	}
	raw := &rawgit.Must{T: t, Repo: &rawgit.Repo{Storer: repo.Storer}}
	head, err := repo.Head()
	if err != nil {
		t.Fatal(err)
	}
	commit, err := repo.CommitObject(head.Hash())
	if err != nil {
		t.Fatal(err)
	}
	root, err := commit.Tree()
	if err != nil {
		t.Fatal(err)
	}
	provider, err := root.Tree("provider-a")
	if err != nil {
		t.Fatal(err)
	}
	blob, other := raw.Blob(tenant), raw.Blob([]byte("kind: Tenant\n"))
	entries := append(provider.Entries,
		rawgit.Dir("consumer-12", raw.Tree(rawgit.File("tenant.yaml", blob), rawgit.File("tenant.yaml", other))),
		rawgit.Dir("consumer-13", raw.Tree(rawgit.File("tenant.yaml", blob), rawgit.File("nonce.yaml", other))))
	sort.Sort(object.TreeEntrySorter(entries))
	var rootEntries []object.TreeEntry
	for _, e := range root.Entries {
		if e.Name == "provider-a" {
			e.Hash = raw.Tree(entries...)
		}
		rootEntries = append(rootEntries, e)
	}
	h := raw.Commit(raw.Tree(rootEntries...), head.Hash())
	if err := repo.Storer.SetReference(plumbing.NewHashReference(head.Name(), h)); err != nil {
		t.Fatal(err)
	}
}

// hostileDirectory is a peering directory of provider-a whose files all
// decode, crafted to break one trust rule: the agents' checks and verify's
// must refuse the same files. Every case is judged by what the branch shows:
// the rules on an agent's own state (the nonce in the provider's Secret, the
// pinned key, revoked serials, the consumer's anchor) are the agents' alone,
// and verify names them as such.
type hostileDirectory struct {
	consumer string
	stage    repofixture.Stage
	// mutate breaks the directory's files d.Files; key is another key.
	mutate func(t *testing.T, d *repofixture.StagedDirectory, o repofixture.Options, key gocrypto.Signer)
	// invalid maps the files both must refuse to part of verify's reason.
	invalid map[string]string
}

// hostileDirectories is the trust corpus of TestAgentAndVerifyAgree.
var hostileDirectories = []hostileDirectory{
	{consumer: "consumer-20", stage: repofixture.TenantProposed, invalid: map[string]string{"tenant.yaml": "tenant signature:"},
		mutate: func(t *testing.T, d *repofixture.StagedDirectory, _ repofixture.Options, key gocrypto.Signer) {
			tt := newTenant(t, d, d.Key, d.SignedNonce)
			sig, err := crypto.SignNonce(key, d.SignedNonce)
			if err != nil {
				t.Fatal(err)
			}
			tt.Spec.Signature = sig // bad signature: another key signed the nonce
			d.Files["tenant.yaml"] = marshal(t, tt)
		}},
	{consumer: "consumer-21", stage: repofixture.TenantProposed, invalid: map[string]string{"tenant.yaml": "tenant signature:"},
		mutate: func(t *testing.T, d *repofixture.StagedDirectory, _ repofixture.Options, _ gocrypto.Signer) {
			d.Files["tenant.yaml"] = marshal(t, newTenant(t, d, d.Key, crypto.GenerateNonce())) // wrong nonce
		}},
	{consumer: "consumer-22", stage: repofixture.TenantProposed, invalid: map[string]string{"tenant.yaml": "not the key of request.yaml"},
		mutate: func(t *testing.T, d *repofixture.StagedDirectory, _ repofixture.Options, key gocrypto.Signer) {
			d.Files["tenant.yaml"] = marshal(t, newTenant(t, d, key, d.SignedNonce)) // swapped identities: another key than the request's
		}},
	{consumer: "consumer-23", stage: repofixture.TenantProposed, invalid: map[string]string{"identity.yaml": "identity certificate"},
		mutate: func(t *testing.T, d *repofixture.StagedDirectory, o repofixture.Options, key gocrypto.Signer) {
			d.Files["identity.yaml"] = identityFor(t, d, o, key, d.Consumer, o.APIServer) // for another key than the Tenant's
		}},
	{consumer: "consumer-24", stage: repofixture.TenantProposed, invalid: map[string]string{"identity.yaml": `is for "consumer-1"`},
		mutate: func(t *testing.T, d *repofixture.StagedDirectory, o repofixture.Options, _ gocrypto.Signer) {
			d.Files["identity.yaml"] = identityFor(t, d, o, d.Key, "consumer-1", o.APIServer) // another consumer's name
		}},
	{consumer: "consumer-25", stage: repofixture.TenantProposed, invalid: map[string]string{"identity.yaml": "the provider's terms publish"},
		mutate: func(t *testing.T, d *repofixture.StagedDirectory, o repofixture.Options, _ gocrypto.Signer) {
			d.Files["identity.yaml"] = identityFor(t, d, o, d.Key, d.Consumer, "https://attacker.invalid:6443") // terms violation
		}},
	{consumer: "consumer-26", stage: repofixture.TenantProposed, invalid: map[string]string{"tenant.yaml": "the provider's terms give"},
		mutate: func(t *testing.T, d *repofixture.StagedDirectory, _ repofixture.Options, _ gocrypto.Signer) {
			tt := newTenant(t, d, d.Key, d.SignedNonce)
			tt.Namespace = "kube-system" // terms violation
			d.Files["tenant.yaml"] = marshal(t, tt)
		}},
	{consumer: "consumer-27", stage: repofixture.TenantProposed, invalid: map[string]string{"tenant.yaml": "TolerateNoHandshake"},
		mutate: func(t *testing.T, d *repofixture.StagedDirectory, _ repofixture.Options, _ gocrypto.Signer) {
			tt := newTenant(t, d, d.Key, d.SignedNonce)
			tt.Spec.AuthzPolicy = ptr.To(authv1beta1.TolerateNoHandshake)
			d.Files["tenant.yaml"] = marshal(t, tt)
		}},
	{consumer: "consumer-28", stage: repofixture.TenantProposed, invalid: map[string]string{"tenant.yaml": "CSR organization [system:masters]"},
		mutate: func(t *testing.T, d *repofixture.StagedDirectory, _ repofixture.Options, _ gocrypto.Signer) {
			tt := newTenant(t, d, d.Key, d.SignedNonce)
			tt.Spec.CSR = csrWith(t, d.Key, d.Consumer, "system:masters")
			d.Files["tenant.yaml"] = marshal(t, tt)
		}},
	{consumer: "consumer-29", stage: repofixture.TenantProposed, invalid: map[string]string{"tenant.yaml": "is not an absolute"},
		mutate: func(t *testing.T, d *repofixture.StagedDirectory, _ repofixture.Options, _ gocrypto.Signer) {
			tt := newTenant(t, d, d.Key, d.SignedNonce)
			tt.Spec.ProxyURL = ptr.To("file:///etc/passwd")
			d.Files["tenant.yaml"] = marshal(t, tt)
		}},
	{consumer: "consumer-30", stage: repofixture.TenantProposed, invalid: map[string]string{"identity.yaml": "identity certificate"},
		mutate: func(t *testing.T, d *repofixture.StagedDirectory, o repofixture.Options, _ gocrypto.Signer) {
			o.NotBefore, o.TTL = time.Now().Add(-2*time.Hour), time.Hour // expired
			d.Files["identity.yaml"] = identityFor(t, d, o, d.Key, d.Consumer, o.APIServer)
		}},
	{consumer: "consumer-31", stage: repofixture.Issued, invalid: map[string]string{}, // the valid issued control, with files no one reads
		mutate: func(t *testing.T, d *repofixture.StagedDirectory, _ repofixture.Options, key gocrypto.Signer) {
			other := marshal(t, newTenant(t, d, key, d.SignedNonce))
			d.Files["Tenant.yaml"], d.Files["tenant.yml"], d.Files["tenant.yaml.orig"] = other, other, other
		}},
}

// newTenant is the Tenant of d's consumer by key over nonce.
func newTenant(t *testing.T, d *repofixture.StagedDirectory, key gocrypto.Signer, nonce string) *authv1beta1.Tenant {
	t.Helper()
	tt, err := protocol.NewTenant(d.Consumer, key, nonce)
	if err != nil {
		t.Fatal(err)
	}
	return tt
}

// identityFor is an identity.yaml in d issued by o's CA for key and cn, pointing at apiServer.
func identityFor(t *testing.T, d *repofixture.StagedDirectory, o repofixture.Options, key gocrypto.Signer, cn, apiServer string) []byte {
	t.Helper()
	cert, err := o.CA.Issue(csrWith(t, key, cn, authv1beta1.CertificateOrganization), o.NotBefore, o.TTL)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := protocol.IdentityDocument(d.Provider, d.Consumer, authv1beta1.AuthParams{APIServer: apiServer, CA: o.CA.PEM, SignedCRT: cert})
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func marshal(t *testing.T, v any) []byte {
	t.Helper()
	data, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// writeHostileDirectories writes the corpus into c, with terms that publish
// the fixtures' API server, and returns the agents' state of each directory
// it wrote, and of the checkout's own.
func writeHostileDirectories(t *testing.T, c *checkout) map[string]agentState {
	t.Helper()
	now := time.Now()
	o := repofixture.Options{CA: c.ca, APIServer: "https://provider-a.example:6443", NotBefore: now.Add(-time.Minute), TTL: time.Hour}
	doc, err := repofixture.Terms("provider-a")
	if err != nil {
		t.Fatal(err)
	}
	terms, err := protocol.DecodeTerms("provider-a", doc)
	if err != nil {
		t.Fatal(err)
	}
	terms.Spec.APIServer = o.APIServer
	if doc, err = protocol.TermsDocument(terms.Spec); err != nil {
		t.Fatal(err)
	}
	c.write(t, protocol.TermsPath("provider-a"), doc)
	state := map[string]agentState{
		"provider-a/consumer-1": {key: c.issued.Key, applied: c.issued.Files["tenant.yaml"]},
		"provider-a/consumer-2": {key: c.proposed.Key},
	}
	for _, h := range hostileDirectories {
		d, err := repofixture.Build("provider-a", h.consumer, h.stage, o)
		if err != nil {
			t.Fatal(err)
		}
		s := agentState{key: d.Key}
		if h.stage == repofixture.Issued {
			s.applied = d.Files["tenant.yaml"]
		}
		h.mutate(t, d, o, newKey(t))
		if err := d.WriteTo(c.root); err != nil {
			t.Fatal(err)
		}
		state[path.Join(d.Provider, d.Consumer)] = s
	}
	return state
}

// agentState is what the agents hold of a peering directory after a clean
// history: the consumer's own key, and the tenant.yaml whose Tenant the
// provider applied and issued (nil: none). The provider's nonce Secret holds
// the nonce of the nonce.yaml it committed.
type agentState struct {
	key     gocrypto.Signer
	applied []byte
}

// agentVerdicts runs the agents' own checks on the peering directories of
// loaded that state has: the provider's on tenant.yaml (provider.Decide and,
// when it issues, provider.CheckTenant), the consumer's on identity.yaml
// (check.Identity with its own key, as its applyIdentity). It returns
// the files they refuse, with why, by path.
func agentVerdicts(t *testing.T, loaded *protocol.Loaded, state map[string]agentState, now time.Time) map[string]string {
	t.Helper()
	refused := map[string]string{}
	for dir, s := range state {
		pe := loaded.Peerings[dir]
		if pe == nil {
			t.Fatalf("the agent did not load %s", dir)
		}
		if pe.Tenant != nil {
			var applied *authv1beta1.Tenant
			if s.applied != nil {
				applied = &authv1beta1.Tenant{Status: authv1beta1.TenantStatus{AuthParams: &authv1beta1.AuthParams{}}}
				if err := yaml.Unmarshal(s.applied, applied); err != nil {
					t.Fatal(err)
				}
			}
			nonce := ""
			if pe.Nonce != nil {
				nonce = pe.Nonce.Spec.Nonce
			}
			if provider.Decide(pe, provider.Observed{Tenant: applied}) == provider.Issue {
				if v := provider.CheckTenant(pe, provider.TenantCheck{Nonce: nonce, AllowProxyURL: true}); v.Rejected != "" {
					refused[dir+"/tenant.yaml"] = v.Rejected
				}
			}
		}
		if pe.Identity != nil {
			if v := check.Identity(pe, check.Facts{Key: s.key.Public(), Now: now}); v.Err != nil {
				refused[dir+"/identity.yaml"] = v.Err.Error()
			}
		}
	}
	return refused
}
