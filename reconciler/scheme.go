package reconciler

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
)

// NewScheme returns a scheme with the Kubernetes built-in types, Liqo's
// authentication types and gitpeer's PeeringRepository.
func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(authv1beta1.AddToScheme(s))
	utilruntime.Must(gitpeerv1alpha1.AddToScheme(s))
	return s
}

// ClientOptions are the manager client options the reconciler needs: Secrets
// are read from the API server by name, never listed, watched or cached, so
// the agent needs no list/watch on Secrets and holds none in memory.
func ClientOptions() client.Options {
	return client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}}
}
