package preflight

import (
	"context"
	"fmt"
	"slices"
	"strings"

	fluxmeta "github.com/fluxcd/pkg/apis/meta"
	appsv1 "k8s.io/api/apps/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/version"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/cmd/gitpeer/internal/status"
	"github.com/gitpeer/gitpeer/config/crd"
	liqomode "github.com/gitpeer/gitpeer/reconciler/liqo"
)

// MinKubernetes is the oldest Kubernetes gitpeer supports (docs/install.md): its
// ValidatingAdmissionPolicies are admissionregistration.k8s.io/v1, GA in 1.30.
var MinKubernetes = version.MustParseGeneric("1.30.0")

// kubernetesVersion checks the server's version; reached is false when the server did not answer.
func kubernetesVersion(cl clients) (c Check, reached bool) {
	const name = "kubernetes"
	info, err := cl.kube.Discovery().ServerVersion()
	if err != nil {
		return failed(name, "server version: %v", err), false
	}
	return checkVersion(name, info.GitVersion), true
}

func checkVersion(name, gitVersion string) Check {
	v, err := version.ParseGeneric(gitVersion)
	if err != nil {
		return failed(name, "server version %q: %v", gitVersion, err)
	}
	if !v.AtLeast(MinKubernetes) {
		return failed(name, "%s, gitpeer needs >= %d.%d", gitVersion, MinKubernetes.Major(), MinKubernetes.Minor())
	}
	return ok(name, "%s >= %d.%d", gitVersion, MinKubernetes.Major(), MinKubernetes.Minor())
}

// crds checks that every CRD this gitpeer installs is installed, established, and serves the
// version this gitpeer reads (its storage version here).
func crds(ctx context.Context, cl clients) []Check {
	want, err := crd.Load()
	if err != nil {
		return []Check{failed("crds", "%v", err)}
	}
	var checks []Check
	for _, w := range want {
		name := "crd " + w.Name
		var got apiextensionsv1.CustomResourceDefinition
		if err := cl.c.Get(ctx, client.ObjectKey{Name: w.Name}, &got); apierrors.IsNotFound(err) {
			checks = append(checks, failed(name, "not installed"))
			continue
		} else if err != nil {
			checks = append(checks, failed(name, "%v", err))
			continue
		}
		var served []string
		for _, v := range got.Spec.Versions {
			if v.Served {
				served = append(served, v.Name)
			}
		}
		reads := storageVersion(w)
		switch {
		case !established(&got):
			checks = append(checks, failed(name, "installed but not established"))
		case !slices.Contains(served, reads):
			checks = append(checks, failed(name, "serves %s, this gitpeer reads %s", strings.Join(served, ", "), reads))
		default:
			checks = append(checks, ok(name, "serves %s", strings.Join(served, ", ")))
		}
	}
	return checks
}

func storageVersion(d *apiextensionsv1.CustomResourceDefinition) string {
	for _, v := range d.Spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return ""
}

