// Package config_test checks the kustomize install in this directory against a real control plane:
// everything in config/default and config/samples is accepted by kube-apiserver, the agent's pod
// would pass the restricted Pod Security Standard, and the agent's ServiceAccount holds exactly the
// access the handshake needs (RBAC and the admission policy together).
package config_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitpeer/gitpeer/test/controlplane"
	"github.com/gitpeer/gitpeer/test/installed"
	"github.com/gitpeer/gitpeer/test/process"
)

const (
	systemNamespace = "gitpeer-system"
	agentUser       = "system:serviceaccount:" + systemNamespace + ":gitpeer-agent"
	tenantRole      = "liqo-remote-controlplane"
	ownerLabel      = "gitpeer.io/owner"
)

// TestInstall applies config/default (server-side, then client-side, as users do either) and
// config/samples to a real control plane and checks every object is there; then it checks what
// the agent's ServiceAccount can and cannot do. There are no nodes: the Deployment runs no pod,
// acceptance by the API server (and a dry-run of its pod through admission) is what is checked.
func TestInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	// make tools builds kubectl of the control plane's version; else the one on PATH.
	kubectlPath := ""
	if dir, err := process.Find("GITPEER_TOOLS_BIN", filepath.Join("tools", "*")); err == nil {
		if _, err := os.Stat(filepath.Join(dir, "kubectl")); err == nil {
			kubectlPath = filepath.Join(dir, "kubectl")
		}
	}
	if kubectlPath == "" {
		var err error
		if kubectlPath, err = exec.LookPath("kubectl"); err != nil {
			t.Skip("no kubectl: run `make tools`, or put kubectl on PATH, to test `kubectl apply -k config/default`")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cp := controlplane.Start(t)
	kubectl := func(t *testing.T, args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, kubectlPath, append(args, "--kubeconfig", cp.KubeconfigPath)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.String())
		}
		return string(out)
	}
	admin, err := client.New(cp.Config, client.Options{Scheme: clientgoscheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("default", func(t *testing.T) {
		kubectl(t, "apply", "-k", "default", "--server-side", "--field-manager", "gitpeer-install")
		kubectl(t, "wait", "--for", "condition=Established", "--timeout", "60s", "crd", "--all")
		kubectl(t, "apply", "-k", "default", "--server-side", "--field-manager", "gitpeer-install") // idempotent
		kubectl(t, "apply", "-k", "default")                                                        // client-side too
		objs := build(t, kubectl(t, "kustomize", "default"))
		kinds := map[string]int{}
		for _, o := range objs {
			kinds[o.GetKind()]++
			assertExists(ctx, t, admin, o)
		}
		for _, k := range []string{
			"Namespace", "CustomResourceDefinition", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role",
			"RoleBinding", "Deployment", "Service", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
		} {
			if kinds[k] == 0 {
				t.Errorf("config/default has no %s", k)
			}
		}
		t.Logf("config/default: %d objects accepted: %v", len(objs), kinds)
	})

	t.Run("image is overridable", func(t *testing.T) {
		// An overlay with `images:` is how users pin a release; check the Deployment follows it.
		dir := t.TempDir()
		base, err := filepath.Rel(dir, mustAbs(t, "default")) // kustomize takes relative bases only
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, dir+"/kustomization.yaml", "resources:\n- "+base+"\nimages:\n"+
			"- name: ghcr.io/gitpeer/gitpeer\n  newName: registry.example.com/gitpeer\n  newTag: v1.2.3\n")
		for _, o := range build(t, kubectl(t, "kustomize", dir)) {
			if o.GetKind() != "Deployment" {
				continue
			}
			img, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
			if got := img[0].(map[string]any)["image"]; got != "registry.example.com/gitpeer:v1.2.3" {
				t.Errorf("image = %v, want the overlay's", got)
			}
		}
	})

	t.Run("agent pod passes restricted pod security", func(t *testing.T) {
		// gitpeer-system enforces the restricted Pod Security Standard; a server dry-run of the
		// Deployment's pod goes through that admission (and the ServiceAccount admission) as the
		// ReplicaSet controller's pod would.
		dep := &appsv1.Deployment{}
		if err := admin.Get(ctx, client.ObjectKey{Namespace: systemNamespace, Name: "gitpeer-agent"}, dep); err != nil {
			t.Fatal(err)
		}
		if err := installed.CheckRestrictedPod(ctx, admin, systemNamespace, dep); err != nil {
			t.Error(err)
		}
		c := dep.Spec.Template.Spec.Containers[0]
		sc := c.SecurityContext
		if sc == nil || !ptr.Deref(sc.ReadOnlyRootFilesystem, false) || !ptr.Deref(sc.RunAsNonRoot, false) ||
			len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
			t.Errorf("container security context %+v", sc)
		}
		if c.LivenessProbe == nil || c.ReadinessProbe == nil || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
			t.Errorf("probes or resources missing: %+v", c)
		}
	})

	t.Run("samples", func(t *testing.T) {
		kubectl(t, "apply", "-k", "samples", "--server-side", "--field-manager", "gitpeer-install")
		for _, o := range build(t, kubectl(t, "kustomize", "samples")) {
			got := assertExists(ctx, t, admin, o)
			if o.GetKind() == "PeeringRepository" {
				// Defaults from the CRD apply: proof the object went through the real schema.
				if b, _, _ := unstructured.NestedString(got.Object, "spec", "branch"); b != "main" {
					t.Errorf("%s: spec.branch = %q", o.GetName(), b)
				}
			}
		}
	})

	t.Run("a PeeringRepository elsewhere is warned of", func(t *testing.T) {
		sample, err := os.ReadFile("samples/provider.yaml")
		if err != nil {
			t.Fatal(err)
		}
		// kubectl's stderr when it creates the sample in namespace (dry run: admission runs, nothing is stored).
		apply := func(namespace string) string {
			manifest := strings.Replace(string(sample), "namespace: gitpeer-system", "namespace: "+namespace, 1)
			cmd := exec.CommandContext(ctx, kubectlPath, "apply", "--dry-run=server", "-f", "-", "--kubeconfig", cp.KubeconfigPath)
			cmd.Stdin = strings.NewReader(manifest)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if out, err := cmd.Output(); err != nil {
				t.Fatalf("kubectl apply in %s: %v\n%s%s", namespace, err, out, stderr.String())
			}
			return stderr.String()
		}
		want := "no gitpeer agent acts on PeeringRepository default/peerings-provider: the agent gitpeer-system/gitpeer-agent watches namespace gitpeer-system only (--watch-namespace); create it, and its Secrets, there"
		// The API server compiles a new policy and starts watching its parameter asynchronously.
		var got string
		err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
			got = apply("default")
			return strings.HasPrefix(got, "Warning: ") && strings.Contains(got, want), nil
		})
		if err != nil {
			t.Fatalf("kubectl never warned %q; last: %q", want, got)
		}
		if got := apply("gitpeer-system"); strings.Contains(got, "no gitpeer agent") {
			t.Errorf("warned in the agent's namespace: %s", got)
		}
		// An agent without --watch-namespace watches every namespace: nothing to warn of.
		kubectl(t, "-n", "gitpeer-system", "patch", "deployment", "gitpeer-agent", "--type=json", "-p",
			`[{"op":"test","path":"/spec/template/spec/containers/0/args/1","value":"--watch-namespace=$(RUNTIME_NAMESPACE)"},`+
				`{"op":"remove","path":"/spec/template/spec/containers/0/args/1"}]`)
		err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
			got = apply("default")
			return !strings.Contains(got, "no gitpeer agent"), nil
		})
		if err != nil {
			t.Errorf("warned with an agent of all namespaces: %s", got)
		}
		kubectl(t, "apply", "-k", "default", "--server-side", "--field-manager", "gitpeer-install", "--force-conflicts")
	})

	t.Run("agent permissions", func(t *testing.T) {
		testAgentAccess(ctx, t, cp.Config, admin)
	})

	t.Run("records have one writer", func(t *testing.T) {
		testRecordsOneWriter(ctx, t, cp.Config, admin)
	})
}

