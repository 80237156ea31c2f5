package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// Paths and webhook names as Liqo's chart registers them (liqotech/liqo v1.2.0
// deployments/liqo/templates/webhooks/liqo-{validating,mutating}-webhook.yaml).
const (
	validatePath = "/validate/tenants"
	mutatePath   = "/mutate/tenants"
	webhookName  = "tenant.validate.liqo.io"
	// configName names both webhook configurations the harness registers.
	configName = "liqo-auth-harness-tenant"
)

// webhookServing is where the webhook server listens and the CA the API server trusts for it.
type webhookServing struct {
	host    string
	port    int
	certDir string
	caPEM   []byte
}

// newWebhookServing picks a free port when port is 0 and writes a self-signed
// serving certificate for host into certDir (a new temporary directory when
// empty): Liqo's chart has its webhook's certificate made by Liqo's secret
// controller for an in-cluster Service; here the API server calls 127.0.0.1.
func newWebhookServing(host string, port int, certDir string) (*webhookServing, error) {
	ip := net.ParseIP(host)
	if ip == nil {
		return nil, fmt.Errorf("--webhook-host %q: not an IP address", host)
	}
	if port == 0 {
		l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			return nil, fmt.Errorf("--webhook-port: %w", err)
		}
		port = l.Addr().(*net.TCPAddr).Port
		if err := l.Close(); err != nil {
			return nil, err
		}
	}
	if certDir == "" {
		dir, err := os.MkdirTemp("", "liqo-auth-harness-")
		if err != nil {
			return nil, err
		}
		certDir = dir
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: "liqo-auth-harness"},
		NotBefore:             time.Now().Add(-time.Minute),
		NotAfter:              time.Now().Add(365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:           []net.IP{ip},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if err := os.WriteFile(filepath.Join(certDir, "tls.crt"), certPEM, 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(certDir, "tls.key"),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return nil, err
	}
	return &webhookServing{host: host, port: port, certDir: certDir, caPEM: certPEM}, nil
}

// announceReady waits until the manager's caches are synced and its webhook
// server serves, registers the webhooks, prints Ready, and removes the
// registrations when ctx ends (with failurePolicy Fail, a stopped harness
// would otherwise refuse every Tenant write).
func announceReady(ctx context.Context, mgr manager.Manager, c client.Client, wh *webhookServing) error {
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		return ctx.Err()
	}
	started := mgr.GetWebhookServer().StartedChecker()
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true,
		func(context.Context) (bool, error) { return started(nil) == nil, nil }); err != nil {
		return fmt.Errorf("webhook server not serving: %w", err)
	}
	validating, mutating := webhookConfigurations(wh)
	for _, obj := range []client.Object{validating, mutating} {
		if err := c.Patch(ctx, obj, client.Apply, client.FieldOwner("liqo-auth-harness"), client.ForceOwnership); err != nil { //nolint:staticcheck // typed apply of a whole object
			return fmt.Errorf("register %T %s: %w", obj, obj.GetName(), err)
		}
	}
	fmt.Println(Ready)
	<-ctx.Done()
	cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	for _, obj := range []client.Object{validating, mutating} {
		if err := c.Delete(cleanup, obj); err != nil && !apierrors.IsNotFound(err) {
			klog.Errorf("unregister %T %s: %v", obj, obj.GetName(), err)
		}
	}
	return nil
}

// webhookConfigurations are the Tenant entries of Liqo's chart webhook
// configurations, calling the harness by URL.
func webhookConfigurations(wh *webhookServing) (*admissionregistrationv1.ValidatingWebhookConfiguration,
	*admissionregistrationv1.MutatingWebhookConfiguration) {
	clientConfig := func(path string) admissionregistrationv1.WebhookClientConfig {
		return admissionregistrationv1.WebhookClientConfig{
			URL:      ptr.To("https://" + net.JoinHostPort(wh.host, strconv.Itoa(wh.port)) + path),
			CABundle: wh.caPEM,
		}
	}
	rules := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule: admissionregistrationv1.Rule{APIGroups: []string{"authentication.liqo.io"},
			APIVersions: []string{"v1beta1"}, Resources: []string{"tenants"}},
	}}
	skip := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: "liqo.io/webhook-skip", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"true"}}}}
	versions := []string{"v1", "v1beta1"}
	fail := ptr.To(admissionregistrationv1.Fail)
	none := ptr.To(admissionregistrationv1.SideEffectClassNone)
	validating := &admissionregistrationv1.ValidatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: configName},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: webhookName, ClientConfig: clientConfig(validatePath),
			Rules: rules, AdmissionReviewVersions: versions, SideEffects: none, FailurePolicy: fail, ObjectSelector: skip}},
	}
	mutating := &admissionregistrationv1.MutatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: configName},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: webhookName, ClientConfig: clientConfig(mutatePath),
			Rules: rules, AdmissionReviewVersions: versions, SideEffects: none, FailurePolicy: fail, ObjectSelector: skip}},
	}
	return validating, mutating
}
