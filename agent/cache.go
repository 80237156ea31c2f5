package agent

import (
	"strings"
	"sync"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/reconciler/compact"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// cacheOptions configure what the agent's informers hold. At 10,000 peerings
// the cache is most of the agent's live memory (a tenant namespace, a Tenant,
// a RoleBinding and a CSR per consumer), so it keeps only what is read:
//   - no managed fields, no spec or status of a Namespace, and the strings
//     cached objects have in common shared between them (compactTransform);
//   - CSRs, watched as metadata only to be woken (the agent reads them from
//     the API server), only those labelled for a consumer by a
//     PeeringRepository, with only their name, resourceVersion and those
//     labels (keepMetadata);
//   - ClusterRoles, watched as metadata only for the terms, with only their
//     name and resourceVersion.
//
// Namespaces, Tenants and RoleBindings are not restricted by label: the agent
// must see a foreign object where it would create its own (a namespace with a
// tenant's name, a Tenant or RoleBinding created by someone else) to report
// and skip it rather than fail on it.
//
// The cache deep-copies what it returns, so sharing memory between cached
// objects never shares it with the reconciler.
func cacheOptions(watchNamespace string) cache.Options {
	opts := cache.Options{
		DefaultTransform: compactTransform(),
		// Every informer the agent reads is started with it (the controllers'
		// watches, and the kinds the reconciler's SetupWithManager registers): a
		// read of any other kind fails instead of starting a cluster-wide
		// informer, and waiting for it to fill, in the middle of a round.
		ReaderFailOnMissingInformer: true,
		NewInformer:                 newInformer,
		ByObject: map[client.Object]cache.ByObject{
			&certificatesv1.CertificateSigningRequest{}: {
				Label:     labels.NewSelector().Add(exists(vocabulary.ConsumerLabel), exists(vocabulary.OwnerLabel)),
				Transform: keepMetadata(vocabulary.ConsumerLabel, vocabulary.OwnerLabel),
			},
			&rbacv1.ClusterRole{}: {Transform: keepMetadata()},
		},
	}
	if watchNamespace != "" {
		// Only PeeringRepositories are restricted: the agent also reads the
		// tenant namespaces and the Tenants it manages elsewhere.
		opts.ByObject[&gitpeerv1alpha1.PeeringRepository{}] = cache.ByObject{Namespaces: map[string]cache.Config{watchNamespace: {}}}
	}
	return opts
}

// newInformer is client-go's informer, without the index of namespaces
// controller-runtime gives every informer for the Tenants': the agent reads a
// Tenant by name, and lists them in a namespace only to adopt (from the API
// server: ownership.go), while that index holds a set per tenant namespace,
// ~280 B per Tenant (2.8 MB at 10,000). A List of Tenants in a namespace from
// the cache fails instead.
func newInformer(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
	if _, ok := obj.(*authv1beta1.Tenant); ok {
		indexers = toolscache.Indexers{}
	}
	return toolscache.NewSharedIndexInformer(lw, obj, resync, indexers)
}

// exists requires label key.
func exists(key string) labels.Requirement {
	r, err := labels.NewRequirement(key, selection.Exists, nil)
	if err != nil {
		panic(err)
	}
	return *r
}

// keepMetadata keeps of an object its name, namespace, resourceVersion and
// the labels named, in compact form (compact.Metadata; a read of the cache
// gets metav1.PartialObjectMetadata back): the informers of objects the agent
// watches only to be woken (which read their labels, and the terms a
// ClusterRole's resourceVersion).
func keepMetadata(labelKeys ...string) toolscache.TransformFunc {
	return func(in any) (any, error) {
		if m, ok := in.(*compact.Metadata); ok {
			return m, nil
		}
		obj, err := meta.Accessor(in)
		if err != nil {
			return in, nil //nolint:nilerr // not an object (a tombstone): left as it is
		}
		return compact.NewMetadata(obj, labelKeys...), nil
	}
}

// maxSharedCAs bounds the CAs compactTransform shares: a cluster's Tenants hold
// one or two (its own, spec.provider.caSecretRef's); others are not shared.
const maxSharedCAs = 8

// compactTransform makes a cached object small (measured by BenchmarkCacheByKind; at
// 10,000 peerings most of the cache is strings, maps and the objects' structs):
//   - it drops managed fields, never read;
//   - it makes the strings of labels, of annotation keys, names and
//     namespaces the ones equal cached objects already hold (a tenant
//     namespace's name is also its label, its Tenant's and RoleBinding's
//     namespace; a consumer's ID its Tenant's name and its RoleBinding's
//     subject), and so the strings of a Tenant's spec and status and of a
//     RoleBinding's role and subject;
//   - it keeps a Namespace in compact form (reconciler/compact: a read of
//     the cache gets a full Namespace back), without its spec and status
//     (its finalizers and phase), owner references and annotations but
//     gitpeer's: the agent reads of a namespace its metadata only, of its
//     annotations only gitpeer's (the mode, the pins, the revocation), and
//     writes it only with patches (which do not send what was not changed).
//     Every namespace of the cluster is cached, not only tenant namespaces:
//     others' annotations can be large
//     (kubectl.kubernetes.io/last-applied-configuration);
//   - it keeps a RoleBinding in compact form, whole (the agent updates the
//     RoleBindings it reads: an update without a field would remove it);
//   - it keeps a Tenant in compact form, whole for the same reason, its PEM
//     as DER, and the CA in its status, the same for every Tenant of a
//     provider, shared.
//
// Sharing is safe: strings are immutable, and the cache deep-copies the
// objects it returns.
func compactTransform() toolscache.TransformFunc {
	var mu sync.Mutex
	cas := map[string][]byte{}
	return func(in any) (any, error) {
		obj, err := meta.Accessor(in)
		if err != nil {
			return in, nil //nolint:nilerr // not an object (a tombstone): left as it is
		}
		if obj.GetManagedFields() != nil { // nil check: kubernetes/kubernetes#124337
			obj.SetManagedFields(nil)
		}
		switch o := in.(type) {
		case *corev1.Namespace:
			return compact.NewNamespace(o, isGitpeerAnnotation), nil
		case *rbacv1.RoleBinding:
			return compact.NewRoleBinding(o), nil
		case *authv1beta1.Tenant:
			if ap := o.Status.AuthParams; ap != nil && len(ap.CA) > 0 {
				mu.Lock()
				if ca, ok := cas[string(ap.CA)]; ok {
					ap.CA = ca
				} else if len(cas) < maxSharedCAs {
					cas[string(ap.CA)] = ap.CA
				}
				mu.Unlock()
			}
			return compact.NewTenant(o), nil
		case *compact.Namespace, *compact.RoleBinding, *compact.Tenant:
			return o, nil
		}
		obj.SetLabels(shared(obj.GetLabels(), true))
		obj.SetAnnotations(shared(obj.GetAnnotations(), false))
		obj.SetName(compact.Intern(obj.GetName()))
		obj.SetNamespace(compact.Intern(obj.GetNamespace()))
		return in, nil
	}
}

// isGitpeerAnnotation reports whether the annotation key is one of
// gitpeer's, the only ones the agent reads on a Namespace.
func isGitpeerAnnotation(key string) bool { return strings.HasPrefix(key, "gitpeer.io/") }

// shared returns m with its keys, and its values if values, interned.
func shared(m map[string]string, values bool) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if values {
			v = compact.Intern(v)
		}
		out[compact.Intern(k)] = v
	}
	return out
}
