package verify

import (
	"strings"
	"testing"
	"time"
)

// TestKustomizedDirectory checks that verify builds a directory holding a
// kustomization.yaml as the agent does: the built documents are checked, and
// a refused kustomization fails the check.
func TestKustomizedDirectory(t *testing.T) {
	cordon := "resources: [tenant.yaml]\npatches:\n- target: {kind: Tenant}\n  patch: '[{\"op\": \"replace\", \"path\": \"/spec/tenantCondition\", \"value\": \"Cordoned\"}]'\n"
	for _, tc := range []struct {
		name, kustomization string
		valid               bool
		reason              string
	}{
		{name: "cordon patch", kustomization: cordon, valid: true, reason: "built with kustomize"},
		{name: "remote resource", kustomization: "resources: [https://example.com/tenant.yaml]\n", reason: "remote resources are not allowed"},
		{name: "parent directory", kustomization: "resources: [../consumer-2/tenant.yaml]\n", reason: "leaves the peering directory"},
		{name: "bad built tenant", kustomization: strings.Replace(cordon, "Cordoned", "Evicted", 1),
			reason: `provider-a/consumer-1/tenant.yaml: invalid document: unknown spec.tenantCondition "Evicted" (as built by kustomization.yaml)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCheckout(t)
			c.write(t, issuedDir+"kustomization.yaml", []byte(tc.kustomization))
			results, err := Check(commitAll(t, c.root), Options{Now: time.Now()})
			if err != nil {
				t.Fatal(err)
			}
			m := byPath(t, results)
			k := m[issuedDir+"kustomization.yaml"]
			if k.Valid != tc.valid || !strings.Contains(k.Reason, tc.reason) {
				t.Fatalf("kustomization.yaml: %+v, want valid %v and %q", k, tc.valid, tc.reason)
			}
			if tc.valid && Invalid(results) != 0 {
				t.Fatalf("invalid results: %+v", results)
			}
			if tenant, ok := m[issuedDir+"tenant.yaml"]; tc.valid && (!ok || !tenant.Valid) || !tc.valid && ok {
				t.Fatalf("tenant.yaml: %+v (present %v)", tenant, ok)
			}
			if r := m[proposedDir+"tenant.yaml"]; !r.Valid {
				t.Fatalf("another directory is affected: %+v", r)
			}
		})
	}
}
