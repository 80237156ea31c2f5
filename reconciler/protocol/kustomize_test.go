package protocol

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// kustomizedDir is a peering directory holding a signed tenant.yaml and a
// request.yaml, plus the given kustomization.yaml and extra files.
func kustomizedDir(t *testing.T, nonce, kustomization string, extra map[string]string) map[string][]byte {
	t.Helper()
	k := newKey(t)
	request, err := RequestDocument(provider, consumer, k.Public())
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		string(vocabulary.TenantFile):  marshal(t, signedTenant(t, k, consumer, nonce)),
		string(vocabulary.RequestFile): request,
		vocabulary.KustomizationFile:   []byte(kustomization),
	}
	for name, data := range extra {
		files[name] = []byte(data)
	}
	return files
}

func testNonce(*testing.T) string { return crypto.GenerateNonce() }

func TestKustomizePatchesTenantCondition(t *testing.T) {
	for _, tc := range []struct {
		name, kustomization string
		extra               map[string]string
		want                authv1beta1.TenantCondition
	}{{
		name: "strategic merge patch file",
		kustomization: `resources: [tenant.yaml]
patches:
- path: cordon.yaml
`,
		extra: map[string]string{"cordon.yaml": `apiVersion: authentication.liqo.io/v1beta1
kind: Tenant
metadata:
  name: consumer-1
spec:
  tenantCondition: Cordoned
`},
		want: authv1beta1.TenantConditionCordoned,
	}, {
		name: "JSON 6902 inline patch",
		kustomization: `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- tenant.yaml
patches:
- target:
    kind: Tenant
  patch: |-
    - op: add
      path: /spec/tenantCondition
      value: Drained
`,
		want: authv1beta1.TenantConditionDrained,
	}, {
		name: "patch file in a subdirectory",
		kustomization: `resources: [tenant.yaml]
patches: [{path: patches/cordon.yaml}]
`,
		extra: map[string]string{"patches/cordon.yaml": `apiVersion: authentication.liqo.io/v1beta1
kind: Tenant
metadata: {name: consumer-1}
spec: {tenantCondition: Cordoned}
`},
		want: authv1beta1.TenantConditionCordoned,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			nonce := testNonce(t)
			pe := &Documents{Provider: provider, Consumer: consumer}
			if err := pe.Kustomize(kustomizedDir(t, nonce, tc.kustomization, tc.extra)); err != nil {
				t.Fatal(err)
			}
			if pe.Tenant == nil || pe.Request == nil || len(pe.Invalid) != 0 {
				t.Fatalf("tenant %v, request %v, invalid %v", pe.Tenant != nil, pe.Request != nil, pe.Invalid)
			}
			if got := pe.Tenant.Spec.TenantCondition; got != tc.want {
				t.Fatalf("tenantCondition = %q, want %q", got, tc.want)
			}
			if _, err := CheckTenant(pe.Tenant, nonce, consumer); err != nil {
				t.Fatalf("a patched tenantCondition must leave the signed fields verifiable: %v", err)
			}
		})
	}
}

func TestKustomizePatchOfSignedFieldFailsVerification(t *testing.T) {
	for field, value := range map[string]string{
		"signature": "c2lnbmF0dXJl",
		"publicKey": base64.StdEncoding.EncodeToString(pubPEM(t, newKey(t))),
		"csr":       base64.StdEncoding.EncodeToString(csrWith(t, newKey(t), consumer, authv1beta1.CertificateOrganization)),
	} {
		t.Run(field, func(t *testing.T) {
			nonce := testNonce(t)
			pe := &Documents{Provider: provider, Consumer: consumer}
			k := "resources: [tenant.yaml]\npatches:\n- target: {kind: Tenant}\n  patch: '[{\"op\": \"replace\", \"path\": \"/spec/" + field + "\", \"value\": \"" + value + "\"}]'\n"
			if err := pe.Kustomize(kustomizedDir(t, nonce, k, nil)); err != nil {
				t.Fatal(err)
			}
			if _, err := CheckTenant(pe.Tenant, nonce, consumer); err == nil {
				t.Fatalf("a Tenant whose %s was patched still verifies", field)
			}
		})
	}
}

