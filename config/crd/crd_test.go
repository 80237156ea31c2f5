package crd_test

import (
	"reflect"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/config/crd"
)

type column struct {
	name, jsonPath, typ string
	priority            int32
}

type want struct {
	group, kind, plural, version string
	shortNames, categories       []string
	columns                      []column
}

var wants = map[string]want{
	"peeringrepositories.gitpeer.io": {
		group: "gitpeer.io", kind: "PeeringRepository", plural: "peeringrepositories", version: "v1alpha1",
		shortNames: []string{"peerrepo"}, categories: []string{"gitpeer"},
		columns: []column{
			{"Cluster", ".spec.clusterID", "string", 0},
			{"URL", ".spec.url", "string", 0},
			{"Branch", ".spec.branch", "string", 1},
			{"Ready", `.status.conditions[?(@.type=="Ready")].status`, "string", 0},
			{"Status", `.status.conditions[?(@.type=="Ready")].message`, "string", 0},
			{"Commit", ".status.lastProcessedCommit", "string", 1},
			{"Suspended", ".spec.suspend", "boolean", 1},
			{"Age", ".metadata.creationTimestamp", "date", 0},
		},
	},
	// Tenant and Identity: exactly Liqo's names and printer columns.
	"tenants.authentication.liqo.io": {
		group: "authentication.liqo.io", kind: "Tenant", plural: "tenants", version: "v1beta1",
		shortNames: []string{"tn"}, categories: []string{"liqo"},
		columns: []column{
			{"Condition", ".spec.tenantCondition", "string", 0},
			{"Age", ".metadata.creationTimestamp", "date", 0},
		},
	},
	"identities.authentication.liqo.io": {
		group: "authentication.liqo.io", kind: "Identity", plural: "identities", version: "v1beta1",
		shortNames: []string{"id"}, categories: []string{"liqo"},
		columns: []column{
			{"Type", ".spec.type", "string", 0},
			{"KubeconfigSecret", ".status.kubeconfigSecretRef.name", "string", 1},
			{"Age", ".metadata.creationTimestamp", "date", 0},
		},
	},
}

func TestCRDs(t *testing.T) {
	crds, err := crd.Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(crds) != len(wants) {
		t.Fatalf("got %d CRDs, want %d", len(crds), len(wants))
	}
	for _, c := range crds {
		w, ok := wants[c.Name]
		if !ok {
			t.Errorf("unexpected CRD %s", c.Name)
			continue
		}
		if c.Kind != "CustomResourceDefinition" || c.APIVersion != "apiextensions.k8s.io/v1" {
			t.Errorf("%s: got %s %s", c.Name, c.APIVersion, c.Kind)
		}
		s := c.Spec
		if s.Group != w.group || s.Names.Kind != w.kind || s.Names.Plural != w.plural ||
			s.Scope != apiextensionsv1.NamespaceScoped {
			t.Errorf("%s: got group %q kind %q plural %q scope %q", c.Name, s.Group, s.Names.Kind, s.Names.Plural, s.Scope)
		}
		if !reflect.DeepEqual(s.Names.ShortNames, w.shortNames) || !reflect.DeepEqual(s.Names.Categories, w.categories) {
			t.Errorf("%s: got short names %v categories %v", c.Name, s.Names.ShortNames, s.Names.Categories)
		}
		if len(s.Versions) != 1 {
			t.Fatalf("%s: got %d versions", c.Name, len(s.Versions))
		}
		v := s.Versions[0]
		if v.Name != w.version || !v.Served || !v.Storage || v.Subresources == nil || v.Subresources.Status == nil {
			t.Errorf("%s: version %q served %v storage %v subresources %v", c.Name, v.Name, v.Served, v.Storage, v.Subresources)
		}
		var got []column
		for _, col := range v.AdditionalPrinterColumns {
			got = append(got, column{col.Name, col.JSONPath, col.Type, col.Priority})
		}
		if !reflect.DeepEqual(got, w.columns) {
			t.Errorf("%s: printer columns\n got %v\nwant %v", c.Name, got, w.columns)
		}
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			t.Fatalf("%s: no schema", c.Name)
		}
	}
}

// prop walks the schema along a path of property names.
func prop(t *testing.T, s *apiextensionsv1.JSONSchemaProps, names ...string) apiextensionsv1.JSONSchemaProps {
	t.Helper()
	for _, n := range names {
		p, ok := s.Properties[n]
		if !ok {
			t.Fatalf("no property %q in %v", n, names)
		}
		s = &p
	}
	return *s
}

func schemaOf(t *testing.T, name string) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	crds, err := crd.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range crds {
		if c.Name == name {
			return c.Spec.Versions[0].Schema.OpenAPIV3Schema
		}
	}
	t.Fatalf("no CRD %s", name)
	return nil
}

func keys(m map[string]apiextensionsv1.JSONSchemaProps) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func enum(p apiextensionsv1.JSONSchemaProps) []string {
	var out []string
	for _, e := range p.Enum {
		out = append(out, string(e.Raw))
	}
	return out
}

