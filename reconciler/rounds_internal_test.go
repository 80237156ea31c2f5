package reconciler

import (
	"maps"
	"slices"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	"github.com/gitpeer/gitpeer/reconciler/compact"
	"github.com/gitpeer/gitpeer/reconciler/plan/incremental"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// TestConsumersOf maps the objects the informers report to the consumers
// whose peerings they may concern, whoever created them.
func TestConsumersOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		obj  client.Object
		want []string
	}{
		{"a tenant namespace, foreign", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "liqo-tenant-c1"}}, []string{"c1"}},
		{"a tenant namespace, labelled", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "liqo-tenant-c1",
			Labels: map[string]string{authv1beta1.RemoteClusterIDLabel: "c1"}}}, []string{"c1", "c1"}},
		{"a tenant namespace as the agent's cache holds it", compact.NewNamespace(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "liqo-tenant-c1"}},
			func(string) bool { return false }), []string{"c1"}},
		{"another namespace", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, nil},
		{"the bare prefix", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "liqo-tenant-"}}, nil},
		{"a Tenant planted in a tenant namespace", &authv1beta1.Tenant{ObjectMeta: metav1.ObjectMeta{Namespace: "liqo-tenant-c2", Name: "x"}}, []string{"c2"}},
		{"a RoleBinding labelled for another consumer", &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "liqo-tenant-c2", Name: "b",
			Labels: map[string]string{authv1beta1.RemoteClusterIDLabel: "c3"}}}, []string{"c2", "c3"}},
		{"a RoleBinding elsewhere", &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "b"}}, nil},
		{"a CSR", &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "csr",
			Labels: map[string]string{vocabulary.ConsumerLabel: "c4"}}}, []string{"c4"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := consumersOf(tc.obj); !slices.Equal(got, tc.want) {
				t.Errorf("consumersOf = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestProviderRounds checks the memory of a provider's rounds: changes noted
// between two rounds go to the next, and a round that did not end leaves the
// next one full.
func TestProviderRounds(t *testing.T) {
	var p providerRounds
	repo := types.NamespacedName{Namespace: "ns", Name: "peering"}
	p.noteChanged("before-any-round")
	if last, changed := p.begin(repo); last != nil || changed != nil {
		t.Fatalf("first begin = %v, %v; want nothing", last, changed)
	}
	p.noteChanged("c1")
	m := &incremental.Memory{Peerings: map[string]incremental.Peering{"c1": {Settled: true}}}
	p.end(repo, m)
	p.noteChanged("c2")
	last, changed := p.begin(repo)
	if last != m || !slices.Equal(slices.Sorted(maps.Keys(changed)), []string{"c1", "c2"}) {
		t.Fatalf("begin = %v, %v; want the memory ended and c1, c2", last, changed)
	}
	// That round fails: it never ends.
	last, changed = p.begin(repo)
	if got := incremental.FullRound(last, incremental.Now{}, 0); got != incremental.PreviousIncomplete || len(changed) != 0 {
		t.Fatalf("after a failed round: FullRound = %q, changed %v", got, changed)
	}
	p.end(repo, m)
	p.incomplete(repo) // its status was not written
	if last, _ = p.begin(repo); incremental.FullRound(last, incremental.Now{}, 0) != incremental.PreviousIncomplete {
		t.Fatal("a round whose status was not written leaves the next one incremental")
	}
	p.forget(repo)
	if last, _ = p.begin(repo); last != nil {
		t.Fatal("a forgotten PeeringRepository is remembered")
	}
}
