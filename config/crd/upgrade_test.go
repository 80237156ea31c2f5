package crd_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/gitpeer/gitpeer/config/crd"
	"github.com/gitpeer/gitpeer/test/controlplane"
	"github.com/gitpeer/gitpeer/test/crdinstall"
)

// previous is where the previous release's manifests are kept verbatim.
const previous = "testdata/previous"

// previousCRD is the PeeringRepository CRD of the previous release.
func previousCRD(t *testing.T) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	out := &apiextensionsv1.CustomResourceDefinition{}
	readYAML(t, filepath.Join(previous, "gitpeer.io_peeringrepositories.yaml"), out)
	return out
}

// currentCRD is the PeeringRepository CRD of this version.
func currentCRD(t *testing.T) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crds, err := crd.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range crds {
		if d.Name == "peeringrepositories.gitpeer.io" {
			return d
		}
	}
	t.Fatal("no PeeringRepository CRD")
	return nil
}

// TestSchemaOnlyGrows checks, statically, that the PeeringRepository schema of
// this version keeps every field of the previous release with its type, adds
// no required field, and serves and stores the same versions: what the previous
// release accepted, this one accepts.
func TestSchemaOnlyGrows(t *testing.T) {
	old, cur := previousCRD(t), currentCRD(t)
	if len(old.Spec.Versions) != len(cur.Spec.Versions) {
		t.Fatalf("versions changed: %d -> %d", len(old.Spec.Versions), len(cur.Spec.Versions))
	}
	for i, ov := range old.Spec.Versions {
		cv := cur.Spec.Versions[i]
		if ov.Name != cv.Name || ov.Served != cv.Served || ov.Storage != cv.Storage {
			t.Errorf("version %s (served %t, storage %t) became %s (served %t, storage %t)", ov.Name, ov.Served, ov.Storage, cv.Name, cv.Served, cv.Storage)
		}
		compareSchema(t, ov.Name, ov.Schema.OpenAPIV3Schema, cv.Schema.OpenAPIV3Schema)
	}
}

// compareSchema reports a field of old missing or retyped in cur, and any
// field cur requires that old did not.
func compareSchema(t *testing.T, at string, old, cur *apiextensionsv1.JSONSchemaProps) {
	t.Helper()
	if cur == nil {
		t.Errorf("%s: removed", at)
		return
	}
	if old.Type != cur.Type {
		t.Errorf("%s: type %q became %q", at, old.Type, cur.Type)
	}
	for _, r := range cur.Required {
		if !slices.Contains(old.Required, r) {
			t.Errorf("%s: %s became required", at, r)
		}
	}
	for name, p := range old.Properties {
		c, ok := cur.Properties[name]
		if !ok {
			t.Errorf("%s.%s: removed", at, name)
			continue
		}
		compareSchema(t, at+"."+name, &p, &c)
	}
	if old.Items != nil && old.Items.Schema != nil {
		if cur.Items == nil || cur.Items.Schema == nil {
			t.Errorf("%s[]: removed", at)
		} else {
			compareSchema(t, at+"[]", old.Items.Schema, cur.Items.Schema)
		}
	}
}

// TestUpgradeFromPreviousRelease installs the previous release's CRD on a real
// kube-apiserver, stores the PeeringRepositories of its samples and examples
// (and one relying on its defaults), then server-side applies this version's
// CRD over it as `kubectl apply` of a newer config/ does: every stored object
// is still served with its values (certificateTTL keeps the previous default,
// 8760h: defaults apply only to absent fields), an update of each is accepted,
// and each old manifest is still valid when created anew.
func TestUpgradeFromPreviousRelease(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := previousInstall(ctx, t)
	manifests := oldManifests(t)
	for _, m := range manifests {
		if err := createEventually(ctx, c, m.DeepCopy()); err != nil {
			t.Fatalf("previous CRD refuses its own %s: %v", m.GetName(), err)
		}
	}
	before := map[string]*unstructured.Unstructured{}
	for _, m := range manifests {
		before[m.GetName()] = get(ctx, t, c, m)
	}
	if ttl, _, _ := unstructured.NestedString(before["defaults"].Object, "spec", "provider", "certificateTTL"); ttl != "8760h" {
		t.Fatalf("previous default certificateTTL = %q, want 8760h", ttl)
	}

	if err := crdinstall.Apply(ctx, c, currentCRD(t)); err != nil {
		t.Fatal(err)
	}
	for _, m := range manifests {
		got := get(ctx, t, c, m)
		if missing := notIn(before[m.GetName()].Object["spec"], got.Object["spec"]); missing != "" {
			t.Errorf("%s: the stored spec lost or changed %s", m.GetName(), missing)
		}
		if err := c.Update(ctx, got); err != nil {
			t.Errorf("%s: stored object no longer valid for an update: %v", m.GetName(), err)
		}
		renamed := m.DeepCopy()
		renamed.SetName(m.GetName() + "-again")
		if err := c.Create(ctx, renamed); err != nil {
			t.Errorf("%s: previous manifest refused by the new CRD: %v", m.GetName(), err)
		}
	}
	upgraded := get(ctx, t, c, before["defaults"]).Object
	if ttl, _, _ := unstructured.NestedString(upgraded, "spec", "provider", "certificateTTL"); ttl != "8760h" {
		t.Errorf("stored certificateTTL = %q after the upgrade, want the previous default 8760h kept", ttl)
	}
	// New fields get their defaults on stored objects too (defaulting on read).
	if policy, _, _ := unstructured.NestedString(upgraded, "spec", "provider", "deletionPolicy"); policy != "Revoke" {
		t.Errorf("deletionPolicy of a stored object = %q, want the default Revoke", policy)
	}
}

