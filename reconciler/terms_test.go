package reconciler

import (
	"context"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/gitpeer/gitpeer/apis"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/gitsync"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// files is a protocol.Source of files by path.
type files map[string][]byte

func (f files) Size(file gitsync.File) (int64, error)      { return int64(len(f[file.Path])), nil }
func (f files) ReadFile(file gitsync.File) ([]byte, error) { return f[file.Path], nil }

// loadFiles is what a round of obj loads from a branch holding fs.
func loadFiles(obj *gitpeerv1alpha1.PeeringRepository, fs files) *protocol.Loaded {
	listing := &gitsync.Listing{}
	for p := range fs {
		listing.Files = append(listing.Files, gitsync.File{Path: p})
	}
	return protocol.Load(listing, fs, loadScope(obj))
}

// TestTermsReadOnlyWhenTheyMayChange: the provider reads its tenant
// ClusterRole from the API server when its terms were never built, when the
// ClusterRole changed (its resourceVersion in the cache) or the spec did, not
// in every round; a changed ClusterRole still publishes new terms. The terms
// are staged for the round's one commit with their own action.
func TestTermsReadOnlyWhenTheyMayChange(t *testing.T) {
	ctx := context.Background()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: gitpeerv1alpha1.DefaultClusterRoleName},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}}}
	c := fake.NewClientBuilder().WithScheme(apis.NewScheme()).WithObjects(role).Build()
	roleReads := 0
	apiReader := interceptor.NewClient(c, interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		if _, ok := obj.(*rbacv1.ClusterRole); ok {
			roleReads++
		}
		return c.Get(ctx, key, obj, opts...)
	}})
	r := &PeeringRepositoryReconciler{Client: c, APIReader: apiReader, Config: &rest.Config{Host: "https://p.example:6443"}}
	obj := &gitpeerv1alpha1.PeeringRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "gitpeer-system", Name: "peering", Generation: 1},
		Spec: gitpeerv1alpha1.PeeringRepositorySpec{ClusterID: "p", Provider: &gitpeerv1alpha1.ProviderSpec{Enabled: true}}}
	branch := files{}
	// round publishes the terms as a round does and returns what it staged, "committed".
	round := func() []gitStep {
		t.Helper()
		s := sessionOf(r, obj)
		s.loaded = loadFiles(obj, branch)
		s.providerStep().publishTerms(ctx)
		for _, st := range s.branch.staged {
			for _, ch := range st.changes {
				branch[ch.Path] = ch.Content
			}
		}
		return s.branch.staged
	}
	check := func(name string, staged []gitStep, wantStaged bool, wantReads int, wantInTerms string) {
		t.Helper()
		if (len(staged) == 1) != wantStaged || roleReads != wantReads {
			t.Fatalf("%s: %d step(s) staged, ClusterRole read %d time(s); want staged %v, %d read(s)", name, len(staged), roleReads, wantStaged, wantReads)
		}
		if wantStaged && (staged[0].msg.Action != vocabulary.ActionPublishTerms || staged[0].msg.Provider != "p" || staged[0].msg.Consumer != "") {
			t.Fatalf("%s: staged %+v", name, staged[0].msg)
		}
		if !strings.Contains(string(branch[protocol.TermsPath("p")]), wantInTerms) {
			t.Fatalf("%s: terms.yaml lacks %q:\n%s", name, wantInTerms, branch[protocol.TermsPath("p")])
		}
	}
	check("first round", round(), true, 1, "configmaps")
	check("quiet round", round(), false, 1, "configmaps")
	check("another quiet round", round(), false, 1, "configmaps")

	role.Rules[0].Resources = []string{"secrets"}
	if err := c.Update(ctx, role); err != nil {
		t.Fatal(err)
	}
	check("ClusterRole changed", round(), true, 2, "secrets")
	check("quiet round after it", round(), false, 2, "secrets")

	obj.Generation, obj.Spec.Provider.APIServer = 2, "https://elsewhere.example:6443"
	check("spec changed", round(), true, 3, "elsewhere.example")

	delete(branch, protocol.TermsPath("p"))
	check("terms removed from the branch", round(), true, 3, "elsewhere.example")
}

// TestTermsRoleUsers: a ClusterRole's change reconciles the providers whose
// terms quote it, and nothing else.
func TestTermsRoleUsers(t *testing.T) {
	pr := func(name, role string, provider bool) *gitpeerv1alpha1.PeeringRepository {
		return &gitpeerv1alpha1.PeeringRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
			Spec: gitpeerv1alpha1.PeeringRepositorySpec{Provider: &gitpeerv1alpha1.ProviderSpec{Enabled: provider, ClusterRoleName: role}}}
	}
	c := fake.NewClientBuilder().WithScheme(apis.NewScheme()).WithObjects(
		pr("default-role", "", true), pr("other-role", "other", true), pr("consumer-only", "", false)).Build()
	r := &PeeringRepositoryReconciler{Client: c}
	for role, want := range map[string]string{gitpeerv1alpha1.DefaultClusterRoleName: "ns/default-role", "other": "ns/other-role", "unrelated": ""} {
		var got []string
		for _, req := range r.termsRoleUsers(context.Background(), &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: role}}) {
			got = append(got, req.String())
		}
		if strings.Join(got, ",") != want {
			t.Errorf("ClusterRole %s reconciles %v, want %q", role, got, want)
		}
	}
}
