package verify

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gitpeer/gitpeer/reconciler/protocol"
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
			results, err := resultsOf(Check(commitAll(t, c.root), Options{Now: time.Now()}))
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

// TestDirectoryVerdicts checks the verdict line of a kustomized directory:
// a deleted tenant.yaml revokes whatever the kustomization lists, and a
// directory that does not build while tenant.yaml is there fails closed.
func TestDirectoryVerdicts(t *testing.T) {
	for _, tc := range []struct {
		name, kustomization string
		deleteTenant, huge  bool
		want                string
	}{
		{name: "kustomization lists the deleted tenant.yaml", kustomization: "resources: [tenant.yaml]\n", deleteTenant: true, want: "directory revokes"},
		{name: "build fails", kustomization: "resources: [tenant.yaml, missing.yaml]\n", want: "directory fails closed"},
		{name: "tenant built from a copy", kustomization: "resources: [copy.yaml]\n", want: "directory fails closed"},
		{name: "file over the size cap", kustomization: "resources: [tenant.yaml]\n", huge: true, want: "directory fails closed"},
		{name: "cordoned", kustomization: "resources: [tenant.yaml]\npatches:\n- target: {kind: Tenant}\n  patch: '[{\"op\": \"add\", \"path\": \"/spec/tenantCondition\", \"value\": \"Cordoned\"}]'\n",
			want: "directory issues: tenant.yaml is valid; the Tenant is Cordoned"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCheckout(t)
			c.write(t, issuedDir+"kustomization.yaml", []byte(tc.kustomization))
			tenant, err := os.ReadFile(filepath.Join(c.root, issuedDir+"tenant.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			c.write(t, issuedDir+"copy.yaml", tenant)
			if tc.huge {
				c.write(t, issuedDir+"notes.txt", []byte(strings.Repeat("x", protocol.MaxFileSize+1)))
			}
			if tc.deleteTenant {
				if err := os.Remove(filepath.Join(c.root, issuedDir+"tenant.yaml")); err != nil {
					t.Fatal(err)
				}
			}
			results, err := resultsOf(Check(commitAll(t, c.root), Options{Now: time.Now()}))
			if err != nil {
				t.Fatal(err)
			}
			if got := byPath(t, results)[issuedDir]; !got.Directory || !strings.HasPrefix(got.Reason, tc.want) {
				t.Fatalf("verdict %+v, want %q", got, tc.want)
			}
		})
	}
}
