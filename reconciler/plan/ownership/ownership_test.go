package ownership

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// TestOf: an object is ours only with our owner label; gitpeer's labels
// without an owner make it legacy; anything else, whatever it claims, is
// someone else's.
func TestOf(t *testing.T) {
	for name, tc := range map[string]struct {
		labels map[string]string
		want   Owner
	}{
		"ours":                                {map[string]string{vocabulary.OwnerLabel: "u1", vocabulary.ManagedByLabel: vocabulary.ManagedBy}, Ours},
		"another repository's":                {map[string]string{vocabulary.OwnerLabel: "u2", vocabulary.ManagedByLabel: vocabulary.ManagedBy}, Others},
		"legacy gitpeer":                      {map[string]string{vocabulary.ManagedByLabel: vocabulary.ManagedBy}, Legacy},
		"not gitpeer's (a foreign namespace)": {map[string]string{"liqo.io/tenant-namespace": "true"}, Others},
		"no labels":                           {nil, Others},
		"empty owner is not ours":             {map[string]string{vocabulary.OwnerLabel: "", vocabulary.ManagedByLabel: vocabulary.ManagedBy}, Others},
		"managed by someone else":             {map[string]string{vocabulary.ManagedByLabel: "liqo"}, Others},
		"owner label, not managed":            {map[string]string{vocabulary.OwnerLabel: "u1"}, Ours},
		"owner label is a prefix of ours":     {map[string]string{vocabulary.OwnerLabel: "u", vocabulary.ManagedByLabel: vocabulary.ManagedBy}, Others},
	} {
		t.Run(name, func(t *testing.T) {
			if got := Of(tc.labels, "u1"); got != tc.want {
				t.Errorf("Of(%v) = %v, want %v", tc.labels, got, tc.want)
			}
		})
	}
}

func TestMigrating(t *testing.T) {
	for name, tc := range map[string]struct {
		lastCommit string
		version    int32
		want       bool
	}{
		"new PeeringRepository":           {"", 0, false},
		"processed by an earlier version": {"abc", 0, true},
		"already migrated":                {"abc", gitpeerv1alpha1.CurrentOwnershipVersion, false},
	} {
		t.Run(name, func(t *testing.T) {
			status := gitpeerv1alpha1.PeeringRepositoryStatus{LastProcessedCommit: tc.lastCommit, OwnershipVersion: tc.version}
			if got := Migrating(status); got != tc.want {
				t.Errorf("Migrating = %t, want %t", got, tc.want)
			}
		})
	}
}

