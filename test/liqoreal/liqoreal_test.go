package liqoreal_test

import (
	"context"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gitpeer/gitpeer/test/controlplane"
	"github.com/gitpeer/gitpeer/test/liqoreal"
)

// TestHarness runs Liqo's authentication module on a real control plane: it
// creates Liqo's cluster keys at start, and Liqo's Tenant webhook answers the
// API server.
func TestHarness(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cp := controlplane.Start(t)
	h, err := liqoreal.Start(ctx, cp, t.TempDir(), liqoreal.Options{ClusterID: "real-p"})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Stop()
	cs := kubernetes.NewForConfigOrDie(cp.Config)
	keys, err := cs.CoreV1().Secrets("liqo").Get(ctx, "authentication-keys", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Liqo's InitClusterKeys: %v", err)
	}
	if len(keys.Data["privateKey"]) == 0 {
		t.Fatalf("authentication-keys has no privateKey: %v", keys.Data)
	}
	vwc, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "liqo-auth-harness-tenant", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := vwc.Webhooks[0].FailurePolicy; got == nil || *got != admissionregistrationv1.Fail {
		t.Fatalf("failurePolicy %v, want Fail as Liqo's chart", got)
	}
	// A Tenant outside a tenant namespace: Liqo's validating webhook refuses it.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "not-a-tenant"}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	body := `{"apiVersion":"authentication.liqo.io/v1beta1","kind":"Tenant","metadata":{"name":"c1","namespace":"not-a-tenant"},"spec":{"clusterID":"c1"}}`
	res := cs.RESTClient().Post().AbsPath("/apis/authentication.liqo.io/v1beta1/namespaces/not-a-tenant/tenants").
		Body([]byte(body)).SetHeader("Content-Type", "application/json").Do(ctx)
	if err := res.Error(); err == nil || !strings.Contains(err.Error(), "tenant.validate.liqo.io") {
		t.Fatalf("creating a Tenant outside a tenant namespace: %v, want a denial by Liqo's webhook\n%s", err, h.Log())
	}
}
