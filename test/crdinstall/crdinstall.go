// Package crdinstall installs gitpeer's CRDs on a test control plane and waits
// until the API server serves them.
package crdinstall

import (
	"context"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitpeer/gitpeer/config/crd"
)

// Install applies every CRD of config/crd (see Apply).
// c's scheme must know apiextensions/v1.
func Install(ctx context.Context, c client.Client) error {
	crds, err := crd.Load()
	if err != nil {
		return err
	}
	return Apply(ctx, c, crds...)
}

// Apply server-side applies crds, creating them or upgrading those already
// installed as `kubectl apply --server-side` does, and waits until each is
// Established.
func Apply(ctx context.Context, c client.Client, crds ...*apiextensionsv1.CustomResourceDefinition) error {
	for _, d := range crds {
		d.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
		d.SetResourceVersion("")
		if err := c.Patch(ctx, d, client.Apply, client.FieldOwner("gitpeer-install"), client.ForceOwnership); err != nil { //nolint:staticcheck // typed apply of a whole object
			return err
		}
	}
	for _, d := range crds {
		if err := WaitEstablished(ctx, c, d.Name); err != nil {
			return err
		}
	}
	return nil
}

// WaitEstablished waits until the API server serves the
// CustomResourceDefinition name (its Established condition), for a minute at
// most. c's scheme need not know apiextensions/v1.
func WaitEstablished(ctx context.Context, c client.Client, name string) error {
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		crd := &unstructured.Unstructured{}
		crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
		if err := c.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
			return false, err
		}
		conditions, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
		for _, cond := range conditions {
			if m, ok := cond.(map[string]any); ok && m["type"] == string(apiextensionsv1.Established) && m["status"] == string(apiextensionsv1.ConditionTrue) {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("CRD %s not established: %w", name, err)
	}
	return nil
}