func established(d *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range d.Status.Conditions {
		if c.Type == apiextensionsv1.Established {
			return c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}

// agents checks the agent Deployments of namespace (both installs label them) are available.
func agents(ctx context.Context, cl clients, namespace string) []Check {
	const name = "agent"
	var deps appsv1.DeploymentList
	if err := cl.c.List(ctx, &deps, client.InNamespace(namespace), client.MatchingLabels{status.AgentLabel: "gitpeer"}); err != nil {
		return []Check{failed(name, "%v", err)}
	}
	if len(deps.Items) == 0 {
		return []Check{failed(name, "no Deployment labelled %s=gitpeer in namespace %s (--namespace)", status.AgentLabel, namespace)}
	}
	var checks []Check
	for _, d := range deps.Items {
		what := fmt.Sprintf("Deployment %s/%s (%s)", d.Namespace, d.Name, images(d))
		available := false
		message := "no Available condition yet"
		for _, c := range d.Status.Conditions {
			if c.Type == appsv1.DeploymentAvailable {
				available, message = c.Status == "True", c.Message
			}
		}
		if available {
			checks = append(checks, ok(name, "%s available, %d/%d replicas ready", what, d.Status.ReadyReplicas, d.Status.Replicas))
		} else {
			checks = append(checks, failed(name, "%s not available: %s", what, message))
		}
	}
	return checks
}

func images(d appsv1.Deployment) string {
	var out []string
	for _, c := range d.Spec.Template.Spec.Containers {
		out = append(out, c.Image)
	}
	return strings.Join(out, ", ")
}

// peeringRepositories checks every PeeringRepository of the cluster is Ready.
func peeringRepositories(ctx context.Context, cl clients) []Check {
	var list gitpeerv1alpha1.PeeringRepositoryList
	if err := cl.c.List(ctx, &list); err != nil {
		return []Check{failed("peeringrepositories", "%v", err)}
	}
	if len(list.Items) == 0 {
		return []Check{info("peeringrepositories", "none yet")}
	}
	var checks []Check
	for _, pr := range list.Items {
		name := "peeringrepository " + pr.Namespace + "/" + pr.Name
		ready := apimeta.FindStatusCondition(pr.Status.Conditions, fluxmeta.ReadyCondition)
		switch {
		case ready == nil:
			checks = append(checks, failed(name, "not reconciled yet (no Ready condition): is an agent watching namespace %s?", pr.Namespace))
		case ready.Status == metav1.ConditionTrue:
			checks = append(checks, ok(name, "Ready: %s", ready.Message))
		default:
			checks = append(checks, failed(name, "not Ready (%s): %s", ready.Reason, ready.Message))
		}
	}
	return checks
}

// Liqo's own CRD (gitpeer installs Liqo's Tenant and Identity CRDs itself when Liqo is absent,
// so those say nothing) and the Deployment whose image tag is Liqo's version.
const (
	liqoCRD        = "foreignclusters.core.liqo.io"
	liqoDeployment = "liqo-controller-manager"
)

// liqo says whether Liqo is installed, its version, and whether a PeeringRepository in Auto mode
// would run in Liqo mode here (Liqo's cluster-ID ConfigMap in its default namespace: the agent
// also needs its key Secret, which check does not read). Informational: gitpeer runs with or
// without Liqo.
func liqo(ctx context.Context, cl clients) Check {
	const name = "liqo"
	var found []string
	var d apiextensionsv1.CustomResourceDefinition
	if err := cl.c.Get(ctx, client.ObjectKey{Name: liqoCRD}, &d); err == nil {
		found = append(found, "CRD "+liqoCRD)
	} else if !apierrors.IsNotFound(err) {
		return info(name, "unknown: %v", err)
	}
	ns := gitpeerv1alpha1.DefaultLiqoNamespace
	cm, err := cl.kube.CoreV1().ConfigMaps(ns).Get(ctx, liqomode.ClusterIDConfigMap, metav1.GetOptions{})
	if err == nil {
		found = append(found, fmt.Sprintf("cluster ID %q in namespace %s", cm.Data[liqomode.ClusterIDKey], ns))
	}
	if deps, err := cl.kube.AppsV1().Deployments(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + liqoDeployment}); err == nil && len(deps.Items) > 0 {
		dep := deps.Items[0]
		tag := "unknown"
		if ctrs := dep.Spec.Template.Spec.Containers; len(ctrs) > 0 {
			tag = imageTag(ctrs[0].Image)
		}
		found = append(found, fmt.Sprintf("version %s (Deployment %s/%s)", tag, dep.Namespace, dep.Name))
	}
	if len(found) == 0 {
		return info(name, "not installed (no CRD %s, no ConfigMap %s/%s): gitpeer runs standalone", liqoCRD, ns, liqomode.ClusterIDConfigMap)
	}
	return info(name, "installed: %s", strings.Join(found, ", "))
}

// imageTag returns the tag of an image reference ("unknown" without one).
func imageTag(image string) string {
	image, _, _ = strings.Cut(image, "@")
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		return image[i+1:]
	}
	return "unknown"
}