func TestKustomizeRefusals(t *testing.T) {
	tenantCM := map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"}
	for _, tc := range []struct {
		name, kustomization string
		extra               map[string]string
		wantErr             string
	}{
		{name: "https resource", kustomization: "resources: [tenant.yaml, https://example.com/tenant.yaml]\n", wantErr: "remote resources are not allowed"},
		{name: "remote git base", kustomization: "resources: [tenant.yaml, \"github.com/example/repo//peers?ref=main\"]\n", wantErr: "remote resources are not allowed"},
		{name: "scp-like git base", kustomization: "resources: [git@example.com:org/repo.git]\n", wantErr: "remote resources are not allowed"},
		{name: "remote patch", kustomization: "resources: [tenant.yaml]\npatches:\n- path: http://example.com/patch.yaml\n", wantErr: "remote resources are not allowed"},
		{name: "parent directory", kustomization: "resources: [tenant.yaml, ../]\n", wantErr: "leaves the peering directory"},
		{name: "file of another directory", kustomization: "resources: [../consumer-2/tenant.yaml]\n", wantErr: "leaves the peering directory"},
		{name: "absolute path", kustomization: "resources: [/provider-a/consumer-1/tenant.yaml]\n", wantErr: "leaves the peering directory"},
		{name: "generator", kustomization: "resources: [tenant.yaml]\nconfigMapGenerator:\n- name: x\n  literals: [a=b]\n", wantErr: `kustomization field "configMapGenerator" is not supported`},
		{name: "deprecated field", kustomization: "resources: [tenant.yaml]\npatchesStrategicMerge: [p.yaml]\n", wantErr: `kustomization field "patchesStrategicMerge" is not supported`},
		{name: "plugin", kustomization: "resources: [tenant.yaml]\ntransformers: [plugin.yaml]\n", wantErr: `kustomization field "transformers" is not supported`},
		{name: "unknown kind", kustomization: "resources: [tenant.yaml, cm.yaml]\n", extra: tenantCM, wantErr: "kustomize built a v1 ConfigMap, which is not a gitpeer document"},
		{name: "two objects of one kind", kustomization: "resources: [tenant.yaml, other.yaml]\n",
			extra: map[string]string{"other.yaml": "apiVersion: authentication.liqo.io/v1beta1\nkind: Tenant\nmetadata: {name: other}\nspec: {clusterID: other}\n"}, wantErr: "kustomize built more than one Tenant"},
		{name: "missing resource", kustomization: "resources: [tenant.yaml, missing.yaml]\n", wantErr: "kustomize build failed"},
		{name: "patch of nothing", kustomization: "resources: [tenant.yaml]\npatches:\n- path: p.yaml\n", extra: map[string]string{"p.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: x}\n"}, wantErr: "kustomize build failed"},
		{name: "malformed kustomization", kustomization: "resources: [tenant.yaml\n", wantErr: "malformed"},
		{name: "anchors", kustomization: "resources: &r [tenant.yaml]\ncomponents: *r\n", wantErr: "anchors and aliases are not allowed"},
		{name: "anchors in an inline patch", kustomization: "resources: [tenant.yaml]\npatches:\n- patch: |-\n    apiVersion: authentication.liqo.io/v1beta1\n    kind: Tenant\n    metadata: {name: consumer-1, labels: &l {a: b}}\n    spec: {x: *l}\n",
			wantErr: "in an inline patch: invalid document: YAML anchors and aliases are not allowed"},
		{name: "case-variant keys in an inline patch", kustomization: "resources: [tenant.yaml]\npatches:\n- patch: '{kind: Tenant, metadata: {name: consumer-1}, spec: {tenantCondition: Drained, tenantcondition: Active}}'\n",
			wantErr: "in an inline patch: invalid document: keys \"tenantCondition\" and \"tenantcondition\" differ only in case"},
		{name: "too large", kustomization: "resources: [tenant.yaml]\n", extra: map[string]string{"big.txt": strings.Repeat("x", MaxBuildSize)}, wantErr: "the directory's files exceed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pe := &Documents{Provider: provider, Consumer: consumer}
			err := pe.Kustomize(kustomizedDir(t, testNonce(t), tc.kustomization, tc.extra))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
			}
			if !strings.HasPrefix(err.Error(), "provider-a/consumer-1/kustomization.yaml: ") {
				t.Fatalf("err = %v, want it to name the kustomization", err)
			}
			// No file may read as absent: every document whose file is present
			// is invalid; the others stay absent. The provider fails closed.
			for _, k := range vocabulary.FileKinds {
				if present := k == vocabulary.TenantFile || k == vocabulary.RequestFile; (pe.Invalid[k] != nil) != present {
					t.Errorf("%s marked invalid: %v, want %v", k, pe.Invalid[k] != nil, present)
				}
			}
			if pe.Tenant != nil || pe.Request != nil {
				t.Fatal("documents decoded from a refused kustomization")
			}
			if pe.BuildFailed == nil || pe.BuildFailed.Error() != err.Error() {
				t.Fatalf("BuildFailed = %v, want %v", pe.BuildFailed, err)
			}
		})
	}
}

