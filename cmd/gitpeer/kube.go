package main

import (
	"fmt"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitpeer/gitpeer/apis"
)

// kubeConfig returns the client configuration of the cluster kubectl's flags select.
func kubeConfig(kube *genericclioptions.ConfigFlags) (*rest.Config, error) {
	cfg, err := kube.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("loading the kubeconfig (--kubeconfig, --context): %w", err)
	}
	return cfg, nil
}

// kubeClient returns a client of the cluster kubectl's flags select.
func kubeClient(kube *genericclioptions.ConfigFlags) (client.Client, error) {
	cfg, err := kubeConfig(kube)
	if err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: apis.NewScheme()})
}
