package liqo

import (
	"context"
	gocrypto "crypto"

	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// Double is an installed Liqo's authentication module on one cluster.
type Double struct {
	Options Options
	// Key is Liqo's cluster key from the authentication-keys Secret.
	Key gocrypto.Signer
}

// New installs Liqo's objects on the cluster of c (Install) and returns the
// double, ready to be started on a manager of that cluster.
func New(ctx context.Context, c client.Client, o Options) (*Double, error) {
	key, err := Install(ctx, c, o)
	if err != nil {
		return nil, err
	}
	return &Double{Options: o, Key: key}, nil
}

// Setup registers the controllers of both roles and the Tenant admission
// webhook on mgr, as Liqo runs all nine authentication controllers whatever
// the cluster's role (they cannot be switched off one by one). provider, when
// not nil, reads the provider cluster for the renewal path (see Renewal). The
// controllers and the webhook run when mgr starts.
func (d *Double) Setup(mgr ctrl.Manager, provider client.Reader) error {
	cs, err := kubernetes.NewForConfig(mgr.GetConfig())
	if err != nil {
		return err
	}
	c := mgr.GetClient()
	tenants := &TenantController{Client: c, Clientset: cs, Options: d.Options, CA: mgr.GetConfig().CAData,
		Recorder: mgr.GetEventRecorderFor("liqo-tenant")} //nolint:staticcheck // the double uses the core/v1 recorder as Liqo does
	for _, r := range []interface{ SetupWithManager(ctrl.Manager) error }{
		&NonceCreator{Client: c, Recorder: mgr.GetEventRecorderFor("liqo-noncecreator")}, //nolint:staticcheck
		tenants,
		&NonceSigner{Client: c, Key: d.Key},
		&IdentityController{Client: c, Key: d.Key},
	} {
		if err := r.SetupWithManager(mgr); err != nil {
			return err
		}
	}
	hook := &TenantWebhook{Reader: mgr.GetAPIReader()}
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		return hook.Start(ctx, c, mgr.GetScheme())
	})); err != nil {
		return err
	}
	if provider != nil {
		return (&Renewal{Client: c, Provider: provider, ConsumerID: d.Options.ClusterID}).SetupWithManager(mgr)
	}
	return nil
}
