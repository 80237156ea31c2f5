package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
)

// liqoVersion is the Liqo version the harness is built from, set by the
// Makefile (-X main.liqoVersion=$(LIQO_VERSION)); the cluster-ID ConfigMap
// carries it as the chart's would.
var liqoVersion string

// Where Liqo's source keeps its CRDs and the rules of its chart's ClusterRoles.
const (
	crdDir   = "deployments/liqo/charts/liqo-crds/crds"
	rulesDir = "deployments/liqo/files"
	// nameLabel is the label the tenant controller selects its ClusterRoles by.
	nameLabel = "app.kubernetes.io/name"
	// versionLabel is the label Liqo's chart puts the Liqo version in, on every object it
	// installs (deployments/liqo/templates/_helpers.tpl, "liqo.labels").
	versionLabel = "app.kubernetes.io/version"
	owner        = client.FieldOwner("liqo-auth-harness")
)

// chartClusterRoles are the ClusterRoles of Liqo's chart that its
// controllers bind, with their app.kubernetes.io/name values: the tenant
// controller selects the first two by it (liqotech/liqo v1.2.0
// pkg/liqo-controller-manager/authentication/tenant-controller/tenant_controller.go),
// the NamespaceMap controller binds the third by name in every offloaded
// namespace (pkg/consts/namespace_mapping.go RemoteNamespaceClusterRoleName;
// deployments/liqo/templates/liqo-controlplane-rbac.yaml and liqo-virtual-kubelet-remote.yaml).
var chartClusterRoles = map[string]string{
	"liqo-remote-controlplane":                "remote-controlplane",
	"liqo-virtual-kubelet-remote-clusterwide": "virtual-kubelet-remote-clusterwide",
	"liqo-virtual-kubelet-remote":             "virtual-kubelet-remote",
}

// install applies what Liqo's chart installs and its authentication module
// and NamespaceMap controller need: every CRD of Liqo (waiting until each is
// established), Liqo's namespace, the cluster-ID ConfigMap (deployments/liqo/templates/liqo-clusterid-configmap.yaml)
// and chartClusterRoles with the rules of the chart's files. Server-side
// apply with force takes over copies another installer (gitpeer) made first,
// as a Helm install of Liqo would replace them.
func install(ctx context.Context, c client.Client, src, namespace string, clusterID liqov1beta1.ClusterID) error {
	crds, err := filepath.Glob(filepath.Join(src, crdDir, "*.yaml"))
	if err != nil {
		return err
	}
	if len(crds) == 0 {
		return fmt.Errorf("no CRDs in %s", filepath.Join(src, crdDir))
	}
	var names []string
	for _, path := range crds {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := readYAML(path, crd); err != nil {
			return err
		}
		crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
		if err := apply(ctx, c, crd); err != nil {
			return err
		}
		names = append(names, crd.Name)
	}
	for _, name := range names {
		if err := waitEstablished(ctx, c, name); err != nil {
			return err
		}
	}
	objs := []client.Object{
		&corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
			ObjectMeta: metav1.ObjectMeta{Name: namespace}},
		&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: "liqo-clusterid-configmap", Namespace: namespace,
				Labels: chartLabels("clusterid-configmap")},
			Data: map[string]string{"CLUSTER_ID": string(clusterID)}},
	}
	for name, label := range chartClusterRoles {
		role := &rbacv1.ClusterRole{}
		if err := readYAML(filepath.Join(src, rulesDir, name+"-ClusterRole.yaml"), role); err != nil {
			return err
		}
		role.TypeMeta = metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"}
		role.ObjectMeta = metav1.ObjectMeta{Name: name, Labels: map[string]string{nameLabel: label}}
		objs = append(objs, role)
	}
	for _, obj := range objs {
		if err := apply(ctx, c, obj); err != nil {
			return err
		}
	}
	return nil
}

// chartLabels are the labels of Liqo's chart the harness gives the object
// named name: its name and, when known, the Liqo version.
func chartLabels(name string) map[string]string {
	l := map[string]string{nameLabel: name}
	if liqoVersion != "" {
		l[versionLabel] = liqoVersion
	}
	return l
}

func readYAML(path string, into any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := yaml.UnmarshalStrict(data, into); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func apply(ctx context.Context, c client.Client, obj client.Object) error {
	if err := c.Patch(ctx, obj, client.Apply, owner, client.ForceOwnership); err != nil { //nolint:staticcheck // typed apply of a whole object
		return fmt.Errorf("apply %T %s: %w", obj, obj.GetName(), err)
	}
	return nil
}

func waitEstablished(ctx context.Context, c client.Client, name string) error {
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
			return false, err
		}
		for _, cond := range crd.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("CRD %s not established: %w", name, err)
	}
	return nil
}