// previousInstall starts a control plane with the previous release's CRD and
// the namespace gitpeer-system, and returns a client of it.
func previousInstall(ctx context.Context, t *testing.T) client.Client {
	t.Helper()
	cp := controlplane.Start(t)
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{apiextensionsv1.AddToScheme, corev1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	c, err := client.New(cp.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	if err := crdinstall.Apply(ctx, c, previousCRD(t)); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gitpeer-system"}}); err != nil {
		t.Fatal(err)
	}
	return c
}

// oldManifests are the PeeringRepositories of the previous release's samples
// and examples, in gitpeer-system, and one provider relying on its defaults.
func oldManifests(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	samples, _ := filepath.Glob(filepath.Join(previous, "samples_*.yaml"))
	examples, _ := filepath.Glob(filepath.Join(previous, "examples_*.yaml"))
	files := append(samples, examples...)
	if len(files) != 4 {
		t.Fatalf("previous manifests: %v", files)
	}
	var out []*unstructured.Unstructured
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(data, &u.Object); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		u.SetNamespace("gitpeer-system")
		u.SetName(strings.TrimSuffix(strings.ReplaceAll(filepath.Base(f), "_", "-"), ".yaml"))
		out = append(out, u)
	}
	defaults := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gitpeer.io/v1alpha1", "kind": "PeeringRepository",
		"metadata": map[string]any{"namespace": "gitpeer-system", "name": "defaults"},
		"spec": map[string]any{"url": "ssh://git@example.com/p.git", "clusterID": "cluster-a",
			"provider": map[string]any{"enabled": true, "apiServer": "https://cluster-a.example.com:6443"}},
	}}
	return append(out, defaults)
}

// createEventually creates obj, retrying while the new CRD's REST mapping
// reaches the client.
func createEventually(ctx context.Context, c client.Client, obj client.Object) error {
	var err error
	for range 50 {
		if err = c.Create(ctx, obj); err == nil || !strings.Contains(err.Error(), "no matches for kind") {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}

func get(ctx context.Context, t *testing.T, c client.Client, like *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(like.GroupVersionKind())
	if err := c.Get(ctx, client.ObjectKeyFromObject(like), got); err != nil {
		t.Fatalf("get %s: %v", like.GetName(), err)
	}
	return got
}

// notIn names the first value of was (recursively through maps) that is not in
// is, or returns "": fields may only be added, by the new CRD's defaults.
func notIn(was, is any) string {
	wm, ok := was.(map[string]any)
	if !ok {
		if reflect.DeepEqual(was, is) {
			return ""
		}
		return fmt.Sprintf("%v (now %v)", was, is)
	}
	im, _ := is.(map[string]any)
	for k, v := range wm {
		if missing := notIn(v, im[k]); missing != "" {
			return k + ": " + missing
		}
	}
	return ""
}

// TestUpgradeBoundsAnOldStatus stores, under the previous release's CRD, a
// PeeringRepository whose status lists 150 peerings with long messages (as the
// previous agent wrote them, one entry per peering), applies this version's
// CRD, and checks that the object stays writable: its spec and metadata can be
// updated (the old status is ratcheted, not revalidated), and the agent's
// first status update replaces the list with the bounded one.
func TestUpgradeBoundsAnOldStatus(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := previousInstall(ctx, t)
	obj := oldManifests(t)[0]
	if err := createEventually(ctx, c, obj); err != nil {
		t.Fatal(err)
	}
	var peerings []any
	for i := range 150 {
		peerings = append(peerings, map[string]any{"peerID": fmt.Sprintf("consumer-%03d", i), "role": "Provider", "phase": "Failed",
			"since": "2026-01-01T00:00:00Z", "message": strings.Repeat("rejected ", 100)})
	}
	if err := unstructured.SetNestedSlice(obj.Object, peerings, "status", "peerings"); err != nil {
		t.Fatal(err)
	}
	if err := c.Status().Update(ctx, obj); err != nil {
		t.Fatalf("previous CRD refuses its own status: %v", err)
	}

	if err := crdinstall.Apply(ctx, c, currentCRD(t)); err != nil {
		t.Fatal(err)
	}
	got := get(ctx, t, c, obj)
	if old, _, _ := unstructured.NestedSlice(got.Object, "status", "peerings"); len(old) != 150 {
		t.Fatalf("stored status lists %d peerings, want the previous 150", len(old))
	}
	got.SetAnnotations(map[string]string{"example.com/touched": "true"})
	if err := c.Update(ctx, got); err != nil {
		t.Fatalf("an object with the previous status can no longer be updated: %v", err)
	}
	long := map[string]any{"peerID": "consumer-000", "role": "Provider", "phase": "Failed", "since": "2026-01-01T00:00:00Z", "message": strings.Repeat("changed ", 100)}
	if err := unstructured.SetNestedSlice(got.Object, []any{long}, "status", "peerings"); err != nil {
		t.Fatal(err)
	}
	if err := c.Status().Update(ctx, got); err == nil || !strings.Contains(err.Error(), "message") {
		t.Fatalf("a new status with an unbounded message: %v, want refused", err)
	}
	bounded := map[string]any{"peerID": "consumer-000", "role": "Provider", "phase": "Failed", "reason": "", "since": "2026-01-01T00:00:00Z", "message": "rejected"}
	if err := unstructured.SetNestedSlice(got.Object, []any{bounded}, "status", "peerings"); err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(got.Object, int64(149), "status", "peeringsOmitted"); err != nil {
		t.Fatal(err)
	}
	if err := c.Status().Update(ctx, got); err != nil {
		t.Fatalf("the bounded status is refused: %v", err)
	}
	if now, _, _ := unstructured.NestedSlice(get(ctx, t, c, obj).Object, "status", "peerings"); len(now) != 1 {
		t.Errorf("status lists %d peerings after the update", len(now))
	}
}
