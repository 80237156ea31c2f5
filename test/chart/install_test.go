package chart_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitpeer/gitpeer/test/controlplane"
	"github.com/gitpeer/gitpeer/test/installed"
)

// TestInstall installs the chart with the Helm SDK on a real control plane, as on a cluster where
// Liqo is installed (installLiqoCRDs=false installTenantRole=false), then upgrades it to the
// defaults, then uninstalls it. The API server accepts every object (the CRDs, the RBAC, the
// admission policy with its CEL expressions, the Deployment); there are no nodes, so no pod runs.
func TestInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cp := controlplane.Start(t)
	admin, err := client.New(cp.Config, client.Options{Scheme: clientgoscheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	cfg := helmConfig(t, cp.KubeconfigPath)
	liqoCRDs := []string{"tenants.authentication.liqo.io", "identities.authentication.liqo.io"}

	t.Run("with Liqo installed", func(t *testing.T) {
		install := action.NewInstall(cfg)
		install.ReleaseName, install.Namespace, install.CreateNamespace = "gitpeer", systemNamespace, true
		install.Timeout = time.Minute
		rel, err := install.RunWithContext(ctx, loadChart(t), map[string]any{"installLiqoCRDs": false, "installTenantRole": false})
		if err != nil {
			t.Fatalf("helm install: %v", err)
		}
		assertInstalled(ctx, t, admin, rel)
		for _, name := range liqoCRDs {
			assertAbsent(ctx, t, admin, "apiextensions.k8s.io/v1", "CustomResourceDefinition", "", name)
		}
		assertAbsent(ctx, t, admin, "rbac.authorization.k8s.io/v1", "ClusterRole", "", tenantRole)
	})

	t.Run("upgrade to the defaults", func(t *testing.T) {
		upgrade := action.NewUpgrade(cfg)
		// Without --reset-values an upgrade without values keeps the release's.
		upgrade.Namespace, upgrade.Timeout, upgrade.ResetValues = systemNamespace, time.Minute, true
		rel, err := upgrade.RunWithContext(ctx, "gitpeer", loadChart(t), nil)
		if err != nil {
			t.Fatalf("helm upgrade: %v", err)
		}
		objs := assertInstalled(ctx, t, admin, rel)
		for _, kn := range [][2]string{{"ClusterRole", tenantRole}, {"CustomResourceDefinition", liqoCRDs[0]},
			{"CustomResourceDefinition", liqoCRDs[1]}, {"ValidatingAdmissionPolicy", "gitpeer-agent-writes"},
			{"ValidatingAdmissionPolicyBinding", "gitpeer-agent-writes"}} {
			if find(objs, kn[0], kn[1]) == nil {
				t.Errorf("%s %s is not in the release", kn[0], kn[1])
			}
		}
	})

	// The harness runs no validatingadmissionpolicy-status-controller (no type-checking status); the
	// policy compiled and is enforced: it denies the agent what RBAC alone would allow.
	t.Run("admission policy denies", func(t *testing.T) {
		// RBAC lets the agent create Secrets anywhere; the installed policy narrows that.
		agent := rest.CopyConfig(cp.Config)
		agent.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + systemNamespace + ":gitpeer-agent",
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + systemNamespace, "system:authenticated"}}
		c, err := client.New(agent, client.Options{})
		if err != nil {
			t.Fatal(err)
		}
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "not-the-agents"}}
		// The API server enforces a new policy once its admission plugin has seen it: a moment after the install.
		_ = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			err = c.Create(ctx, secret, client.DryRunAll)
			return apierrors.IsForbidden(err), nil
		})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "gitpeer-agent-writes") {
			t.Errorf("the agent created Secret default/not-the-agents: %v", err)
		}
		secret.Namespace, secret.Name = systemNamespace, "authentication-keys"
		if err := c.Create(ctx, secret, client.DryRunAll); err != nil {
			t.Errorf("the agent may not create its authentication-keys Secret: %v", err)
		}
	})

	t.Run("agent pod passes restricted pod security", func(t *testing.T) {
		// Helm creates the namespace unlabelled; labelled as README says, a server dry-run of the
		// Deployment's pod goes through Pod Security admission as the ReplicaSet's pod would.
		ns := &corev1.Namespace{}
		if err := admin.Get(ctx, client.ObjectKey{Name: systemNamespace}, ns); err != nil {
			t.Fatal(err)
		}
		ns.Labels["pod-security.kubernetes.io/enforce"] = "restricted"
		if err := admin.Update(ctx, ns); err != nil {
			t.Fatal(err)
		}
		dep := &appsv1.Deployment{}
		if err := admin.Get(ctx, client.ObjectKey{Namespace: systemNamespace, Name: "gitpeer-agent"}, dep); err != nil {
			t.Fatal(err)
		}
		if err := installed.CheckRestrictedPod(ctx, admin, systemNamespace, dep); err != nil {
			t.Error(err)
		}
	})

	t.Run("upgrade with every value", func(t *testing.T) {
		// The pod's priorityClassName must name a PriorityClass: the Priority admission plugin
		// resolves it for the pod (the dry-run below) and refuses an unknown one.
		pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "gitpeer-critical"}, Value: 1000000}
		if err := admin.Create(ctx, pc); err != nil {
			t.Fatal(err)
		}
		values := readValues(t, everyValue)
		// The control plane has no prometheus-operator CRDs; TestEveryValue renders those objects.
		metrics := values["metrics"].(map[string]any)
		metrics["serviceMonitor"].(map[string]any)["enabled"] = false
		metrics["prometheusRule"].(map[string]any)["enabled"] = false
		upgrade := action.NewUpgrade(cfg)
		upgrade.Namespace, upgrade.Timeout, upgrade.ResetValues = systemNamespace, time.Minute, true
		rel, err := upgrade.RunWithContext(ctx, "gitpeer", loadChart(t), values)
		if err != nil {
			t.Fatalf("helm upgrade: %v", err)
		}
		// The objects as the API server stored them.
		checkEveryValue(t, assertInstalled(ctx, t, admin, rel))
		dep := &appsv1.Deployment{}
		if err := admin.Get(ctx, client.ObjectKey{Namespace: systemNamespace, Name: "gitpeer-agent"}, dep); err != nil {
			t.Fatal(err)
		}
		if err := installed.CheckRestrictedPod(ctx, admin, systemNamespace, dep); err != nil {
			t.Error(err)
		}
		dep.Spec.Template.Spec.PriorityClassName = "no-such-class"
		if err := installed.CheckRestrictedPod(ctx, admin, systemNamespace, dep); err == nil || !strings.Contains(err.Error(), "no-such-class") {
			t.Errorf("a pod of an unknown PriorityClass was admitted: %v", err)
		}
	})

	t.Run("uninstall keeps the CRDs", func(t *testing.T) {
		if _, err := action.NewUninstall(cfg).Run("gitpeer"); err != nil {
			t.Fatalf("helm uninstall: %v", err)
		}
		for _, name := range append(liqoCRDs, "peeringrepositories.gitpeer.io") {
			o := &unstructured.Unstructured{}
			o.SetAPIVersion("apiextensions.k8s.io/v1")
			o.SetKind("CustomResourceDefinition")
			if err := admin.Get(ctx, client.ObjectKey{Name: name}, o); err != nil || o.GetDeletionTimestamp() != nil {
				t.Errorf("CRD %s was not kept: %v", name, err)
			}
		}
		assertAbsent(ctx, t, admin, "admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy", "", "gitpeer-agent-writes")
	})
}

