// Package whoami asks a Kubernetes API server who a client authenticates as
// (a SelfSubjectReview): the agent learns so the user its CSRs are requested
// by, and a consumer proves that a kubeconfig a provider issued it works and
// names it.
package whoami

import (
	"context"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// User is the user name the API server cfg points to authenticates cfg as.
func User(ctx context.Context, cfg *rest.Config) (string, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", err
	}
	review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	return review.Status.UserInfo.Username, nil
}

// Kubeconfig is the user name the API server of kubeconfig's current context
// authenticates it as.
func Kubeconfig(ctx context.Context, kubeconfig []byte) (string, error) {
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		return "", err
	}
	return User(ctx, cfg)
}