func TestKustomizeBuiltObjectsAreCheckedStrictly(t *testing.T) {
	pe := &Documents{Provider: provider, Consumer: consumer}
	k := "resources: [tenant.yaml]\npatches:\n- target: {kind: Tenant}\n  patch: '[{\"op\": \"add\", \"path\": \"/spec/tenantCondition\", \"value\": \"Evicted\"}]'\n"
	err := pe.Kustomize(kustomizedDir(t, testNonce(t), k, nil))
	if err == nil || !strings.Contains(err.Error(), `provider-a/consumer-1/tenant.yaml: invalid document: unknown spec.tenantCondition "Evicted" (as built by kustomization.yaml)`) {
		t.Fatalf("err = %v", err)
	}
	if pe.Tenant != nil || pe.Invalid[vocabulary.TenantFile] == nil || pe.Request == nil {
		t.Fatalf("tenant %v, invalid %v, request %v", pe.Tenant, pe.Invalid, pe.Request)
	}

	pe = &Documents{Provider: provider, Consumer: consumer}
	k = "resources: [tenant.yaml]\npatches:\n- target: {kind: Tenant}\n  patch: '[{\"op\": \"add\", \"path\": \"/spec/extra\", \"value\": \"x\"}]'\n"
	if err := pe.Kustomize(kustomizedDir(t, testNonce(t), k, nil)); err == nil || !strings.Contains(err.Error(), `tenant.yaml: invalid document: unknown field "spec.extra"`) {
		t.Fatalf("err = %v", err)
	}
}

func TestKustomizeReadsUnlistedDocumentsAsTheyAre(t *testing.T) {
	pe := &Documents{Provider: provider, Consumer: consumer}
	files := kustomizedDir(t, testNonce(t), "resources: [tenant.yaml]\n", nil)
	if err := pe.Kustomize(files); err != nil {
		t.Fatal(err)
	}
	if pe.Tenant == nil || pe.Request == nil || pe.Invalid != nil {
		t.Fatalf("tenant %v, request %v, invalid %v", pe.Tenant, pe.Request, pe.Invalid)
	}

	pe = &Documents{Provider: provider, Consumer: consumer}
	files[string(vocabulary.RequestFile)] = []byte("kind: [\n")
	if err := pe.Kustomize(files); err == nil || !strings.HasPrefix(err.Error(), "provider-a/consumer-1/request.yaml: invalid document: malformed YAML") {
		t.Fatalf("err = %v", err)
	}
	if pe.Tenant == nil || pe.Invalid[vocabulary.RequestFile] == nil {
		t.Fatalf("tenant %v, invalid %v", pe.Tenant, pe.Invalid)
	}
}

func TestParseDir(t *testing.T) {
	if p, err := ParseDir("provider-a/consumer-1"); err != nil || p != (Path{Provider: provider, Consumer: consumer}) {
		t.Fatalf("ParseDir = %v, %v", p, err)
	}
	for dir, want := range map[string]string{
		"provider-a":              "not a <providerID>/<consumerID> directory",
		"provider-a/consumer-1/x": "not a <providerID>/<consumerID> directory",
		"provider-a/Consumer_1":   `cluster ID "Consumer_1" is not an RFC 1123 label`,
		"provider-a/provider-a":   "cannot peer with itself",
	} {
		if _, err := ParseDir(dir); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseDir(%q) = %v, want %q", dir, err, want)
		}
	}
}