// testAgentAccess impersonates the agent's ServiceAccount. It first asks the API server
// (SelfSubjectAccessReview) about each verb the handshake needs and each it must not have, then
// makes the handshake's real writes, and the forbidden ones, so RBAC and the admission policy are
// tested together.
func testAgentAccess(ctx context.Context, t *testing.T, cfg *rest.Config, admin client.Client) {
	agentCfg := rest.CopyConfig(cfg)
	agentCfg.Impersonate = rest.ImpersonationConfig{UserName: agentUser}
	agent, err := client.New(agentCfg, client.Options{Scheme: clientgoscheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	tenantNS := "liqo-tenant-consumer1"

	type access struct {
		verb, group, resource, subresource, namespace, name string
	}
	can := func(a access) bool {
		t.Helper()
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: a.verb, Group: a.group, Resource: a.resource, Subresource: a.subresource, Namespace: a.namespace, Name: a.name,
			},
		}}
		if err := agent.Create(ctx, review); err != nil {
			t.Fatal(err)
		}
		return review.Status.Allowed
	}
	allowed := []access{
		{"approve", "certificates.k8s.io", "signers", "", "", certificatesv1.KubeAPIServerClientSignerName},
		{"update", "certificates.k8s.io", "certificatesigningrequests", "approval", "", "x"},
		{"create", "certificates.k8s.io", "certificatesigningrequests", "", "", ""},
		{"list", "certificates.k8s.io", "certificatesigningrequests", "", "", ""}, // finds its own CSRs by label
		{"create", "authentication.k8s.io", "selfsubjectreviews", "", "", ""},     // learns its own user name
		{"deletecollection", "certificates.k8s.io", "certificatesigningrequests", "", "", ""},
		{"bind", "rbac.authorization.k8s.io", "clusterroles", "", "", tenantRole},
		{"watch", "rbac.authorization.k8s.io", "clusterroles", "", "", ""}, // metadata only: when to publish the terms again
		{"create", "rbac.authorization.k8s.io", "rolebindings", "", tenantNS, ""},
		{"create", "", "namespaces", "", "", ""},
		{"patch", "", "namespaces", "", "", tenantNS},
		{"get", "", "secrets", "", tenantNS, "liqo-nonce"},
		{"create", "", "secrets", "", tenantNS, ""},
		{"get", "", "secrets", "", systemNamespace, "git-credentials"},
		{"create", "authentication.liqo.io", "tenants", "", tenantNS, ""},
		{"patch", "authentication.liqo.io", "tenants", "status", tenantNS, "consumer1"},
		{"create", "authentication.liqo.io", "identities", "", "liqo-tenant-provider1", ""},
		{"patch", "authentication.liqo.io", "identities", "status", "liqo-tenant-provider1", "controlplane-provider1"},
		{"watch", "gitpeer.io", "peeringrepositories", "", systemNamespace, ""},
		{"patch", "gitpeer.io", "peeringrepositories", "status", systemNamespace, "p"},
		{"patch", "gitpeer.io", "peeringrepositories", "", systemNamespace, "p"}, // finalizer, request-again annotation
		{"list", "rbac.authorization.k8s.io", "rolebindings", "", tenantNS, ""},
		{"delete", "rbac.authorization.k8s.io", "rolebindings", "", tenantNS, "x"},
		{"update", "rbac.authorization.k8s.io", "rolebindings", "", tenantNS, "x"},
		{"update", "", "secrets", "", systemNamespace, "gitpeer-records-p-3f"},
		{"create", "events.k8s.io", "events", "", systemNamespace, ""},
		{"update", "coordination.k8s.io", "leases", "", systemNamespace, "x"},
		// Liqo mode: Liqo's cluster ID and key, its cached certificate at revocation.
		{"get", "", "configmaps", "", "liqo", "liqo-clusterid-configmap"},
		{"get", "", "configmaps", "", "kube-system", "extension-apiserver-authentication"}, // checks the certificates it records
		{"get", "", "secrets", "", "liqo", "authentication-keys"},
		{"delete", "", "secrets", "", tenantNS, "liqo-remote-certificate"},
		// Liqo mode, revocation: drains the consumer as Liqo's Drained does.
		{"list", "authentication.liqo.io", "resourceslices", "", tenantNS, ""},
		{"watch", "authentication.liqo.io", "resourceslices", "", "", ""}, // records each slice certificate as Liqo issues it
		{"delete", "authentication.liqo.io", "resourceslices", "", tenantNS, "slice-1"},
		{"list", "offloading.liqo.io", "namespacemaps", "", tenantNS, ""},
		// Drained lists in every namespace: so does the revocation (it deletes only in tenant namespaces).
		{"list", "authentication.liqo.io", "resourceslices", "", "", ""},
		{"list", "offloading.liqo.io", "namespacemaps", "", "", ""},
		{"delete", "offloading.liqo.io", "namespacemaps", "", tenantNS, "map-1"},
		{"list", "authentication.liqo.io", "renews", "", tenantNS, ""},
		{"delete", "authentication.liqo.io", "renews", "", tenantNS, "controlplane-p"},
	}
	denied := []access{
		{"approve", "certificates.k8s.io", "signers", "", "", certificatesv1.KubeletServingSignerName},
		{"approve", "certificates.k8s.io", "signers", "", "", certificatesv1.KubeAPIServerClientKubeletSignerName},
		{"approve", "certificates.k8s.io", "signers", "", "", "kubernetes.io/*"},
		{"approve", "certificates.k8s.io", "signers", "", "", "example.com/custom"},
		{"update", "certificates.k8s.io", "certificatesigningrequests", "status", "", "x"}, // signing is the signer's job
		{"update", "certificates.k8s.io", "certificatesigningrequests", "", "", "x"},
		{"patch", "certificates.k8s.io", "certificatesigningrequests", "", "", "x"},
		{"update", "", "namespaces", "finalize", "", tenantNS},
		{"bind", "rbac.authorization.k8s.io", "clusterroles", "", "", "cluster-admin"},
		{"bind", "rbac.authorization.k8s.io", "clusterroles", "", "", "admin"},
		{"escalate", "rbac.authorization.k8s.io", "clusterroles", "", "", ""},
		{"create", "rbac.authorization.k8s.io", "clusterroles", "", "", ""},
		{"create", "rbac.authorization.k8s.io", "clusterrolebindings", "", "", ""},
		{"bind", "rbac.authorization.k8s.io", "roles", "", tenantNS, "x"},
		{"list", "", "secrets", "", "", ""},
		{"list", "", "secrets", "", "kube-system", ""},
		{"watch", "", "secrets", "", tenantNS, ""},
		{"list", "", "secrets", "", systemNamespace, ""},
		{"patch", "", "secrets", "", tenantNS, "liqo-nonce"},
		{"list", "gitpeer.io", "peeringrepositories", "", "default", ""},
		{"update", "gitpeer.io", "peeringrepositories", "", systemNamespace, "p"}, // spec belongs to people
		{"create", "", "pods", "", systemNamespace, ""},
		{"create", "", "serviceaccounts", "", "", "token"},
		{"impersonate", "", "users", "", "", ""},
		{"update", "coordination.k8s.io", "leases", "", "kube-system", "kube-controller-manager"},
		{"get", "", "configmaps", "", "liqo", "other"},
		{"list", "", "configmaps", "", "liqo", ""},
		{"update", "", "configmaps", "", "liqo", "liqo-clusterid-configmap"},
		{"delete", "", "configmaps", "", "liqo", "liqo-clusterid-configmap"},
		{"create", "authentication.liqo.io", "resourceslices", "", tenantNS, ""},
		{"update", "authentication.liqo.io", "resourceslices", "", tenantNS, "slice-1"},
		{"create", "offloading.liqo.io", "namespacemaps", "", tenantNS, ""},
		{"create", "authentication.liqo.io", "renews", "", tenantNS, ""},
		{"update", "authentication.liqo.io", "renews", "", tenantNS, "controlplane-p"},
	}
	for _, a := range allowed {
		if !can(a) {
			t.Errorf("the agent cannot %+v; it needs to", a)
		}
	}
	for _, a := range denied {
		if can(a) {
			t.Errorf("the agent can %+v; it must not", a)
		}
	}

	// The handshake's real writes. The admission policy is compiled asynchronously after it is
	// created: wait until it rejects a write it must reject before testing the others.
	managed := map[string]string{"app.kubernetes.io/managed-by": "gitpeer", ownerLabel: "uid-of-peering"}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		err := agent.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "not-a-tenant"}}, client.DryRunAll)
		return apierrors.IsForbidden(err), nil
	})
	if err != nil {
		t.Fatalf("the admission policy never rejected namespace not-a-tenant: %v", err)
	}

	// Provider: tenant namespace, nonce, binding, CSR approval.
	expectAllowed(t, "create tenant namespace", agent.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenantNS, Labels: managed}}))
	ns := &corev1.Namespace{}
	expectAllowed(t, "get tenant namespace", agent.Get(ctx, client.ObjectKey{Name: tenantNS}, ns))
	expectAllowed(t, "annotate tenant namespace", agent.Patch(ctx, ns, client.RawPatch("application/merge-patch+json",
		[]byte(`{"metadata":{"annotations":{"gitpeer.io/pinned-public-key-sha256":"abc"}}}`))))
	nonce := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: "liqo-nonce"}, StringData: map[string]string{"nonce": "n"}}
	expectAllowed(t, "create liqo-nonce", agent.Create(ctx, nonce))
	expectAllowed(t, "get liqo-nonce", agent.Get(ctx, client.ObjectKeyFromObject(nonce), nonce))
	nonce.StringData = map[string]string{"nonce": "rotated"}
	expectAllowed(t, "update liqo-nonce", agent.Update(ctx, nonce))
	expectDenied(t, "list secrets", agent.List(ctx, &corev1.SecretList{}, client.InNamespace(tenantNS)))
	// Liqo mode: revocation deletes Liqo's certificate cache, which the agent never writes.
	cache := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: "liqo-remote-certificate"}}
	expectAllowed(t, "create Liqo's certificate cache (admin)", admin.Create(ctx, cache))
	expectDenied(t, "update liqo-remote-certificate", agent.Update(ctx, cache, client.DryRunAll))
	expectDenied(t, "create liqo-remote-certificate outside tenant namespaces", agent.Create(ctx,
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "liqo-remote-certificate"}}, client.DryRunAll))
	expectAllowed(t, "delete liqo-remote-certificate (revocation in Liqo mode)", agent.Delete(ctx, cache))
	sliceCache := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: "liqo-remote-certificate-slice-1"}}
	expectAllowed(t, "create a ResourceSlice's certificate cache (admin)", admin.Create(ctx, sliceCache))
	expectDenied(t, "update liqo-remote-certificate-slice-1", agent.Update(ctx, sliceCache, client.DryRunAll))
	expectAllowed(t, "delete liqo-remote-certificate-slice-1 (revocation in Liqo mode)", agent.Delete(ctx, sliceCache))
	lookalike := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: "liqo-remote-certificates"}}
	expectAllowed(t, "create liqo-remote-certificates (admin)", admin.Create(ctx, lookalike))
	expectDenied(t, "delete liqo-remote-certificates, not a cache", agent.Delete(ctx, lookalike, client.DryRunAll))
	expectDenied(t, "create Secret other in tenant namespace", agent.Create(ctx,
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: "other"}}, client.DryRunAll))
	expectDenied(t, "create liqo-nonce outside tenant namespaces", agent.Create(ctx,
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "liqo-nonce"}}, client.DryRunAll))
	foreign := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "someone-elses"}}
	expectAllowed(t, "create a Secret (admin)", admin.Create(ctx, foreign))
	expectAllowed(t, "read a Secret by name (the accepted tradeoff: get is cluster-wide)", agent.Get(ctx, client.ObjectKeyFromObject(foreign), &corev1.Secret{}))
	expectDenied(t, "update a Secret outside the footprint", agent.Update(ctx, foreign, client.DryRunAll))
	expectDenied(t, "delete a Secret outside the footprint", agent.Delete(ctx, foreign, client.DryRunAll))

	binding := func(ns, role string, subject rbacv1.Subject) *rbacv1.RoleBinding {
		return &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "liqo-binding-" + role},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{subject},
		}
	}
	user := func(name string) rbacv1.Subject {
		return rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: name}
	}
	rb := binding(tenantNS, tenantRole, user("consumer1"))
	expectAllowed(t, "bind the tenant role to the consumer", agent.Create(ctx, rb))
	expectAllowed(t, "get the binding", agent.Get(ctx, client.ObjectKeyFromObject(rb), rb))
	expectAllowed(t, "update the binding", agent.Update(ctx, rb))
	expectDenied(t, "bind cluster-admin", agent.Create(ctx, binding(tenantNS, "cluster-admin", user("consumer1")), client.DryRunAll))
	expectDenied(t, "bind the tenant role to all authenticated users", agent.Create(ctx, binding(tenantNS, tenantRole,
		rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "system:authenticated"}), client.DryRunAll))
	expectDenied(t, "bind the tenant role to another consumer", agent.Create(ctx,
		binding(tenantNS, tenantRole, user("consumer2")), client.DryRunAll))
	expectDenied(t, "bind the tenant role outside tenant namespaces", agent.Create(ctx,
		binding("kube-system", tenantRole, user("consumer1")), client.DryRunAll))
	expectDenied(t, "bind the agent's own role", agent.Create(ctx, binding(tenantNS, "gitpeer-agent", user("consumer1")), client.DryRunAll))
	expectAllowed(t, "delete the binding (Drained)", agent.Delete(ctx, rb))

	cs, err := kubernetes.NewForConfig(agentCfg)
	if err != nil {
		t.Fatal(err)
	}
	testCSRs(ctx, t, admin, agent, cs)
	testLiqoObjects(ctx, t, admin, agent, tenantNS)
	testLiqoMode(ctx, t, admin, agent, tenantNS)
	testLegacyAdoption(ctx, t, admin, agent)

	// Consumer: signed nonce and kubeconfig in the provider's tenant namespace.
	providerNS := "liqo-tenant-provider1"
	expectAllowed(t, "create consumer tenant namespace", agent.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: providerNS, Labels: managed}}))
	for _, name := range []string{"liqo-signed-nonce", "kubeconfig-controlplane-provider1"} {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: providerNS, Name: name}}
		expectAllowed(t, "create "+name, agent.Create(ctx, s))
		expectAllowed(t, "delete "+name, agent.Delete(ctx, s))
	}

	// Own namespace: the cluster key, events, the leader-election lease.
	expectAllowed(t, "create authentication-keys", agent.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: systemNamespace, Name: "authentication-keys"}, Immutable: ptr.To(true)}))
	expectDenied(t, "create authentication-keys elsewhere", agent.Create(ctx,
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "authentication-keys"}}, client.DryRunAll))
	records := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: systemNamespace, Name: "gitpeer-records-peering-3f"}}
	expectAllowed(t, "create the serial records gitpeer-records-peering-3f", agent.Create(ctx, records))
	expectAllowed(t, "update the serial records", agent.Update(ctx, records))
	expectDenied(t, "create gitpeer-records-* outside the agent's namespace", agent.Create(ctx,
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: "gitpeer-records-peering-3f"}}, client.DryRunAll))
	// gitpeer 0.1.0's single records Secret, which the agent moves to gitpeer-records-* and deletes.
	legacy := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: systemNamespace, Name: "gitpeer-issued-peering"}}
	expectAllowed(t, "create gitpeer 0.1.0's records Secret (as gitpeer 0.1.0 did)", agent.Create(ctx, legacy))
	expectAllowed(t, "delete gitpeer 0.1.0's records Secret", agent.Delete(ctx, legacy))
	expectDenied(t, "create gitpeer-issued-* outside the agent's namespace", agent.Create(ctx,
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: "gitpeer-issued-peering"}}, client.DryRunAll))
	now := metav1.NowMicro()
	expectAllowed(t, "record an event", agent.Create(ctx, &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: systemNamespace, GenerateName: "gitpeer-"}, EventTime: now,
		ReportingController: "gitpeer", ReportingInstance: "gitpeer-agent", Action: "Issued", Reason: "Issued", Type: corev1.EventTypeNormal,
		Regarding: corev1.ObjectReference{Kind: "PeeringRepository", Namespace: systemNamespace, Name: "p"},
	}))
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: systemNamespace, Name: "gitpeer-leader"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("agent-1")}}
	expectAllowed(t, "take the lease", agent.Create(ctx, lease))
	lease.Spec.HolderIdentity = ptr.To("")
	expectAllowed(t, "release the lease", agent.Update(ctx, lease))

	// Namespaces: only tenant namespaces, deleted only when the agent created them.
	expectAllowed(t, "delete own tenant namespace", agent.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenantNS}}, client.DryRunAll))
	expectAllowed(t, "create a Liqo tenant namespace (admin)", admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "liqo-tenant-by-liqo"}}))
	expectDenied(t, "delete a tenant namespace the agent did not create", agent.Delete(ctx,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "liqo-tenant-by-liqo"}}, client.DryRunAll))
	expectDenied(t, "delete kube-public", agent.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-public"}}, client.DryRunAll))
	expectDenied(t, "label kube-system", agent.Patch(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-system"}},
		client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"labels":{"x":"y"}}}`)), client.DryRunAll))
	testNamespaceAdoption(ctx, t, admin, agent, providerNS)
}

// testNamespaceAdoption checks the agent cannot take over a tenant namespace it did not create: it
// may not add its labels to an existing namespace, change its owner, or delete a namespace that
// lacks the owner label; it may still annotate and delete its own (providerNS), and adopt one of
// an earlier version or one Liqo created (owner label only).
func testNamespaceAdoption(ctx context.Context, t *testing.T, admin, agent client.Client, providerNS string) {
	labels := func(name, labels string) error {
		return agent.Patch(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}},
			client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"labels":`+labels+`}}`)), client.DryRunAll)
	}
	foreign := "liqo-tenant-by-liqo" // created by the admin, no labels
	expectDenied(t, "add the owner label to a namespace the agent did not create", labels(foreign, `{"`+ownerLabel+`":"uid-of-peering"}`))
	expectDenied(t, "add managed-by gitpeer to a namespace the agent did not create", labels(foreign, `{"app.kubernetes.io/managed-by":"gitpeer"}`))
	expectDenied(t, "change the owner of its own namespace", labels(providerNS, `{"`+ownerLabel+`":"uid-of-another-peering"}`))
	expectAllowed(t, "label a namespace it did not create with other labels", labels(foreign, `{"x":"y"}`))
	expectAllowed(t, "patch its own namespace keeping its labels", labels(providerNS, `{"app.kubernetes.io/managed-by":"gitpeer","x":"y"}`))

	legacy := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "liqo-tenant-managed-no-owner",
		Labels: map[string]string{"app.kubernetes.io/managed-by": "gitpeer"}}}
	expectAllowed(t, "create a namespace labelled managed-by gitpeer only (admin)", admin.Create(ctx, legacy))
	expectDenied(t, "delete a namespace labelled managed-by gitpeer without owner",
		agent.Delete(ctx, legacy, client.DryRunAll))
	expectAllowed(t, "adopt a namespace of an earlier version (add the owner label)", labels(legacy.Name, `{"`+ownerLabel+`":"uid-of-peering"}`))
	expectDenied(t, "adopt a namespace of an earlier version by adding managed-by too", labels(foreign, `{"app.kubernetes.io/managed-by":"gitpeer","`+ownerLabel+`":"uid-of-peering"}`))

	// A tenant namespace Liqo created (liqotech/liqo pkg/tenantNamespace, ForgeNamespace) may gain the
	// owner label, never managed-by, and so is never deletable by the agent.
	byLiqo := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "liqo-tenant-c-liqo",
		Labels: map[string]string{"liqo.io/tenant-namespace": "true", "liqo.io/remote-cluster-id": "c-liqo"}}}
	expectAllowed(t, "create a tenant namespace as Liqo does (admin)", admin.Create(ctx, byLiqo))
	expectAllowed(t, "adopt a tenant namespace Liqo created (add the owner label)", labels(byLiqo.Name, `{"`+ownerLabel+`":"uid-of-peering"}`))
	expectDenied(t, "adopt a tenant namespace Liqo created with managed-by gitpeer", labels(byLiqo.Name, `{"app.kubernetes.io/managed-by":"gitpeer","`+ownerLabel+`":"uid-of-peering"}`))
	wrongPeer := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "liqo-tenant-c-other",
		Labels: map[string]string{"liqo.io/tenant-namespace": "true", "liqo.io/remote-cluster-id": "c-liqo"}}}
	expectAllowed(t, "create a namespace with Liqo's labels naming another peer (admin)", admin.Create(ctx, wrongPeer))
	expectDenied(t, "adopt a namespace whose Liqo labels name another peer", labels(wrongPeer.Name, `{"`+ownerLabel+`":"uid-of-peering"}`))
	expectDenied(t, "delete a tenant namespace Liqo created", agent.Delete(ctx, byLiqo, client.DryRunAll))
	expectAllowed(t, "delete its own namespace", agent.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: providerNS}}, client.DryRunAll))
}

