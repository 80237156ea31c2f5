package liqo

import (
	"context"
	"encoding/pem"
	"fmt"
	"net/http/httptest"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
)

// TenantWebhookName names the ValidatingWebhookConfiguration of the Tenant
// admission webhook and prefixes its denials.
const TenantWebhookName = "liqo-tenant-webhook"

// TenantWebhook is the Tenant admission webhook (pkg/webhooks/tenant): a
// Tenant's label liqo.io/remote-cluster-id must equal spec.clusterID and the
// same label of its namespace, and a namespace holds at most one Tenant.
// (Liqo v1.2.0 pkg/webhooks/tenant: "label = spec.clusterID =
// namespace label; one Tenant per namespace".)
type TenantWebhook struct {
	// Reader reads namespaces and Tenants straight from the API server.
	Reader client.Reader
}

var _ admission.Validator[*authv1beta1.Tenant] = &TenantWebhook{}

// ValidateCreate admits a Tenant whose labels agree and whose namespace holds no other Tenant.
func (w *TenantWebhook) ValidateCreate(ctx context.Context, t *authv1beta1.Tenant) (admission.Warnings, error) {
	if err := w.checkClusterID(ctx, t); err != nil {
		return nil, err
	}
	var tenants authv1beta1.TenantList
	if err := w.Reader.List(ctx, &tenants, client.InNamespace(t.Namespace)); err != nil {
		return nil, err
	}
	for _, other := range tenants.Items {
		if other.Name != t.Name {
			return nil, fmt.Errorf("%s: namespace %s already holds Tenant %s: one Tenant per namespace", TenantWebhookName, t.Namespace, other.Name)
		}
	}
	return nil, nil
}

// ValidateUpdate admits an updated Tenant whose labels agree.
func (w *TenantWebhook) ValidateUpdate(ctx context.Context, _, t *authv1beta1.Tenant) (admission.Warnings, error) {
	return nil, w.checkClusterID(ctx, t)
}

// ValidateDelete admits every deletion.
func (w *TenantWebhook) ValidateDelete(context.Context, *authv1beta1.Tenant) (admission.Warnings, error) {
	return nil, nil
}

// checkClusterID checks label = spec.clusterID = namespace label.
func (w *TenantWebhook) checkClusterID(ctx context.Context, t *authv1beta1.Tenant) error {
	id := string(t.Spec.ClusterID)
	if label := t.Labels[authv1beta1.RemoteClusterIDLabel]; label != id {
		return fmt.Errorf("%s: label %s=%q is not spec.clusterID %q", TenantWebhookName, authv1beta1.RemoteClusterIDLabel, label, id)
	}
	ns := &corev1.Namespace{}
	if err := w.Reader.Get(ctx, client.ObjectKey{Name: t.Namespace}, ns); err != nil {
		return err
	}
	if label := ns.Labels[authv1beta1.RemoteClusterIDLabel]; label != id {
		return fmt.Errorf("%s: namespace %s has label %s=%q, not spec.clusterID %q", TenantWebhookName, t.Namespace, authv1beta1.RemoteClusterIDLabel, label, id)
	}
	return nil
}

// Start serves the webhook over TLS on a local port and registers it with the
// API server of c in a ValidatingWebhookConfiguration (CREATE and UPDATE of
// Tenants, failurePolicy Fail) until ctx ends, then removes the configuration
// (with failurePolicy Fail, a configuration without its server would refuse
// every Tenant). Liqo serves the webhook from its webhook Deployment behind a
// Service; here the API server calls a URL in the test process.
func (w *TenantWebhook) Start(ctx context.Context, c client.Client, scheme *runtime.Scheme) error {
	srv := httptest.NewTLSServer(admission.WithValidator(scheme, w))
	defer srv.Close()
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: TenantWebhookName}}
	if _, err := controllerutil.CreateOrUpdate(ctx, c, vwc, func() error {
		vwc.Webhooks = []admissionregistrationv1.ValidatingWebhook{tenantWebhook(srv)}
		return nil
	}); err != nil {
		return err
	}
	<-ctx.Done()
	return client.IgnoreNotFound(c.Delete(context.WithoutCancel(ctx), vwc))
}

// tenantWebhook is the configuration calling srv for every Tenant CREATE and UPDATE.
func tenantWebhook(srv *httptest.Server) admissionregistrationv1.ValidatingWebhook {
	return admissionregistrationv1.ValidatingWebhook{
		Name: "tenant.liqo.io",
		ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To(srv.URL + "/validate/tenants"),
			CABundle: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})},
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
			Rule: admissionregistrationv1.Rule{APIGroups: []string{authv1beta1.GroupVersion.Group},
				APIVersions: []string{authv1beta1.GroupVersion.Version}, Resources: []string{"tenants"}},
		}},
		FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
		SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
		AdmissionReviewVersions: []string{"v1"},
	}
}

// WaitForTenantWebhook waits until the API server of c sends Tenants to the
// webhook: a dry-run Tenant whose namespace lacks the cluster-ID label is
// denied by it.
func WaitForTenantWebhook(ctx context.Context, c client.Client) error {
	probe := &authv1beta1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "webhook-probe", Namespace: metav1.NamespaceDefault,
		Labels: map[string]string{authv1beta1.RemoteClusterIDLabel: "webhook-probe"}},
		Spec: authv1beta1.TenantSpec{ClusterID: "webhook-probe"}}
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		err := c.Create(ctx, probe.DeepCopy(), client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), TenantWebhookName), nil
	})
}