// TestKustomizeNeverStartsGit builds kustomizations that reference, in every
// field that takes a path, what kustomize would read as a URL or a remote Git
// repository, in any case, with a fake git first in PATH: every one must be
// refused before kustomize runs, and git must never start.
func TestKustomizeNeverStartsGit(t *testing.T) {
	bin := t.TempDir()
	called := filepath.Join(bin, "called")
	script := "#!/bin/sh\necho \"$@\" >> " + called + "\nexit 1\n"
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	refs := []string{
		"GitHub.com/org/repo", "GITHUB.COM/org/repo//peers?ref=main", "github.com:org/repo", "gitHub.com/org/repo/sub",
		"HTTPS://example.com/tenant.yaml", "Http://example.com/tenant.yaml", "https://example.com/org/repo.git",
		"ssh://git@example.com/org/repo", "SSH://example.com/org/repo.git", "file:///tmp/repo", "FILE:///tmp/repo",
		"git::https://example.com/org/repo", "GIT::ssh://example.com/org/repo", "gh:org/repo",
		"git@example.com:org/repo.git", "user@host:org/repo", "example.com/org/repo.git", "example.com/org/_git/repo",
		"example.com/org/repo//sub", "./GitHub.com/org/repo", "tenant.yaml?ref=main", `sub\\x`, "a//b",
	}
	fields := map[string]func(string) string{
		"resources":    func(r string) string { return "resources: [tenant.yaml, \"" + r + "\"]\n" },
		"components":   func(r string) string { return "resources: [tenant.yaml]\ncomponents: [\"" + r + "\"]\n" },
		"patches":      func(r string) string { return "resources: [tenant.yaml]\npatches: [{path: \"" + r + "\"}]\n" },
		"replacements": func(r string) string { return "resources: [tenant.yaml]\nreplacements: [{path: \"" + r + "\"}]\n" },
	}
	for name, kustomization := range fields {
		for _, ref := range refs {
			pe := &Documents{Provider: provider, Consumer: consumer}
			err := pe.Kustomize(kustomizedDir(t, testNonce(t), kustomization(ref), nil))
			if err == nil || !strings.Contains(err.Error(), "remote resources are not allowed") {
				t.Errorf("%s %q: err = %v, want it refused as remote", name, ref, err)
			}
		}
	}
	if calls, err := os.ReadFile(called); err == nil {
		t.Fatalf("a build started git: %s", calls)
	}
}

// TestKustomizeNeverKeepsADeletedTenant checks that a kind whose file is
// absent is absent whatever the kustomization builds, and that a built
// document must come from the file of its kind.
func TestKustomizeNeverKeepsADeletedTenant(t *testing.T) {
	copyOf := func(files map[string][]byte) map[string]string {
		return map[string]string{"copy.yaml": string(files[string(vocabulary.TenantFile)])}
	}
	drain := "resources: [tenant.yaml]\npatches:\n- target: {kind: Tenant}\n  patch: '[{\"op\": \"add\", \"path\": \"/spec/tenantCondition\", \"value\": \"Drained\"}]'\n"
	for _, tc := range []struct {
		name, kustomization string
		deleteTenant        bool
		extra               func(map[string][]byte) map[string]string
		wantErr             string
	}{
		{name: "listed tenant.yaml deleted", kustomization: drain, deleteTenant: true, wantErr: "kustomize build failed"},
		{name: "tenant deleted, built from a copy", kustomization: "resources: [copy.yaml]\n", deleteTenant: true, extra: copyOf,
			wantErr: "kustomize built a Tenant that does not come from tenant.yaml"},
		{name: "tenant present, built from a copy", kustomization: "resources: [copy.yaml]\n", extra: copyOf,
			wantErr: "kustomize built a Tenant that does not come from tenant.yaml"},
		{name: "request rewritten into a Tenant", kustomization: "resources: [request.yaml]\npatches:\n- target: {kind: PeeringRequest}\n  patch: '[{\"op\": \"replace\", \"path\": \"/kind\", \"value\": \"Tenant\"}, {\"op\": \"replace\", \"path\": \"/apiVersion\", \"value\": \"authentication.liqo.io/v1beta1\"}]'\n",
			extra: func(map[string][]byte) map[string]string { return nil }, wantErr: "kustomize built a Tenant from request.yaml"},
		{name: "forged origin annotation", kustomization: "resources: [copy.yaml]\ncommonAnnotations: {gitpeer.io/origin: tenant.yaml}\n", extra: copyOf,
			wantErr: "kustomize built a Tenant that does not come from tenant.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := kustomizedDir(t, testNonce(t), tc.kustomization, nil)
			if tc.extra != nil {
				for name, data := range tc.extra(files) {
					files[name] = []byte(data)
				}
			}
			if tc.name == "request rewritten into a Tenant" {
				var request map[string]any
				if err := yaml.Unmarshal(files[string(vocabulary.RequestFile)], &request); err != nil {
					t.Fatal(err)
				}
				request["metadata"] = map[string]any{"name": consumer}
				files[string(vocabulary.RequestFile)] = marshal(t, request)
			}
			if tc.deleteTenant {
				delete(files, string(vocabulary.TenantFile))
			}
			pe := &Documents{Provider: provider, Consumer: consumer}
			err := pe.Kustomize(files)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
			}
			if pe.Tenant != nil {
				t.Fatal("a Tenant was read")
			}
			if tc.deleteTenant && (pe.Invalid[vocabulary.TenantFile] != nil || pe.BuildFailed != nil) {
				t.Fatalf("a deleted tenant.yaml must read as absent: invalid %v, build failed %v", pe.Invalid[vocabulary.TenantFile], pe.BuildFailed)
			}
			if !tc.deleteTenant && pe.BuildFailed == nil {
				t.Fatal("BuildFailed not set while tenant.yaml is present")
			}
		})
	}
}

