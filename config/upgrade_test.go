package config_test

import (
	"context"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// testLegacyAdoption checks the admission policy lets the agent make every write of the
// one-time migration of an earlier version's objects (labelled managed-by gitpeer, no owner):
// add the owner label to the tenant namespace (a patch), its Tenant, RoleBinding and nonce Secret by an
// update, and delete a CSR it requested itself that has no owner label.
func testLegacyAdoption(ctx context.Context, t *testing.T, admin, agent client.Client) {
	ns := "liqo-tenant-legacy1"
	legacy := map[string]string{"app.kubernetes.io/managed-by": "gitpeer", "liqo.io/remote-cluster-id": "legacy1"}
	tenant := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{}}}
	tenant.SetAPIVersion("authentication.liqo.io/v1beta1")
	tenant.SetKind("Tenant")
	tenant.SetNamespace(ns)
	tenant.SetName("legacy1")
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		tenant,
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "liqo-binding-" + tenantRole},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: tenantRole},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "legacy1"}}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "liqo-nonce"}, StringData: map[string]string{"nonce": "n"}},
	}
	for _, obj := range objs {
		labels := map[string]string{}
		for k, v := range legacy {
			labels[k] = v
		}
		obj.SetLabels(labels)
		expectAllowed(t, "create an earlier version's "+obj.GetName()+" (admin)", admin.Create(ctx, obj))
	}
	expectAllowed(t, "adopt an earlier version's namespace by a patch adding the owner label", agent.Patch(ctx, objs[0],
		client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"labels":{"`+ownerLabel+`":"uid-of-peering"}}}`)), client.DryRunAll))
	// The others are updated, not patched: the agent may not patch Secrets and RoleBindings.
	for _, obj := range objs[1:] {
		obj.GetLabels()[ownerLabel] = "uid-of-peering"
		expectAllowed(t, "adopt an earlier version's "+obj.GetName()+" by an update adding the owner label", agent.Update(ctx, obj, client.DryRunAll))
	}

	// A CSR the agent requested under an earlier version: labelled, no owner label.
	csr := newCSR(t, certificatesv1.KubeAPIServerClientSignerName, csrLabels("legacy1"))
	expectAllowed(t, "create a labelled client CSR", agent.Create(ctx, csr))
	delete(csr.Labels, ownerLabel)
	expectAllowed(t, "drop the owner label of a CSR (admin), as an earlier version's CSR", admin.Update(ctx, csr))
	expectAllowed(t, "delete a CSR it requested under an earlier version", agent.Delete(ctx, csr, client.DryRunAll))
}
