// Package crdinstall installs gitpeer's CRDs on a test control plane and waits
// until the API server serves them.
package crdinstall

import (
	"context"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
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
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			got := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(d), got); err != nil {
				return false, err
			}
			for _, cond := range got.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}