// TestLiqoSchemas checks the parts of the Tenant and Identity schemas the handshake depends on
// against Liqo's CRDs (deployments/liqo/charts/liqo-crds/crds in liqotech/liqo).
func TestLiqoSchemas(t *testing.T) {
	tn := schemaOf(t, "tenants.authentication.liqo.io")
	spec := prop(t, tn, "spec")
	if got, want := sorted(keys(spec.Properties)), []string{"authzPolicy", "clusterID", "csr", "proxyURL", "publicKey", "signature", "tenantCondition"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Tenant spec fields %v, want %v", got, want)
	}
	for _, f := range []string{"csr", "publicKey", "signature"} {
		if p := prop(t, &spec, f); p.Type != "string" || p.Format != "byte" {
			t.Errorf("Tenant spec.%s: type %q format %q, want string/byte", f, p.Type, p.Format)
		}
	}
	if got := enum(prop(t, &spec, "tenantCondition")); !reflect.DeepEqual(got, []string{`"Active"`, `"Cordoned"`, `"Drained"`}) {
		t.Errorf("tenantCondition enum %v", got)
	}
	if got := string(prop(t, &spec, "tenantCondition").Default.Raw); got != `"Active"` {
		t.Errorf("tenantCondition default %s", got)
	}
	if got := enum(prop(t, &spec, "authzPolicy")); !reflect.DeepEqual(got, []string{`"KeysExchange"`, `"TolerateNoHandshake"`}) {
		t.Errorf("authzPolicy enum %v", got)
	}
	if got := string(prop(t, &spec, "authzPolicy").Default.Raw); got != `"KeysExchange"` {
		t.Errorf("authzPolicy default %s", got)
	}
	if got := prop(t, &spec, "clusterID").Pattern; got != `^[a-z0-9]([-a-z0-9]*[a-z0-9])?$` {
		t.Errorf("clusterID pattern %q", got)
	}
	if got := sorted(keys(prop(t, tn, "status").Properties)); !reflect.DeepEqual(got, []string{"authParams", "tenantNamespace"}) {
		t.Errorf("Tenant status fields %v", got)
	}

	id := schemaOf(t, "identities.authentication.liqo.io")
	ispec := prop(t, id, "spec")
	if got, want := sorted(keys(ispec.Properties)), []string{"authParams", "clusterID", "namespace", "type"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Identity spec fields %v, want %v", got, want)
	}
	ap := prop(t, &ispec, "authParams")
	if got, want := sorted(keys(ap.Properties)), []string{"apiServer", "awsConfig", "ca", "proxyURL", "signedCRT"}; !reflect.DeepEqual(got, want) {
		t.Errorf("authParams fields %v, want %v", got, want)
	}
	for _, f := range []string{"ca", "signedCRT"} {
		if p := prop(t, &ap, f); p.Type != "string" || p.Format != "byte" {
			t.Errorf("authParams.%s: type %q format %q, want string/byte", f, p.Type, p.Format)
		}
	}
	if got := enum(prop(t, &ispec, "type")); !reflect.DeepEqual(got, []string{`"ControlPlane"`, `"ResourceSlice"`}) {
		t.Errorf("Identity type enum %v", got)
	}
	if got := sorted(keys(prop(t, id, "status", "kubeconfigSecretRef").Properties)); !reflect.DeepEqual(got, []string{"name"}) {
		t.Errorf("kubeconfigSecretRef fields %v", got)
	}
}

func TestPeeringRepositorySchema(t *testing.T) {
	s := schemaOf(t, "peeringrepositories.gitpeer.io")
	spec := prop(t, s, "spec")
	if got := sorted(spec.Required); !reflect.DeepEqual(got, []string{"clusterID", "url"}) {
		t.Errorf("required %v", got)
	}
	defaults := map[string]string{
		"branch":                        `"main"`,
		"interval":                      `"1m"`,
		"timeout":                       `"60s"`,
		"provider.certificateTTL":       `"24h"`,
		"provider.deletionPolicy":       `"Revoke"`,
		"provider.maxPendingRequests":   `100`,
		"provider.clusterRoleName":      `"liqo-remote-controlplane"`,
		"consumer.reviewBranchTemplate": `"gitpeer/{{.ProviderID}}/{{.ConsumerID}}"`,
		"verify.mode":                   `"Relevant"`,
	}
	for path, want := range defaults {
		p := prop(t, &spec, splitDots(path)...)
		if p.Default == nil || string(p.Default.Raw) != want {
			t.Errorf("spec.%s default %v, want %s", path, p.Default, want)
		}
	}
	if got := prop(t, &spec, "clusterID").Pattern; got != `^[a-z0-9]([-a-z0-9]*[a-z0-9])?$` {
		t.Errorf("clusterID pattern %q", got)
	}
	if got := sorted(keys(prop(t, s, "status").Properties)); !reflect.DeepEqual(got, []string{"conditions", "lastHandledReconcileAt", "lastProcessedCommit", "observedGeneration", "ownershipVersion", "peeringCounts", "peerings", "peeringsNeedingAttention", "peeringsOmitted"}) {
		t.Errorf("status fields %v", got)
	}
	peerings := prop(t, s, "status", "peerings")
	peering := *peerings.Items.Schema
	if got := sorted(keys(peering.Properties)); !reflect.DeepEqual(got, []string{"message", "peerID", "phase", "reason", "role", "since"}) {
		t.Errorf("peering fields %v", got)
	}
	// The status is bounded: a capped list of capped messages, and counts.
	if peerings.MaxItems == nil || *peerings.MaxItems != gitpeerv1alpha1.MaxListedPeerings ||
		peering.Properties["message"].MaxLength == nil || *peering.Properties["message"].MaxLength != gitpeerv1alpha1.MaxPeeringMessageLength {
		t.Errorf("status.peerings not bounded as the agent bounds it: maxItems %v, message maxLength %v", peerings.MaxItems, peering.Properties["message"].MaxLength)
	}
	if counts := prop(t, s, "status", "peeringCounts"); counts.MaxItems == nil || *counts.MaxItems != int64(2*len(prop(t, &peering, "phase").Enum)) {
		t.Errorf("status.peeringCounts maxItems %v", counts.MaxItems)
	}
}
