// Package status collects the peerings of a cluster, as `gitpeer status`
// prints them: each PeeringRepository's counts by role and phase and the
// peerings its status lists (those that need attention, then the most
// recently changed), joined with the Tenant (provider role) or Identity
// (consumer role) of the peer; then the Tenants and Identities each
// PeeringRepository owns (label gitpeer.io/owner) but does not list; and any
// Tenant or Identity none of them accounts for (e.g. made by liqoctl).
package status

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// Row is one row of `gitpeer status`.
type Row struct {
	// Namespace and Repository name the PeeringRepository; empty for a
	// Tenant or Identity that no PeeringRepository reports.
	Namespace  string                      `json:"namespace,omitempty"`
	Repository string                      `json:"repository,omitempty"`
	Role       gitpeerv1alpha1.PeeringRole `json:"role"`
	Peer       string                      `json:"peer"`
	// Phase, Since, Reason and Message are as the PeeringRepository's
	// status lists them; empty for a peering it does not list.
	Phase   string     `json:"phase,omitempty"`
	Since   *time.Time `json:"since,omitempty"`
	Reason  string     `json:"reason,omitempty"`
	Message string     `json:"message,omitempty"`
	// Object is the Tenant (provider role) or Identity (consumer role), as
	// namespace/name, when it exists.
	Object string `json:"object,omitempty"`
	// Condition is the Tenant's spec.tenantCondition.
	Condition string `json:"condition,omitempty"`
	// Expires is when the issued certificate expires.
	Expires *time.Time `json:"certificateExpires,omitempty"`

	owner string // the UID of the PeeringRepository that owns the object
}

// Report is what `gitpeer status` prints.
type Report struct {
	// Repositories sum up the peerings of each PeeringRepository.
	Repositories []Repository `json:"repositories"`
	// Peerings are the peerings listed by the PeeringRepositories' status, the
	// Tenants and Identities they own, and those no PeeringRepository accounts for.
	Peerings []Row `json:"peerings"`
	// Unwatched are the PeeringRepositories in a namespace none of the cluster's agent
	// Deployments watches: no agent acts on them.
	Unwatched []Unwatched `json:"unwatched,omitempty"`
}

// Repository sums up the peerings of one PeeringRepository.
type Repository struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Counts are the peerings by role and phase.
	Counts []gitpeerv1alpha1.PeeringCount `json:"counts,omitempty"`
	// NeedingAttention is the number of peerings that need attention.
	NeedingAttention int32 `json:"needingAttention,omitempty"`
	// Unlisted is the number of peerings its status does not list.
	Unlisted int32 `json:"unlisted,omitempty"`
}

// Collect reports the PeeringRepositories in namespace (all namespaces when
// empty) and their peerings, and, for all namespaces, the Tenants and
// Identities none of them accounts for; and the PeeringRepositories no installed agent watches.
func Collect(ctx context.Context, c client.Reader, namespace string) (*Report, error) {
	var repos gitpeerv1alpha1.PeeringRepositoryList
	if err := c.List(ctx, &repos, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("list PeeringRepositories: %w", err)
	}
	objects, order, err := liqoObjects(ctx, c)
	if err != nil {
		return nil, err
	}
	report := &Report{Repositories: []Repository{}, Peerings: []Row{}, Unwatched: unwatched(repos.Items, installedAgents(ctx, c))}
	take := func(k string) (Row, bool) {
		p, ok := objects[k]
		delete(objects, k)
		return p, ok
	}
	for _, r := range repos.Items {
		report.Repositories = append(report.Repositories, Repository{Namespace: r.Namespace, Name: r.Name, Counts: r.Status.PeeringCounts,
			NeedingAttention: r.Status.PeeringsNeedingAttention, Unlisted: r.Status.PeeringsOmitted})
		for _, s := range r.Status.Peerings {
			p, _ := take(key(s.Role, string(s.PeerID)))
			since := s.Since.UTC()
			p.Namespace, p.Repository, p.Role, p.Peer = r.Namespace, r.Name, s.Role, string(s.PeerID)
			p.Phase, p.Since, p.Reason, p.Message = string(s.Phase), &since, s.Reason, s.Message
			report.Peerings = append(report.Peerings, p)
		}
		for _, k := range order {
			if p, ok := objects[k]; ok && p.owner == string(r.UID) {
				take(k)
				p.Namespace, p.Repository = r.Namespace, r.Name
				report.Peerings = append(report.Peerings, p)
			}
		}
	}
	if namespace == "" {
		for _, k := range order {
			if p, ok := take(k); ok {
				report.Peerings = append(report.Peerings, p)
			}
		}
	}
	return report, nil
}

// liqoObjects returns the Tenants and Identities of the cluster as peerings,
// by key, and their keys in listing order (Tenants first).
func liqoObjects(ctx context.Context, c client.Reader) (map[string]Row, []string, error) {
	var tenants authv1beta1.TenantList
	if err := c.List(ctx, &tenants); err != nil {
		return nil, nil, fmt.Errorf("list Tenants: %w", err)
	}
	var identities authv1beta1.IdentityList
	if err := c.List(ctx, &identities); err != nil {
		return nil, nil, fmt.Errorf("list Identities: %w", err)
	}
	objects := map[string]Row{}
	var order []string
	add := func(p Row) {
		k := key(p.Role, p.Peer)
		objects[k] = p
		order = append(order, k)
	}
	for _, t := range tenants.Items {
		p := Row{Role: gitpeerv1alpha1.ProviderRole, Peer: string(t.Spec.ClusterID), Object: t.Namespace + "/" + t.Name,
			Condition: string(t.Spec.TenantCondition), owner: t.Labels[vocabulary.OwnerLabel]}
		if t.Status.AuthParams != nil {
			p.Expires = expiry(t.Status.AuthParams.SignedCRT)
		}
		add(p)
	}
	for _, id := range identities.Items {
		add(Row{Role: gitpeerv1alpha1.ConsumerRole, Peer: string(id.Spec.ClusterID), Object: id.Namespace + "/" + id.Name,
			Expires: expiry(id.Spec.AuthParams.SignedCRT), owner: id.Labels[vocabulary.OwnerLabel]})
	}
	return objects, order, nil
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
