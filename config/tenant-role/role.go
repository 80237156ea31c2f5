// Package tenantrole embeds the ClusterRole a provider binds to its consumers
// (Liqo's liqo-remote-controlplane), so tests and the demo install exactly
// what `kubectl apply -k config/default` installs.
package tenantrole

import (
	_ "embed"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

//go:embed cluster_role.yaml
var clusterRoleYAML []byte

// ClusterRole returns the tenant ClusterRole of config/tenant-role.
func ClusterRole() (*rbacv1.ClusterRole, error) {
	role := &rbacv1.ClusterRole{}
	if err := yaml.UnmarshalStrict(clusterRoleYAML, role); err != nil {
		return nil, err
	}
	return role, nil
}
