// Package apis gathers the API types gitpeer reads and writes: its own
// PeeringRepository (gitpeer/v1alpha1) and Liqo's authentication types
// (authentication/v1beta1).
package apis

import (
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

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
