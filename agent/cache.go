package agent

import (
	"sync"
	"unique"

	certificatesv1 "k8s.io/api/certificates/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/reconciler"
)

// cacheOptions configure what the agent's informers hold. At 10,000 peerings
// the cache is most of the agent's live memory (a tenant namespace, a Tenant,
// a RoleBinding and a CSR per consumer), so it keeps only what is read:
//   - no managed fields, and the strings of labels and annotation keys shared
//     between objects (the same few keys and values on every gitpeer object);
//     the CA in a Tenant's status, the same for every Tenant, is shared too;
//   - CSRs, watched as metadata only to be woken (the agent reads them from
//     the API server), only those labelled for a consumer by a
//     PeeringRepository, with only their name and those labels;
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
		DefaultTransform: shareStrings(),
		// Every informer the agent reads is started with it (the controllers'
		// watches, and the kinds the reconciler's SetupWithManager registers): a
		// read of any other kind fails instead of starting a cluster-wide
		// informer, and waiting for it to fill, in the middle of a round.
		ReaderFailOnMissingInformer: true,
		ByObject: map[client.Object]cache.ByObject{
			&certificatesv1.CertificateSigningRequest{}: {
				Label:     labels.NewSelector().Add(exists(reconciler.ConsumerLabel), exists(reconciler.OwnerLabel)),
				Transform: keepMetadata(reconciler.ConsumerLabel, reconciler.OwnerLabel),
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

// exists requires label key.
func exists(key string) labels.Requirement {
	r, err := labels.NewRequirement(key, selection.Exists, nil)
	if err != nil {
		panic(err)
	}
	return *r
}

// keepMetadata keeps of an object its name, namespace, UID, resourceVersion
// and the labels named: the informers of objects the agent watches only to be
// woken.
func keepMetadata(labelKeys ...string) toolscache.TransformFunc {
	return func(in any) (any, error) {
		obj, err := meta.Accessor(in)
		if err != nil {
			return in, nil //nolint:nilerr // not an object (a tombstone): left as it is
		}
		var kept map[string]string
		for _, k := range labelKeys {
			if v, ok := obj.GetLabels()[k]; ok {
				if kept == nil {
					kept = map[string]string{}
				}
				kept[k] = unique.Make(v).Value()
			}
		}
		obj.SetLabels(kept)
		obj.SetAnnotations(nil)
		obj.SetManagedFields(nil)
		obj.SetOwnerReferences(nil)
		obj.SetFinalizers(nil)
		obj.SetGenerateName("")
		return in, nil
	}
}

// maxSharedCAs bounds the CAs shareStrings keeps: a cluster's Tenants hold
// one or two (its own, spec.provider.caSecretRef's); others are not shared.
const maxSharedCAs = 8

// shareStrings drops an object's managed fields (the agent never reads them)
// and makes the strings of its labels and of its annotation keys, and the CA
// in a Tenant's status, the ones equal cached objects already hold.
func shareStrings() toolscache.TransformFunc {
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
		obj.SetLabels(shared(obj.GetLabels(), true))
		obj.SetAnnotations(shared(obj.GetAnnotations(), false))
		if t, ok := in.(*authv1beta1.Tenant); ok && t.Status.AuthParams != nil && len(t.Status.AuthParams.CA) > 0 {
			mu.Lock()
			if ca, ok := cas[string(t.Status.AuthParams.CA)]; ok {
				t.Status.AuthParams.CA = ca
			} else if len(cas) < maxSharedCAs {
				cas[string(t.Status.AuthParams.CA)] = t.Status.AuthParams.CA
			}
			mu.Unlock()
		}
		return in, nil
	}
}

// shared returns m with its keys, and its values if values, interned.
func shared(m map[string]string, values bool) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if values {
			v = unique.Make(v).Value()
		}
		out[unique.Make(k).Value()] = v
	}
	return out
}