// TestAdopt: a legacy namespace is adopted only when an admin asked (or in
// the one-time migration), by the only PeeringRepository that could claim
// it, for a peer it has a directory of.
func TestAdopt(t *testing.T) {
	const byAnnotation, byMigration = "by annotation " + gitpeerv1alpha1.AdoptUnownedAnnotation, "by the one-time migration from an earlier version"
	for name, tc := range map[string]struct {
		claim     Claim
		permitted bool
		want      string
	}{
		"annotated, sole, listed":           {Claim{Annotated: true, Sole: true, Listed: true}, true, byAnnotation},
		"migrating, sole, listed":           {Claim{Migrating: true, Sole: true, Listed: true}, true, byMigration},
		"annotated while migrating":         {Claim{Annotated: true, Migrating: true, Sole: true, Listed: true}, true, byAnnotation},
		"neither annotated nor migrating":   {Claim{Sole: true, Listed: true}, false, ""},
		"another repository could claim it": {Claim{Annotated: true, Listed: true}, true, ""},
		"peer has no directory":             {Claim{Annotated: true, Sole: true}, true, ""},
		"migrating, another could claim it": {Claim{Migrating: true, Listed: true}, true, ""},
		"migrating, peer has no directory":  {Claim{Migrating: true, Sole: true}, true, ""},
	} {
		t.Run(name, func(t *testing.T) {
			if got := tc.claim.Permitted(); got != tc.permitted {
				t.Errorf("Permitted = %t, want %t", got, tc.permitted)
			}
			if got := Adopt(tc.claim); got != tc.want {
				t.Errorf("Adopt = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestSoleClaimant(t *testing.T) {
	repo := func(uid string, provider bool, providers ...authv1beta1.ClusterID) gitpeerv1alpha1.PeeringRepository {
		r := gitpeerv1alpha1.PeeringRepository{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid)}}
		if provider {
			r.Spec.Provider = &gitpeerv1alpha1.ProviderSpec{Enabled: true}
		}
		if providers != nil {
			r.Spec.Consumer = &gitpeerv1alpha1.ConsumerSpec{Providers: providers}
		}
		return r
	}
	self := repo("self", true)
	for name, tc := range map[string]struct {
		repos []gitpeerv1alpha1.PeeringRepository
		want  bool
	}{
		"alone":                            {[]gitpeerv1alpha1.PeeringRepository{self}, true},
		"another provider":                 {[]gitpeerv1alpha1.PeeringRepository{self, repo("b", true)}, false},
		"another consumer of the peer":     {[]gitpeerv1alpha1.PeeringRepository{self, repo("b", false, "peer")}, false},
		"another consumer of another peer": {[]gitpeerv1alpha1.PeeringRepository{self, repo("b", false, "other")}, true},
		"another, neither role":            {[]gitpeerv1alpha1.PeeringRepository{self, repo("b", false)}, true},
	} {
		t.Run(name, func(t *testing.T) {
			if got := SoleClaimant(self.UID, "peer", tc.repos); got != tc.want {
				t.Errorf("SoleClaimant = %t, want %t", got, tc.want)
			}
		})
	}
}

// TestLiqoCreated: only a namespace with Liqo's labels naming the peer, on
// the name Liqo derives from it, and none of gitpeer's labels is Liqo's.
func TestLiqoCreated(t *testing.T) {
	liqos := func(extra map[string]string) map[string]string {
		l := authv1beta1.TenantNamespaceLabels("c1")
		for k, v := range extra {
			l[k] = v
		}
		return l
	}
	for name, tc := range map[string]struct {
		ns     string
		labels map[string]string
		want   bool
	}{
		"as Liqo's tenant namespace manager makes it": {"liqo-tenant-c1", liqos(nil), true},
		"no labels":                                   {"liqo-tenant-c1", nil, false},
		"tenant label only":                           {"liqo-tenant-c1", map[string]string{authv1beta1.TenantNamespaceLabel: "true"}, false},
		"labels naming another peer":                  {"liqo-tenant-c1", authv1beta1.TenantNamespaceLabels("c2"), false},
		"another peer's name":                         {"liqo-tenant-c2", liqos(nil), false},
		"tenant label false":                          {"liqo-tenant-c1", liqos(map[string]string{authv1beta1.TenantNamespaceLabel: "false"}), false},
		"gitpeer's owner label (ours or another's)":   {"liqo-tenant-c1", liqos(map[string]string{vocabulary.OwnerLabel: "u2"}), false},
		"managed by gitpeer (an earlier version's)":   {"liqo-tenant-c1", liqos(map[string]string{vocabulary.ManagedByLabel: vocabulary.ManagedBy}), false},
		"managed by someone else":                     {"liqo-tenant-c1", liqos(map[string]string{vocabulary.ManagedByLabel: "argocd"}), false},
		"other labels beside Liqo's (Pod Security …)": {"liqo-tenant-c1", liqos(map[string]string{"team": "x"}), true},
	} {
		t.Run(name, func(t *testing.T) {
			if got := LiqoCreated(tc.ns, tc.labels, "c1"); got != tc.want {
				t.Errorf("LiqoCreated(%s, %v) = %v, want %v", tc.ns, tc.labels, got, tc.want)
			}
		})
	}
}

// TestLiqoClaim: a namespace Liqo created is adopted in Liqo mode, by the
// sole claimant, for a listed peer, and only when it holds nothing gitpeer
// would have to trust.
func TestLiqoClaim(t *testing.T) {
	ok := LiqoClaim{LiqoMode: true, Listed: true, Sole: true}
	for name, tc := range map[string]struct {
		claim LiqoClaim
		want  string
	}{
		"adopted":          {ok, ""},
		"standalone":       {LiqoClaim{Listed: true, Sole: true}, "does not run in Liqo mode"},
		"peer not listed":  {LiqoClaim{LiqoMode: true, Sole: true}, "no directory"},
		"another claimant": {LiqoClaim{LiqoMode: true, Listed: true}, "another PeeringRepository"},
		"a stray Tenant and a RoleBinding": {LiqoClaim{LiqoMode: true, Listed: true, Sole: true, Found: []string{"Tenant c1", "RoleBinding rb"}},
			"would have to trust: Tenant c1, RoleBinding rb"},
	} {
		t.Run(name, func(t *testing.T) {
			got := tc.claim.Refusal()
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Errorf("Refusal() = %q, want %q", got, tc.want)
			}
		})
	}
}
