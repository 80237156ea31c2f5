// Command liqo-auth-harness runs Liqo's own authentication module on a
// Kubernetes cluster without Liqo's chart or images, for gitpeer's tests: the
// nine controllers of liqotech/liqo cmd/liqo-controller-manager/modules
// SetupAuthenticationModule (nonce creator and signer, tenant, identity,
// identity creator, local and remote renewer, local and remote ResourceSlice),
// wired as Liqo's cmd/liqo-controller-manager/main.go wires them, and Liqo's
// Tenant validating and mutating webhooks (pkg/webhooks/tenant), served with
// TLS on 127.0.0.1 and registered with URL client configs, as Liqo's
// cmd/webhook/main.go and its chart's webhook templates do.
//
// With --liqo-src it first installs what Liqo's chart installs for these
// (install.go): Liqo's CRDs, its namespace, the cluster-ID ConfigMap and the
// ClusterRoles the tenant controller binds. Its flags are Liqo's controller
// manager flags (liqotech/liqo pkg/liqo-controller-manager/flags.go), so the
// chart's settings pass as the chart passes them: apiServer.address is
// --api-server-address-override, apiServer.ca is --ca-override (base64),
// apiServer.trustedCA is --trusted-ca, authentication.tlsCompatibilityMode is
// --tls-compatibility-mode. Of the offloading module only the NamespaceMap
// controller runs (pkg/liqo-controller-manager/offloading/namespacemap-controller):
// for each NamespaceMap a consumer's CRD replicator creates in its tenant
// namespace, it creates the namespaces of spec.desiredMapping and binds the
// consumer's group in each, and, behind its finalizer, deletes them when the
// NamespaceMap goes. The networking module and the rest of the offloading
// module (virtual nodes, shadow pods) are not run.
// It prints "liqo-auth-harness ready" once its caches are synced, its webhook
// server serves and the webhooks are registered.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/spf13/pflag"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	ipamv1alpha1 "github.com/liqotech/liqo/apis/ipam/v1alpha1"
	networkingv1beta1 "github.com/liqotech/liqo/apis/networking/v1beta1"
	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	"github.com/liqotech/liqo/cmd/liqo-controller-manager/modules"
	identitymanager "github.com/liqotech/liqo/pkg/identityManager"
	liqocontrollermanager "github.com/liqotech/liqo/pkg/liqo-controller-manager"
	mapsctrl "github.com/liqotech/liqo/pkg/liqo-controller-manager/offloading/namespacemap-controller"
	tenantnamespace "github.com/liqotech/liqo/pkg/tenantNamespace"
	"github.com/liqotech/liqo/pkg/utils/mapper"
	"github.com/liqotech/liqo/pkg/utils/restcfg"
	tenantwh "github.com/liqotech/liqo/pkg/webhooks/tenant"
)

// Ready is the line printed on stdout once the harness serves.
const Ready = "liqo-auth-harness ready"

func main() {
	opts := liqocontrollermanager.NewOptions()
	// Liqo's flags register the cluster ID on pflag.CommandLine, so all flags go there.
	fs := pflag.CommandLine
	liqocontrollermanager.InitFlags(fs, opts)
	restcfg.InitFlags(fs)
	kubeconfig := fs.String("kubeconfig", "", "Kubeconfig of the cluster to run on (required)")
	liqoSrc := fs.String("liqo-src", "", "Liqo's source tree: when set, its CRDs and the chart's objects "+
		"the authentication module needs are installed first")
	webhookHost := fs.String("webhook-host", "127.0.0.1", "Address the webhook server listens on and the API server calls")
	certDir := fs.String("webhook-cert-dir", "", "Directory for the webhook server's generated certificate (a temporary one when empty)")
	klogFlags := flag.NewFlagSet("klog", flag.ExitOnError)
	klog.InitFlags(klogFlags)
	fs.AddGoFlagSet(klogFlags)
	pflag.Parse()

	if err := run(opts, *kubeconfig, *liqoSrc, *webhookHost, *certDir); err != nil {
		klog.Error(err)
		os.Exit(1)
	}
}

func newScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, liqov1beta1.AddToScheme,
		offloadingv1beta1.AddToScheme, ipamv1alpha1.AddToScheme, networkingv1beta1.AddToScheme, authv1beta1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	return scheme, nil
}

func run(opts *liqocontrollermanager.Options, kubeconfig, liqoSrc, webhookHost, certDir string) error {
	if kubeconfig == "" {
		return errors.New("--kubeconfig is required")
	}
	if !opts.AWSConfig.IsEmpty() {
		return errors.New("--aws-* flags: the IAM identity provider is not supported by the harness")
	}
	log.SetLogger(klog.NewKlogr())
	ctx := ctrl.SetupSignalHandler()

	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("--kubeconfig: %w", err)
	}
	cfg = restcfg.SetRateLimiter(cfg)
	scheme, err := newScheme()
	if err != nil {
		return err
	}
	uncached, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	clusterID, err := opts.ClusterIDFlags.Read()
	if err != nil {
		return fmt.Errorf("--cluster-id: %w", err)
	}
	if liqoSrc != "" {
		if err := install(ctx, uncached, liqoSrc, opts.LiqoNamespace, clusterID); err != nil {
			return fmt.Errorf("install Liqo's objects from --liqo-src %s: %w", liqoSrc, err)
		}
	}

	wh, err := newWebhookServing(webhookHost, opts.WebhookPort, certDir)
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		MapperProvider:         mapper.LiqoMapperProvider(scheme),
		Scheme:                 scheme,
		Metrics:                server.Options{BindAddress: opts.MetricsAddr},
		HealthProbeBindAddress: opts.ProbeAddr,
		WebhookServer:          webhook.NewServer(webhook.Options{Host: wh.host, Port: wh.port, CertDir: wh.certDir}),
	})
	if err != nil {
		return fmt.Errorf("manager creation failed: %w", err)
	}
	clientset, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}

	// As liqotech/liqo cmd/liqo-controller-manager/main.go, AUTHENTICATION MODULE (certificate provider).
	namespaceManager := tenantnamespace.NewCachedManager(ctx, clientset, scheme)
	idProvider := identitymanager.NewCertificateIdentityProvider(ctx, mgr.GetClient(), clientset, cfg, clusterID, namespaceManager)
	if err := modules.SetupAuthenticationModule(ctx, mgr, uncached,
		modules.NewAuthOption(idProvider, namespaceManager, clusterID, opts)); err != nil {
		return fmt.Errorf("unable to setup the authentication module: %w", err)
	}

	// As liqotech/liqo cmd/liqo-controller-manager/modules/offloading.go SetupOffloadingModule, its NamespaceMap controller.
	if err := (&mapsctrl.NamespaceMapReconciler{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("unable to setup the namespacemap reconciler: %w", err)
	}

	// As liqotech/liqo cmd/webhook/main.go: the Tenant webhooks and the name index the validator reads.
	mgr.GetWebhookServer().Register(validatePath, tenantwh.NewValidator(mgr.GetClient()))
	mgr.GetWebhookServer().Register(mutatePath, tenantwh.NewMutator(mgr.GetClient()))
	if err := mgr.GetFieldIndexer().IndexField(ctx, &authv1beta1.Tenant{}, "metadata.name", tenantwh.NameExtractor); err != nil {
		return fmt.Errorf("unable to set up Tenant cache indexes: %w", err)
	}

	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		return announceReady(ctx, mgr, uncached, wh)
	})); err != nil {
		return err
	}
	klog.Info("starting liqo-auth-harness")
	return mgr.Start(ctx)
}
