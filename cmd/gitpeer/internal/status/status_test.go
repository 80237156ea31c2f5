package status

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/gitpeer/gitpeer/apis"
	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/examples/repofixture"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/test/controlplane"
	"github.com/gitpeer/gitpeer/test/crdinstall"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// TestStatusOnAControlPlane installs the CRDs on a real API server, creates a
// PeeringRepository reporting two peerings, the issued Tenant of one, an
// Identity, and a Tenant no repository reports, and reads them back.
func TestStatusOnAControlPlane(t *testing.T) {
	ctx := context.Background()
	cp := controlplane.Start(t)
	scheme := apis.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cp.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	if err := crdinstall.Install(ctx, c); err != nil {
		t.Fatalf("install CRDs: %v", err)
	}

	now := time.Now().Truncate(time.Second)
	ca, err := repofixture.NewCA("ca", now.Add(-time.Hour), 48*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	issued, err := repofixture.Build("provider-a", "consumer-1", repofixture.TenantProposed, repofixture.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tenant, err := protocol.NewTenant("consumer-1", issued.Key, issued.SignedNonce)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := ca.Issue(tenant.Spec.CSR, now, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"gitpeer-system", "liqo-tenant-consumer-1", "liqo-tenant-consumer-5", "liqo-tenant-consumer-9", "liqo-tenant-provider-b"} {
		create(ctx, t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	tenant.Namespace = "liqo-tenant-consumer-1"
	create(ctx, t, c, tenant)
	tenant.Status = authv1beta1.TenantStatus{TenantNamespace: tenant.Namespace, AuthParams: &authv1beta1.AuthParams{SignedCRT: cert, CA: ca.PEM}}
	if err := c.Status().Update(ctx, tenant); err != nil {
		t.Fatal(err)
	}
	stray, err := protocol.NewTenant("consumer-9", issued.Key, issued.SignedNonce)
	if err != nil {
		t.Fatal(err)
	}
	stray.Namespace = "liqo-tenant-consumer-9"
	create(ctx, t, c, stray)
	ns := "liqo-tenant-provider-b"
	create(ctx, t, c, &authv1beta1.Identity{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "controlplane-provider-b"},
		Spec: authv1beta1.IdentitySpec{ClusterID: "provider-b", Type: authv1beta1.ControlPlaneIdentityType, Namespace: &ns,
			AuthParams: authv1beta1.AuthParams{APIServer: "https://b:6443", CA: ca.PEM, SignedCRT: cert}},
	})
	repo := &gitpeerv1alpha1.PeeringRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: "gitpeer-system", Name: "peering"},
		Spec: gitpeerv1alpha1.PeeringRepositorySpec{URL: "ssh://git@example.com/peers.git", ClusterID: "provider-a",
			Provider: &gitpeerv1alpha1.ProviderSpec{Enabled: true, APIServer: "https://a:6443"},
			Consumer: &gitpeerv1alpha1.ConsumerSpec{Providers: []authv1beta1.ClusterID{"provider-b"}}},
	}
	create(ctx, t, c, repo)
	// A peering the status does not list (it lists at most 50): its Tenant is shown as the repository's.
	unlisted, err := protocol.NewTenant("consumer-5", issued.Key, issued.SignedNonce)
	if err != nil {
		t.Fatal(err)
	}
	unlisted.Namespace, unlisted.Labels = "liqo-tenant-consumer-5", map[string]string{vocabulary.OwnerLabel: string(repo.UID)}
	create(ctx, t, c, unlisted)
	repo.Status.Peerings = []gitpeerv1alpha1.PeeringStatus{
		{PeerID: "consumer-1", Role: gitpeerv1alpha1.ProviderRole, Phase: gitpeerv1alpha1.PhaseIssued, Since: metav1.NewTime(now), Message: "certificate valid"},
		{PeerID: "consumer-2", Role: gitpeerv1alpha1.ProviderRole, Phase: gitpeerv1alpha1.PhaseRequested, Since: metav1.NewTime(now), Reason: vocabulary.ReasonRequestsDeferred, Message: "deferred: 100 pending requests"},
		{PeerID: "provider-b", Role: gitpeerv1alpha1.ConsumerRole, Phase: gitpeerv1alpha1.PhaseReady, Since: metav1.NewTime(now)},
	}
	repo.Status.PeeringCounts = []gitpeerv1alpha1.PeeringCount{
		{Role: gitpeerv1alpha1.ConsumerRole, Phase: gitpeerv1alpha1.PhaseReady, Count: 1},
		{Role: gitpeerv1alpha1.ProviderRole, Phase: gitpeerv1alpha1.PhaseIssued, Count: 2},
		{Role: gitpeerv1alpha1.ProviderRole, Phase: gitpeerv1alpha1.PhaseRequested, Count: 1},
	}
	repo.Status.PeeringsOmitted, repo.Status.PeeringsNeedingAttention = 1, 1
	if err := c.Status().Update(ctx, repo); err != nil {
		t.Fatal(err)
	}

	all, err := Collect(ctx, c, "")
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	if err := Print(&table, all, "wide"); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", table.String())
	lines := strings.Split(strings.TrimSpace(table.String()), "\n")
	expires := now.Add(24 * time.Hour).UTC().Format(time.RFC3339)
	for i, want := range [][]string{
		{"NAMESPACE", "REPOSITORY", "ROLE", "PEER", "PHASE", "SINCE", "OBJECT", "CONDITION", "CERT EXPIRES", "REASON", "MESSAGE"},
		{"gitpeer-system", "peering", "Provider", "consumer-1", "Issued", "liqo-tenant-consumer-1/consumer-1", "Active", expires, "certificate valid"},
		{"gitpeer-system", "peering", "Provider", "consumer-2", "Requested", "RequestsDeferred", "deferred: 100 pending requests"},
		{"gitpeer-system", "peering", "Consumer", "provider-b", "Ready", "liqo-tenant-provider-b/controlplane-provider-b", expires},
		{"gitpeer-system", "peering", "Provider", "consumer-5", "-", "liqo-tenant-consumer-5/consumer-5", "Active"},
		{"-", "-", "Provider", "consumer-9", "liqo-tenant-consumer-9/consumer-9", "Active"},
		{},
		{"NAMESPACE", "REPOSITORY", "PEERINGS", "NEED ATTENTION", "UNLISTED", "BY ROLE AND PHASE"},
		{"gitpeer-system", "peering", "4", "1", "1", "Consumer Ready: 1, Provider Issued: 2, Provider Requested: 1"},
	} {
		if i >= len(lines) {
			t.Fatalf("missing line %d", i)
		}
		for _, w := range want {
			if !strings.Contains(lines[i], w) {
				t.Errorf("line %d %q lacks %q", i, lines[i], w)
			}
		}
	}
	if len(lines) != 9 {
		t.Fatalf("%d lines", len(lines))
	}

	// The default table leaves out SINCE, OBJECT, CONDITION and REASON.
	table.Reset()
	if err := Print(&table, all, ""); err != nil {
		t.Fatal(err)
	}
	lines = strings.Split(strings.TrimSpace(table.String()), "\n")
	if h := strings.Fields(lines[0]); len(lines) != 9 || !reflect.DeepEqual(h, []string{"NAMESPACE", "REPOSITORY", "ROLE", "PEER", "PHASE", "CERT", "EXPIRES", "MESSAGE"}) ||
		!strings.Contains(lines[1], expires) || strings.Contains(lines[1], "liqo-tenant-consumer-1/consumer-1") {
		t.Errorf("default table:\n%s", table.String())
	}
	var names bytes.Buffer
	if err := Print(&names, all, "name"); err != nil {
		t.Fatal(err)
	}
	if want := "tenant.authentication.liqo.io/consumer-1\nidentity.authentication.liqo.io/controlplane-provider-b\n" +
		"tenant.authentication.liqo.io/consumer-5\ntenant.authentication.liqo.io/consumer-9\n"; names.String() != want {
		t.Errorf("-o name:\n%s\nwant:\n%s", names.String(), want)
	}

	scoped, err := Collect(ctx, c, "gitpeer-system")
	if err != nil {
		t.Fatal(err)
	}
	var js bytes.Buffer
	if err := Print(&js, scoped, "json"); err != nil {
		t.Fatal(err)
	}
	var decoded Report
	if err := json.Unmarshal(js.Bytes(), &decoded); err != nil || len(decoded.Peerings) != 4 || decoded.Peerings[0].Expires == nil || decoded.Peerings[1].Object != "" ||
		len(decoded.Repositories) != 1 || decoded.Repositories[0].Unlisted != 1 || len(decoded.Repositories[0].Counts) != 3 {
		t.Fatalf("json (%v):\n%s", err, js.String())
	}
	var yml bytes.Buffer
	if err := Print(&yml, scoped, "yaml"); err != nil || !strings.Contains(yml.String(), "repositories:") {
		t.Fatalf("yaml (%v):\n%s", err, yml.String())
	}
	if empty, err := Collect(ctx, c, "elsewhere"); err != nil || len(empty.Peerings) != 0 || len(empty.Repositories) != 0 {
		t.Fatalf("other namespace: %v %+v", err, empty)
	}

	// The installed agent (config/manager's Deployment) watches its own namespace only: a
	// PeeringRepository elsewhere is reported, the one in gitpeer-system is not.
	data, err := os.ReadFile("../../../../config/manager/deployment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dep := &appsv1.Deployment{}
	if err := yaml.UnmarshalStrict(data, dep); err != nil {
		t.Fatal(err)
	}
	dep.Namespace = "gitpeer-system"
	create(ctx, t, c, dep)
	create(ctx, t, c, &gitpeerv1alpha1.PeeringRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "misplaced"},
		Spec: gitpeerv1alpha1.PeeringRepositorySpec{URL: "ssh://git@example.com/peers.git", ClusterID: "consumer-3",
			Consumer: &gitpeerv1alpha1.ConsumerSpec{Providers: []authv1beta1.ClusterID{"provider-a"}}},
	})
	all, err = Collect(ctx, c, "")
	if err != nil {
		t.Fatal(err)
	}
	want := []Unwatched{{Namespace: "default", Name: "misplaced", Agents: []string{"gitpeer-system/gitpeer-agent watches gitpeer-system"}}}
	if !reflect.DeepEqual(all.Unwatched, want) {
		t.Fatalf("unwatched: %+v, want %+v", all.Unwatched, want)
	}
	table.Reset()
	if err := Print(&table, all, ""); err != nil {
		t.Fatal(err)
	}
	if w := "Warning: no gitpeer agent acts on PeeringRepository default/misplaced: its namespace is not one the agents watch (gitpeer-system/gitpeer-agent watches gitpeer-system)"; !strings.Contains(table.String(), w) {
		t.Fatalf("table lacks %q:\n%s", w, table.String())
	}
}