// helmConfig is the Helm SDK's configuration for the cluster of kubeconfig, with release records
// in Secrets as helm's default.
func helmConfig(t *testing.T, kubeconfig string) *action.Configuration {
	t.Helper()
	flags := genericclioptions.NewConfigFlags(false)
	namespace := systemNamespace
	flags.KubeConfig, flags.Namespace = &kubeconfig, &namespace
	cfg := &action.Configuration{}
	if err := cfg.Init(flags, systemNamespace, "secret", t.Logf); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// assertInstalled checks every object of the release exists in the cluster and returns them, as
// stored, by key.
func assertInstalled(ctx context.Context, t *testing.T, admin client.Client, rel *release.Release) map[string]*unstructured.Unstructured {
	t.Helper()
	if rel.Info.Status != release.StatusDeployed {
		t.Errorf("release status %s", rel.Info.Status)
	}
	objs := index(t, decode(t, rel.Manifest))
	for k, o := range objs {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(o.GroupVersionKind())
		if err := admin.Get(ctx, client.ObjectKeyFromObject(o), got); err != nil {
			t.Errorf("%s: %v", k, err)
			continue
		}
		objs[k] = got
	}
	if len(objs) < 12 {
		t.Errorf("the release has only %d objects", len(objs))
	}
	t.Logf("%d objects installed", len(objs))
	return objs
}

// assertAbsent checks the object does not exist.
func assertAbsent(ctx context.Context, t *testing.T, admin client.Client, apiVersion, kind, namespace, name string) {
	t.Helper()
	o := &unstructured.Unstructured{}
	o.SetAPIVersion(apiVersion)
	o.SetKind(kind)
	err := admin.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, o)
	if !apierrors.IsNotFound(err) {
		t.Errorf("%s %s exists (%v)", kind, name, err)
	}
}
