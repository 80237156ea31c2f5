package verdict

import (
	"strings"
	"testing"
)

// TestPullRequest: a pull request may change only its consumer's own request.yaml and
// tenant.yaml, in one peering directory under the peering root, as regular files; every other
// change fails, whatever the head's documents say.
func TestPullRequest(t *testing.T) {
	own := Change{Path: "peers/hub/edge-1/tenant.yaml", Entry: EntryFile}
	for _, tc := range []struct {
		name   string
		change Change
		want   string // "" when the change is allowed
	}{
		{"own tenant.yaml", own, ""},
		{"own request.yaml", Change{Path: "peers/hub/edge-1/request.yaml", Entry: EntryFile}, ""},
		{"own tenant.yaml deleted", Change{Path: "peers/hub/edge-1/tenant.yaml"}, ""},
		{"kustomization.yaml", Change{Path: "peers/hub/edge-1/kustomization.yaml", Entry: EntryFile}, "a kustomization rewrites the documents of hub/edge-1"},
		{"a patch the kustomization reads", Change{Path: "peers/hub/edge-1/patch.yaml", Entry: EntryFile}, "not a document a consumer proposes"},
		{"identity.yaml", Change{Path: "peers/hub/edge-1/identity.yaml", Entry: EntryFile}, "identity.yaml is written by the provider's agent"},
		{"nonce.yaml", Change{Path: "peers/hub/edge-1/nonce.yaml", Entry: EntryFile}, "nonce.yaml is written by the provider's agent"},
		{"terms.yaml", Change{Path: "peers/hub/terms.yaml", Entry: EntryFile}, "terms.yaml is the provider's"},
		{"CI workflow", Change{Path: ".github/workflows/verify.yaml", Entry: EntryFile}, "outside the peering root peers/"},
		{"CODEOWNERS", Change{Path: "CODEOWNERS"}, "outside the peering root peers/"},
		{"tenant.yaml as a symlink", Change{Path: "peers/hub/edge-1/tenant.yaml", Entry: "symlink"}, "tenant.yaml is not a regular file (symlink)"},
		{"tenant.yaml at the wrong depth", Change{Path: "peers/hub/edge-1/x/tenant.yaml", Entry: EntryFile}, "not a document a consumer proposes"},
		{"tenant.yaml with an invalid ID", Change{Path: "peers/hub/Edge_1/tenant.yaml", Entry: EntryFile}, "not a document a consumer proposes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			changes := []Change{tc.change}
			if tc.change != own {
				changes = append(changes, own)
			}
			results := PullRequest("/peers/", changes)
			r := results[0]
			if r.Path != tc.change.Path || r.Valid != (tc.want == "") || !strings.Contains(r.Reason, tc.want) {
				t.Fatalf("%+v, want valid=%v with %q", r, tc.want == "", tc.want)
			}
			if !r.Valid && !strings.Contains(r.Reason, "may change only peers/<providerID>/<consumerID>/request.yaml and tenant.yaml") {
				t.Errorf("the reason does not say what a pull request may change: %s", r.Reason)
			}
		})
	}
	t.Run("another consumer's files", func(t *testing.T) {
		results := PullRequest("", []Change{{Path: "hub/edge-1/tenant.yaml", Entry: EntryFile}, {Path: "hub/edge-2/tenant.yaml"}})
		for _, r := range results {
			if r.Valid || !strings.Contains(r.Reason, "changes 2 peering directories (hub/edge-1, hub/edge-2)") {
				t.Errorf("%+v: want invalid, two directories", r)
			}
		}
	})
	t.Run("own files at the top", func(t *testing.T) {
		results := PullRequest("", []Change{{Path: "hub/edge-1/request.yaml", Entry: EntryFile}, {Path: "hub/edge-1/tenant.yaml", Entry: EntryFile}})
		for _, r := range results {
			if !r.Valid || !strings.Contains(r.Reason, "edge-1's own") {
				t.Errorf("%+v: want valid", r)
			}
		}
	})
}
