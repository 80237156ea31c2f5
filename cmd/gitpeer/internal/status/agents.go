package status

import (
	"context"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
)

// AgentLabel selects the agent's Deployment, as both installs (config/manager, the chart) label it.
const AgentLabel = "app.kubernetes.io/name"

// Unwatched is a PeeringRepository in a namespace no installed agent acts on: the agents it found
// watch other namespaces (--watch-namespace), so nothing reconciles it and it gets no status.
type Unwatched struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Agents are the agents' Deployments and the namespace each watches, "<namespace>/<name> watches <namespace>".
	Agents []string `json:"agents"`
}

// agent is an installed agent's Deployment and the namespace it watches ("" for all).
type agent struct {
	deployment, watches string
}

// installedAgents returns the gitpeer agent Deployments of the cluster and the namespace each
// watches, read from their arguments as the kubelet would expand them; none when Deployments
// cannot be listed (RBAC).
func installedAgents(ctx context.Context, c client.Reader) []agent {
	var deps appsv1.DeploymentList
	if err := c.List(ctx, &deps, client.MatchingLabels{AgentLabel: "gitpeer"}); err != nil {
		return nil
	}
	var agents []agent
	for _, d := range deps.Items {
		for _, ctr := range d.Spec.Template.Spec.Containers {
			if len(ctr.Args) > 0 && ctr.Args[0] == "agent" {
				agents = append(agents, agent{deployment: d.Namespace + "/" + d.Name, watches: watchNamespace(d.Namespace, ctr)})
			}
		}
	}
	return agents
}

// watchNamespace returns the value of the container's --watch-namespace flag, with its $(VAR)
// references expanded from the container's environment (literal values, and the pod's namespace
// for a metadata.namespace field reference); "" when absent: the agent watches every namespace.
func watchNamespace(namespace string, c corev1.Container) string {
	value := ""
	for i, a := range c.Args {
		if v, ok := strings.CutPrefix(a, "--watch-namespace="); ok {
			value = v
		} else if a == "--watch-namespace" && i+1 < len(c.Args) {
			value = c.Args[i+1]
		}
	}
	for _, e := range c.Env {
		v := e.Value
		if e.ValueFrom != nil {
			if e.ValueFrom.FieldRef == nil || e.ValueFrom.FieldRef.FieldPath != "metadata.namespace" {
				continue
			}
			v = namespace
		}
		value = strings.ReplaceAll(value, "$("+e.Name+")", v)
	}
	return value
}

// unwatched returns the repositories no agent of agents acts on; none without agents, as an agent
// may run outside the cluster or its Deployment be unreadable: then nothing is known.
func unwatched(repos []gitpeerv1alpha1.PeeringRepository, agents []agent) []Unwatched {
	if len(agents) == 0 {
		return nil
	}
	var out []Unwatched
	for _, r := range repos {
		watched := slices.ContainsFunc(agents, func(a agent) bool { return a.watches == "" || a.watches == r.Namespace })
		if watched {
			continue
		}
		u := Unwatched{Namespace: r.Namespace, Name: r.Name}
		for _, a := range agents {
			u.Agents = append(u.Agents, fmt.Sprintf("%s watches %s", a.deployment, a.watches))
		}
		out = append(out, u)
	}
	return out
}
