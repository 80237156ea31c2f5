package liqo

import (
	"bytes"
	"context"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
)

// Renewal is the renewal path of A/localrenewer-controller and
// A/remoterenewer-controller as the consumer sees it: when the provider's
// Tenant status carries a signedCRT that differs from the one in the consumer's
// ControlPlane Identity, the consumer copies it into Identity.spec.
// (Liqo v1.2.0 A/localrenewer-controller, A/remoterenwer-controller.) Collapsed: in Liqo a Renew object travels to
// the provider and back through the CRD replicator over the control-plane
// kubeconfig; here the consumer reads the provider's Tenant with Provider, a
// client of the provider cluster, every Interval.
type Renewal struct {
	Client client.Client
	// Provider reads the provider cluster's Tenants.
	Provider client.Reader
	// ConsumerID is the local cluster ID: the name of its Tenant on the provider.
	ConsumerID string
	// Interval between two reads of the provider's Tenant; 1 s when zero.
	Interval time.Duration
}

// Reconcile copies a renewed certificate into one ControlPlane Identity.
func (r *Renewal) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	identity := &authv1beta1.Identity{}
	if err := r.Client.Get(ctx, req.NamespacedName, identity); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if identity.Spec.Type != authv1beta1.ControlPlaneIdentityType || identity.Spec.Namespace == nil {
		return ctrl.Result{}, nil
	}
	tenant := &authv1beta1.Tenant{}
	key := client.ObjectKey{Namespace: *identity.Spec.Namespace, Name: r.ConsumerID}
	if err := r.Provider.Get(ctx, key, tenant); err != nil {
		return ctrl.Result{RequeueAfter: r.interval()}, client.IgnoreNotFound(err)
	}
	if p := tenant.Status.AuthParams; p != nil && len(p.SignedCRT) > 0 && !bytes.Equal(p.SignedCRT, identity.Spec.AuthParams.SignedCRT) {
		identity.Spec.AuthParams.SignedCRT = p.SignedCRT
		if err := r.Client.Update(ctx, identity); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{RequeueAfter: r.interval()}, nil
}

// SetupWithManager watches Identities.
func (r *Renewal) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).Named("liqo-renewal").For(&authv1beta1.Identity{}).Complete(r)
}

func (r *Renewal) interval() time.Duration {
	if r.Interval == 0 {
		return time.Second
	}
	return r.Interval
}
