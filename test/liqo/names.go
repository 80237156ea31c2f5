package liqo

import authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"

// Names Liqo's tenant controller gives what it creates (Liqo v1.2.0 A/tenant-controller).
const (
	// TenantFinalizer is added to every Tenant the controller reconciles.
	TenantFinalizer = "tenant.liqo.io/finalizer"
	// TenantCSRLabel marks the Kubernetes CSRs the controller creates (value "true").
	TenantCSRLabel = "liqo.io/remote-tenant-csr"
	// TenantCSRPrefix is the generateName of those CSRs.
	TenantCSRPrefix = "liqo-identity-"
	// TenantRoleBinding binds the remote-controlplane ClusterRole in the tenant namespace.
	TenantRoleBinding = authv1beta1.RoleBindingPrefix + authv1beta1.RemoteControlPlaneClusterRole
)