// TestKustomizeCaseVariantPatch checks that a consumer's case-variant key
// cannot undo an admin's Drained patch: refused in the patch file, and
// refused as an unknown field once built.
func TestKustomizeCaseVariantPatch(t *testing.T) {
	k := "resources: [tenant.yaml]\npatches: [{path: drain.yaml}, {path: sneak.yaml}]\n"
	head := "apiVersion: authentication.liqo.io/v1beta1\nkind: Tenant\nmetadata: {name: consumer-1}\n"
	for name, tc := range map[string]struct{ drain, sneak, wantErr string }{
		"keys differing in case in one patch": {drain: head + "spec:\n  tenantCondition: Drained\n  tenantcondition: Active\n", sneak: head,
			wantErr: `in drain.yaml: invalid document: keys "tenantCondition" and "tenantcondition" differ only in case`},
		"case-variant key in another patch": {drain: head + "spec: {tenantCondition: Drained}\n", sneak: head + "spec: {tenantcondition: Active}\n",
			wantErr: `keys "tenantCondition" and "tenantcondition" differ only in case (line 11): field names are case-sensitive (as built by kustomization.yaml)`},
		"merge key in a patch": {drain: head + "spec: {tenantCondition: Drained}\n", sneak: head + "spec:\n  <<: {tenantCondition: Active}\n",
			wantErr: "merge keys (<<) are not allowed"},
	} {
		t.Run(name, func(t *testing.T) {
			pe := &Documents{Provider: provider, Consumer: consumer}
			err := pe.Kustomize(kustomizedDir(t, testNonce(t), k, map[string]string{"drain.yaml": tc.drain, "sneak.yaml": tc.sneak}))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
			}
			if pe.Tenant != nil || pe.BuildFailed == nil {
				t.Fatalf("tenant %v, build failed %v: the directory must fail closed", pe.Tenant, pe.BuildFailed)
			}
		})
	}
}

// TestKustomizeCaseVariantTenantField checks that a consumer's
// `tenantcondition: Active` in tenant.yaml cannot win over the admin's
// Drained patch, which kustomize puts before it in the built Tenant.
func TestKustomizeCaseVariantTenantField(t *testing.T) {
	for name, k := range map[string]string{
		"JSON 6902 patch":       "resources: [tenant.yaml]\npatches:\n- target: {kind: Tenant}\n  patch: '[{\"op\": \"add\", \"path\": \"/spec/tenantCondition\", \"value\": \"Drained\"}]'\n",
		"strategic merge patch": "resources: [tenant.yaml]\npatches:\n- patch: '{apiVersion: authentication.liqo.io/v1beta1, kind: Tenant, metadata: {name: consumer-1}, spec: {tenantCondition: Drained}}'\n",
	} {
		t.Run(name, func(t *testing.T) {
			files := kustomizedDir(t, testNonce(t), k, nil)
			files[string(vocabulary.TenantFile)] = []byte(strings.Replace(string(files[string(vocabulary.TenantFile)]), "spec:", "spec:\n  tenantcondition: Active", 1))
			pe := &Documents{Provider: provider, Consumer: consumer}
			err := pe.Kustomize(files)
			if pe.Tenant != nil {
				t.Fatalf("tenant read with condition %q", pe.Tenant.Spec.TenantCondition)
			}
			if err == nil || !strings.Contains(err.Error(), `keys "tenantCondition" and "tenantcondition" differ only in case`) || pe.BuildFailed == nil {
				t.Fatalf("err = %v, build failed %v", err, pe.BuildFailed)
			}
		})
	}
}
