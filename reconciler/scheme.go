package reconciler

import (
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ClientOptions are the manager client options the reconciler needs: Secrets
// are read from the API server by name, never listed, watched or cached, so
// the agent needs no list/watch on Secrets and holds none in memory.
func ClientOptions() client.Options {
	return client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}}
}
