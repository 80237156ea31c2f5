package main

import (
	"fmt"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitpeer/gitpeer/reconciler"
)

// kubeClient returns a client of the cluster kubectl's flags select.
func kubeClient(kube *genericclioptions.ConfigFlags) (client.Client, error) {
	cfg, err := kube.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("loading the kubeconfig (--kubeconfig, --context): %w", err)
	}
	return client.New(cfg, client.Options{Scheme: reconciler.NewScheme()})
}
