package liqo

import (
	"context"
	gocrypto "crypto"
	"sync"
	"time"

	"github.com/go-logr/logr"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
)

// Double is an installed Liqo's authentication module on one cluster.
type Double struct {
	Options Options
	// Key is Liqo's cluster key from the authentication-keys Secret.
	Key gocrypto.Signer
}

// New installs Liqo's objects on the cluster of c (Install) and returns the
// double, ready to be started (Start).
func New(ctx context.Context, c client.Client, o Options) (*Double, error) {
	key, err := Install(ctx, c, o)
	if err != nil {
		return nil, err
	}
	return &Double{Options: o, Key: key}, nil
}

// RunOptions say how Start runs the double's controllers.
type RunOptions struct {
	// Scheme of the manager: the built-in types and Liqo's.
	Scheme *runtime.Scheme
	// Provider, when not nil, is the provider cluster the renewal path reads (see Renewal).
	Provider client.Reader
	// Now is the tenant controller's clock (time.Now when nil): a test moves it to reach renewal.
	Now func() time.Time
	// Logger is the manager's logger; controller-runtime's global logger when zero.
	Logger logr.Logger
}

// Start runs the double on a new manager of the cluster at cfg (see setup)
// until ctx ends or stop is called. stop waits for the manager to end and
// returns its error; it may be called more than once.
func (d *Double) Start(ctx context.Context, cfg *rest.Config, o RunOptions) (stop func() error, err error) {
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: o.Scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		// Several doubles run in one process, and a stopped double is started again.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)}, Logger: o.Logger})
	if err != nil {
		return nil, err
	}
	if err := d.setup(mgr, o); err != nil {
		return nil, err
	}
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	var once sync.Once
	var stopErr error
	return func() error {
		once.Do(func() { cancel(); stopErr = <-done })
		return stopErr
	}, nil
}

// setup registers the controllers of both roles and the Tenant admission
// webhook on mgr, as Liqo runs all nine authentication controllers whatever
// the cluster's role (they cannot be switched off one by one). o.Provider,
// when not nil, is read for the renewal path. The controllers and the webhook
// run when mgr starts.
func (d *Double) setup(mgr ctrl.Manager, o RunOptions) error {
	cs, err := kubernetes.NewForConfig(mgr.GetConfig())
	if err != nil {
		return err
	}
	c := mgr.GetClient()
	tenants := &TenantController{Client: c, Clientset: cs, Options: d.Options, CA: mgr.GetConfig().CAData, Now: o.Now,
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
	if o.Provider != nil {
		return (&Renewal{Client: c, Provider: o.Provider, ConsumerID: d.Options.ClusterID}).SetupWithManager(mgr)
	}
	return nil
}

// AdoptRemoteControlPlaneRole labels the liqo-remote-controlplane ClusterRole
// on the cluster of c for Liqo's tenant controller, as Liqo's chart, which owns
// it, does: where gitpeer's copy was installed first (the sandbox), Install
// leaves it unlabelled.
func AdoptRemoteControlPlaneRole(ctx context.Context, c client.Client) error {
	role := &rbacv1.ClusterRole{}
	if err := c.Get(ctx, client.ObjectKey{Name: authv1beta1.RemoteControlPlaneClusterRole}, role); err != nil {
		return err
	}
	metav1.SetMetaDataLabel(&role.ObjectMeta, ClusterIDConfigMapLabel, RemoteControlPlaneRoleLabel)
	return c.Update(ctx, role)
}
