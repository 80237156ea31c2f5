package preflight

import (
	"context"
	"fmt"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// installRights are what installing gitpeer (the chart or config/) creates, and the right its
// ClusterRole grants that Kubernetes lets only a holder grant (RBAC's escalation check): approving
// CSRs of the kube-apiserver-client signer. Namespaced ones are checked in the agent's namespace.
var installRights = []authorizationv1.ResourceAttributes{
	{Verb: "create", Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"},
	{Verb: "create", Group: "rbac.authorization.k8s.io", Resource: "clusterroles"},
	{Verb: "create", Group: "rbac.authorization.k8s.io", Resource: "clusterrolebindings"},
	{Verb: "create", Group: "admissionregistration.k8s.io", Resource: "validatingadmissionpolicies"},
	{Verb: "create", Group: "admissionregistration.k8s.io", Resource: "validatingadmissionpolicybindings"},
	{Verb: "create", Resource: "namespaces"},
	{Verb: "create", Group: "apps", Resource: "deployments", Namespace: "-"},
	{Verb: "create", Resource: "serviceaccounts", Namespace: "-"},
	{Verb: "create", Resource: "services", Namespace: "-"},
	{Verb: "create", Group: "rbac.authorization.k8s.io", Resource: "roles", Namespace: "-"},
	{Verb: "create", Group: "rbac.authorization.k8s.io", Resource: "rolebindings", Namespace: "-"},
	{Verb: "approve", Group: "certificates.k8s.io", Resource: "signers", Name: certificatesv1.KubeAPIServerClientSignerName},
}

// rbac asks the API server (SelfSubjectAccessReview) whether the current user holds installRights.
func rbac(ctx context.Context, cl clients, namespace string) Check {
	const name = "rbac"
	var missing []string
	for _, ra := range installRights {
		if ra.Namespace == "-" {
			ra.Namespace = namespace
		}
		review, err := cl.kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx,
			&authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &ra}}, metav1.CreateOptions{})
		if err != nil {
			return failed(name, "SelfSubjectAccessReview: %v", err)
		}
		if !review.Status.Allowed {
			missing = append(missing, describe(ra))
		}
	}
	if len(missing) > 0 {
		return failed(name, "the current user may not %s", strings.Join(missing, "; "))
	}
	return ok(name, "the current user may create what installing creates, in namespace %s", namespace)
}

func describe(ra authorizationv1.ResourceAttributes) string {
	s := ra.Verb + " " + ra.Resource
	if ra.Group != "" {
		s += "." + ra.Group
	}
	if ra.Name != "" {
		s += " " + ra.Name
	}
	if ra.Namespace != "" {
		s += fmt.Sprintf(" in %s", ra.Namespace)
	}
	return s
}