// testCSRs checks the agent creates only labelled kube-apiserver-client CSRs, and approves and
// deletes only CSRs it requested itself.
func testCSRs(ctx context.Context, t *testing.T, admin, agent client.Client, cs kubernetes.Interface) {
	client1 := certificatesv1.KubeAPIServerClientSignerName
	own := newCSR(t, client1, csrLabels("consumer1"))
	expectAllowed(t, "create a labelled client CSR", agent.Create(ctx, own))
	expectAllowed(t, "approve a CSR the agent requested", approve(ctx, cs, own))

	expectDenied(t, "create a client CSR without the gitpeer labels", agent.Create(ctx, newCSR(t, client1, nil), client.DryRunAll))
	noOwner := csrLabels("consumer1")
	delete(noOwner, ownerLabel)
	expectDenied(t, "create a client CSR without the owner label", agent.Create(ctx, newCSR(t, client1, noOwner), client.DryRunAll))
	for _, signer := range []string{"example.com/custom", certificatesv1.KubeletServingSignerName, certificatesv1.KubeAPIServerClientKubeletSignerName} {
		expectDenied(t, "create a labelled CSR for "+signer, agent.Create(ctx, newCSR(t, signer, csrLabels("consumer1")), client.DryRunAll))
	}

	// A CSR someone else requested, even with the agent's labels and signer, is not the agent's.
	foreign := newCSR(t, client1, csrLabels("foreign"))
	expectAllowed(t, "create a labelled client CSR (admin)", admin.Create(ctx, foreign))
	expectDenied(t, "approve a CSR another user requested", approve(ctx, cs, foreign))
	expectDenied(t, "delete a CSR another user requested", agent.Delete(ctx, foreign, client.DryRunAll))
	expectDenied(t, "update the labels of its own CSR", agent.Patch(ctx, own,
		client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"labels":{"x":"y"}}}`)), client.DryRunAll))

	expectAllowed(t, "delete its CSRs by label (revocation)", agent.DeleteAllOf(ctx, &certificatesv1.CertificateSigningRequest{},
		client.MatchingLabels{"gitpeer.io/consumer": "consumer1"}))
	expectDenied(t, "delete another user's CSR by label", agent.DeleteAllOf(ctx, &certificatesv1.CertificateSigningRequest{},
		client.MatchingLabels{"gitpeer.io/consumer": "foreign"}))
}

// testLiqoObjects checks Tenants and Identities (and their status) are written only in
// liqo-tenant-* namespaces.
func testLiqoObjects(ctx context.Context, t *testing.T, admin, agent client.Client, tenantNS string) {
	liqo := func(kind, ns, name string) *unstructured.Unstructured {
		o := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{}}}
		o.SetAPIVersion("authentication.liqo.io/v1beta1")
		o.SetKind(kind)
		o.SetNamespace(ns)
		o.SetName(name)
		return o
	}
	status := client.RawPatch("application/merge-patch+json", []byte(`{"status":{}}`))
	for _, kind := range []string{"Tenant", "Identity"} {
		mine := liqo(kind, tenantNS, "consumer1")
		expectAllowed(t, "create "+kind+" in a tenant namespace", agent.Create(ctx, mine))
		expectAllowed(t, "update "+kind+" in a tenant namespace", agent.Update(ctx, mine))
		expectAllowed(t, "patch the status of "+kind+" in a tenant namespace", agent.Status().Patch(ctx, mine, status))
		expectDenied(t, "create "+kind+" outside tenant namespaces", agent.Create(ctx, liqo(kind, "default", "consumer1"), client.DryRunAll))
		other := liqo(kind, "default", "by-someone")
		expectAllowed(t, "create "+kind+" outside tenant namespaces (admin)", admin.Create(ctx, other))
		expectDenied(t, "patch the status of "+kind+" outside tenant namespaces", agent.Status().Patch(ctx, other, status, client.DryRunAll))
		expectDenied(t, "delete "+kind+" outside tenant namespaces", agent.Delete(ctx, other, client.DryRunAll))
		expectAllowed(t, "delete "+kind+" in a tenant namespace", agent.Delete(ctx, mine))
	}
}

// testLiqoMode checks what Liqo mode needs of Liqo's own objects: its cluster
// ID and key are read, never written; its cached certificate in a tenant
// namespace is deleted at revocation, and nothing else is done to it.
func testLiqoMode(ctx context.Context, t *testing.T, admin, agent client.Client, tenantNS string) {
	const liqoNS = "liqo"
	clusterID := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: liqoNS, Name: "liqo-clusterid-configmap"}, Data: map[string]string{"CLUSTER_ID": "c1"}}
	keys := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: liqoNS, Name: "authentication-keys"}, StringData: map[string]string{"privateKey": "k"}}
	cached := func(ns string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "liqo-remote-certificate"}}
	}
	for _, obj := range []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: liqoNS}}, clusterID, keys, cached(tenantNS), cached("default")} {
		if err := admin.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	expectAllowed(t, "read Liqo's cluster ID", agent.Get(ctx, client.ObjectKeyFromObject(clusterID), &corev1.ConfigMap{}))
	expectAllowed(t, "read Liqo's key", agent.Get(ctx, client.ObjectKeyFromObject(keys), &corev1.Secret{}))
	expectDenied(t, "update Liqo's cluster ID", agent.Update(ctx, clusterID, client.DryRunAll))
	expectDenied(t, "update Liqo's key", agent.Update(ctx, keys, client.DryRunAll))
	expectDenied(t, "delete Liqo's key", agent.Delete(ctx, keys, client.DryRunAll))
	expectDenied(t, "create Liqo's key", agent.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: liqoNS, Name: "authentication-keys"}}, client.DryRunAll))
	expectDenied(t, "update liqo-remote-certificate", agent.Update(ctx, cached(tenantNS), client.DryRunAll))
	expectDenied(t, "delete liqo-remote-certificate outside tenant namespaces", agent.Delete(ctx, cached("default"), client.DryRunAll))
	expectAllowed(t, "delete liqo-remote-certificate in a tenant namespace", agent.Delete(ctx, cached(tenantNS)))
	expectDenied(t, "create liqo-remote-certificate (Liqo writes it)", agent.Create(ctx, cached(tenantNS), client.DryRunAll))
}

func expectAllowed(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Errorf("%s: %v", what, err)
	}
}

func expectDenied(t *testing.T, what string, err error) {
	t.Helper()
	if !apierrors.IsForbidden(err) {
		t.Errorf("%s: want forbidden, got %v", what, err)
	}
}

// csrLabels are the labels the agent puts on the CSRs it creates.
func csrLabels(consumer string) map[string]string {
	return map[string]string{"gitpeer.io/consumer": consumer, ownerLabel: "uid-of-peering", "app.kubernetes.io/managed-by": "gitpeer"}
}

// newCSR returns a CSR for signer as the agent creates them, named by the API server.
func newCSR(t *testing.T, signer string, labels map[string]string) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: "consumer1", Organization: []string{"liqo.io"}},
	}, key)
	if err != nil {
		t.Fatal(err)
	}
	usages := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth}
	if signer == certificatesv1.KubeletServingSignerName {
		usages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageServerAuth}
	}
	return &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "gitpeer-consumer1-", Labels: labels},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: signer, ExpirationSeconds: ptr.To[int32](600), Usages: usages,
		},
	}
}

// approve approves csr through the approval subresource, as the agent does.
func approve(ctx context.Context, cs kubernetes.Interface, csr *certificatesv1.CertificateSigningRequest) error {
	got, err := cs.CertificatesV1().CertificateSigningRequests().Get(ctx, csr.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	got.Status.Conditions = append(got.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "GitpeerApproved", Message: "test",
	})
	_, err = cs.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, got.Name, got, metav1.UpdateOptions{})
	return err
}

// build decodes kustomize output into objects.
func build(t *testing.T, out string) []*unstructured.Unstructured {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(out), 4096)
	var objs []*unstructured.Unstructured
	for {
		o := &unstructured.Unstructured{}
		if err := dec.Decode(&o.Object); errors.Is(err, io.EOF) {
			return objs
		} else if err != nil {
			t.Fatal(err)
		}
		if len(o.Object) > 0 {
			objs = append(objs, o)
		}
	}
}

// assertExists gets o from the API server. Cluster-scoped kinds are looked up without a namespace,
// whatever kustomize put in metadata.
func assertExists(ctx context.Context, t *testing.T, c client.Client, o *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(o.GroupVersionKind())
	key := client.ObjectKeyFromObject(o)
	if namespaced, err := c.IsObjectNamespaced(o); err != nil {
		t.Errorf("%s %s: %v", o.GetKind(), key, err)
		return got
	} else if !namespaced {
		key.Namespace = ""
	}
	if err := c.Get(ctx, key, got); err != nil {
		t.Errorf("%s %s not found after apply: %v", o.GetKind(), key, err)
	}
	return got
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustAbs(t *testing.T, dir string) string {
	t.Helper()
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}