func TestWatchNamespace(t *testing.T) {
	env := []corev1.EnvVar{
		{Name: "NS", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
		{Name: "OTHER", Value: "team"},
		{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
	}
	for args, want := range map[string]string{
		"agent --watch-namespace=$(NS)":      "ns-a",
		"agent --watch-namespace $(OTHER)-x": "team-x",
		"agent --watch-namespace=literal":    "literal",
		"agent --log-level=info":             "",
	} {
		if got := watchNamespace("ns-a", corev1.Container{Args: strings.Fields(args), Env: env}); got != want {
			t.Errorf("%s: %q, want %q", args, got, want)
		}
	}
	repos := []gitpeerv1alpha1.PeeringRepository{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns-a", Name: "in"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns-b", Name: "out"}},
	}
	if got := unwatched(repos, nil); got != nil {
		t.Errorf("no agents found: %+v, want nothing said", got)
	}
	if got := unwatched(repos, []agent{{deployment: "x/a", watches: ""}}); got != nil {
		t.Errorf("an agent of all namespaces: %+v", got)
	}
	if got := unwatched(repos, []agent{{deployment: "ns-a/a", watches: "ns-a"}}); len(got) != 1 || got[0].Name != "out" {
		t.Errorf("an agent of ns-a: %+v", got)
	}
}

func create(ctx context.Context, t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	if err := c.Create(ctx, obj); err != nil {
		t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
	}
}
