// Package status collects the peerings of a cluster, as `gitpeer status`
// prints them: each PeeringRepository's status.peerings joined with the
// Tenant (provider role) or Identity (consumer role) of the peer, plus any
// Tenant or Identity no PeeringRepository accounts for (e.g. made by liqoctl).
package status

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/crypto"
)

// Row is one row of `gitpeer status`.
type Row struct {
	// Namespace and Repository name the PeeringRepository; empty for a
	// Tenant or Identity that no PeeringRepository reports.
	Namespace  string                      `json:"namespace,omitempty"`
	Repository string                      `json:"repository,omitempty"`
	Role       gitpeerv1alpha1.PeeringRole `json:"role"`
	Peer       string                      `json:"peer"`
	Phase      string                      `json:"phase,omitempty"`
	Since      *time.Time                  `json:"since,omitempty"`
	Message    string                      `json:"message,omitempty"`
	// Object is the Tenant (provider role) or Identity (consumer role), as
	// namespace/name, when it exists.
	Object string `json:"object,omitempty"`
	// Condition is the Tenant's spec.tenantCondition.
	Condition string `json:"condition,omitempty"`
	// Expires is when the issued certificate expires.
	Expires *time.Time `json:"certificateExpires,omitempty"`
}

// Collect lists the peerings of the PeeringRepositories in namespace (all
// namespaces when empty), and, for all namespaces, the Tenants and Identities
// none of them reports.
func Collect(ctx context.Context, c client.Reader, namespace string) ([]Row, error) {
	var repos gitpeerv1alpha1.PeeringRepositoryList
	if err := c.List(ctx, &repos, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("list PeeringRepositories: %w", err)
	}
	var tenants authv1beta1.TenantList
	if err := c.List(ctx, &tenants); err != nil {
		return nil, fmt.Errorf("list Tenants: %w", err)
	}
	var identities authv1beta1.IdentityList
	if err := c.List(ctx, &identities); err != nil {
		return nil, fmt.Errorf("list Identities: %w", err)
	}
	objects := map[string]Row{}
	for _, t := range tenants.Items {
		p := Row{Role: gitpeerv1alpha1.ProviderRole, Peer: string(t.Spec.ClusterID), Object: t.Namespace + "/" + t.Name, Condition: string(t.Spec.TenantCondition)}
		if t.Status.AuthParams != nil {
			p.Expires = expiry(t.Status.AuthParams.SignedCRT)
		}
		objects[key(p.Role, p.Peer)] = p
	}
	for _, id := range identities.Items {
		p := Row{Role: gitpeerv1alpha1.ConsumerRole, Peer: string(id.Spec.ClusterID), Object: id.Namespace + "/" + id.Name, Expires: expiry(id.Spec.AuthParams.SignedCRT)}
		objects[key(p.Role, p.Peer)] = p
	}
	var out []Row
	for _, r := range repos.Items {
		for _, s := range r.Status.Peerings {
			p := objects[key(s.Role, string(s.PeerID))]
			delete(objects, key(s.Role, string(s.PeerID)))
			since := s.Since.UTC()
			p.Namespace, p.Repository, p.Role, p.Peer = r.Namespace, r.Name, s.Role, string(s.PeerID)
			p.Phase, p.Since, p.Message = string(s.Phase), &since, s.Message
			out = append(out, p)
		}
	}
	if namespace == "" {
		for _, t := range tenants.Items {
			if p, ok := objects[key(gitpeerv1alpha1.ProviderRole, string(t.Spec.ClusterID))]; ok {
				out = append(out, p)
			}
		}
		for _, id := range identities.Items {
			if p, ok := objects[key(gitpeerv1alpha1.ConsumerRole, string(id.Spec.ClusterID))]; ok {
				out = append(out, p)
			}
		}
	}
	return out, nil
}

func key(role gitpeerv1alpha1.PeeringRole, peer string) string { return string(role) + "/" + peer }

// expiry returns the certificate's NotAfter, or nil if it does not parse.
func expiry(certPEM []byte) *time.Time {
	cert, err := crypto.ParseCertificatePEM(certPEM)
	if err != nil {
		return nil
	}
	t := cert.NotAfter.UTC()
	return &t
}
