// Package ownership holds the rules, shared by the provider's and the
// consumer's side, that say which cluster objects a PeeringRepository may
// act on: the objects it created (its owner label), and the legacy objects of
// an earlier version it may adopt. Anyone can create a namespace, a Tenant or
// a Secret with gitpeer's labels: the agent acts only on what these rules
// call its own. The package reads nothing and writes nothing.
package ownership

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// Owner is who an existing object belongs to, relative to one PeeringRepository.
type Owner int

// Owners.
const (
	// Ours: the object carries the PeeringRepository's owner label.
	Ours Owner = iota
	// Others: another PeeringRepository's owner label, or not gitpeer's at all.
	Others
	// Legacy: gitpeer's, from a version without owner labels.
	Legacy
)

var ownerNames = [...]string{"Ours", "Others", "Legacy"}

func (o Owner) String() string { return ownerNames[o] }

// Of returns the owner of an object with labels relative to the
// PeeringRepository of UID uid.
func Of(labels map[string]string, uid types.UID) Owner {
	switch owner, has := labels[vocabulary.OwnerLabel]; {
	case has && owner == string(uid):
		return Ours
	case !has && labels[vocabulary.ManagedByLabel] == vocabulary.ManagedBy:
		return Legacy
	}
	return Others
}

// Migrating reports whether a round of a PeeringRepository with status is its
// one-time migration to owner labels: an earlier version processed it (it has
// a last processed commit) and it has not migrated yet. That round adopts the
// legacy objects of its peerings without AdoptUnownedAnnotation.
func Migrating(status gitpeerv1alpha1.PeeringRepositoryStatus) bool {
	return status.OwnershipVersion < gitpeerv1alpha1.CurrentOwnershipVersion && status.LastProcessedCommit != ""
}

// Claim is what decides whether a PeeringRepository adopts the legacy
// tenant namespace of a peer (and the legacy gitpeer objects in it).
type Claim struct {
	// Annotated: the PeeringRepository carries AdoptUnownedAnnotation=true.
	Annotated bool
	// Migrating: the round is the PeeringRepository's one-time migration (see Migrating).
	Migrating bool
	// Listed: the peer has a directory with this cluster in the PeeringRepository's repository.
	Listed bool
	// Sole: no other PeeringRepository of the cluster could own the
	// namespace (SoleClaimant); observed only when Permitted.
	Sole bool
}

// Permitted reports whether an adoption may be considered at all: an admin
// asked for it with the annotation, or the round is the one-time migration.
func (c Claim) Permitted() bool { return c.Annotated || c.Migrating }

// Adopt says how a legacy namespace is adopted ("by annotation …", "by the
// one-time migration …"), or "" when it is refused: only when Permitted, by
// the sole claimant, for a peer it has a directory of.
func Adopt(c Claim) string {
	if !c.Permitted() || !c.Sole || !c.Listed {
		return ""
	}
	if c.Annotated {
		return "by annotation " + gitpeerv1alpha1.AdoptUnownedAnnotation
	}
	return "by the one-time migration from an earlier version"
}

// SoleClaimant reports whether no PeeringRepository of repos other than the
// one of UID self could own peer's tenant namespace: none other is a
// provider, or a consumer of peer.
func SoleClaimant(self types.UID, peer string, repos []gitpeerv1alpha1.PeeringRepository) bool {
	for _, o := range repos {
		if o.UID != self && (o.IsProvider() || (o.IsConsumer() && slices.Contains(o.Spec.Consumer.Providers, authv1beta1.ClusterID(peer)))) {
			return false
		}
	}
	return true
}

// LiqoCreated reports whether the namespace name with labels is a tenant
// namespace Liqo itself created for peer (`liqoctl peer`, `liqoctl network
// connect`, `liqoctl create nonce` run before gitpeer): none of gitpeer's
// labels, and Liqo's tenant-namespace labels naming peer on the name Liqo
// derives from peer, as Liqo's tenant namespace manager makes it
// (liqotech/liqo v1.2.0 pkg/tenantNamespace/namespaceManager.go, ForgeNamespace).
func LiqoCreated(name string, labels map[string]string, peer string) bool {
	_, owned := labels[vocabulary.OwnerLabel]
	_, managed := labels[vocabulary.ManagedByLabel]
	return !owned && !managed && name == authv1beta1.TenantNamespaceName(authv1beta1.ClusterID(peer)) &&
		labels[authv1beta1.RemoteClusterIDLabel] == peer && labels[authv1beta1.TenantNamespaceLabel] == authv1beta1.TrueValue
}

// LiqoClaim is what decides whether a PeeringRepository adopts a tenant
// namespace Liqo created (LiqoCreated).
type LiqoClaim struct {
	// LiqoMode: the agent runs in Liqo mode; without Liqo, Liqo did not create it.
	LiqoMode bool
	// Listed: the peer has a directory with this cluster in the PeeringRepository's repository.
	Listed bool
	// Sole: no other PeeringRepository of the cluster could own the namespace (SoleClaimant).
	Sole bool
	// Found names what the namespace holds that a peering run by gitpeer would
	// have to trust without having made or verified it: a Tenant, an Identity,
	// a RoleBinding, a ResourceSlice or NamespaceMap, a signed nonce or Liqo's
	// certificate cache (an earlier handshake, or access already granted), or a
	// nonce that is not Liqo's. Networking objects (`liqoctl network connect`)
	// grant no access and are not listed.
	Found []string
}

// Refusal says why the namespace is not adopted, or "" when it is.
func (c LiqoClaim) Refusal() string {
	switch {
	case !c.LiqoMode:
		return "it carries Liqo's labels but the agent does not run in Liqo mode"
	case !c.Listed:
		return "the peer has no directory with this cluster in the repository"
	case !c.Sole:
		return "another PeeringRepository of the cluster could own it"
	case len(c.Found) > 0:
		return "it holds what gitpeer did not make or verify and would have to trust: " + strings.Join(c.Found, ", ")
	}
	return ""
}
