package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitpeer/gitpeer/cmd/gitpeer/internal/preflight"
	"github.com/gitpeer/gitpeer/reconciler"
	"github.com/gitpeer/gitpeer/test/controlplane"
	"github.com/gitpeer/gitpeer/test/crdinstall"
)

// TestCheck runs `gitpeer check` against a real control plane, whose kube-controller-manager
// really signs kube-apiserver-client CSRs: --pre passes and --sign-test has a certificate issued
// and leaves no CSR behind; without --pre, missing CRDs fail it, and once they are installed the
// CRDs pass and the missing agent Deployment fails it.
func TestCheck(t *testing.T) {
	cp := controlplane.Start(t)
	check := func(args ...string) (string, error) {
		var out bytes.Buffer
		root := newRootCmd()
		root.SetOut(&out)
		root.SetArgs(append([]string{"check", "--kubeconfig", cp.KubeconfigPath}, args...))
		err := root.Execute()
		return out.String(), err
	}
	expect := func(out string, lines ...string) {
		t.Helper()
		for _, l := range lines {
			if !strings.Contains(out, l) {
				t.Errorf("output lacks %q:\n%s", l, out)
			}
		}
	}

	out, err := check("--pre", "--sign-test")
	if err != nil {
		t.Fatalf("check --pre --sign-test: %v\n%s", err, out)
	}
	t.Logf("check --pre --sign-test:\n%s", out)
	expect(out, "✔ kubernetes: v1.", "• liqo: not installed", "✔ rbac: the current user may create", "✔ csr signer: kubernetes.io/kube-apiserver-client issued a test certificate", "✔ all checks passed")
	if strings.Contains(out, "crd ") || strings.Contains(out, "agent") {
		t.Errorf("--pre checks the installation:\n%s", out)
	}
	kube, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	left, err := kube.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{LabelSelector: preflight.SignTestLabel})
	if err != nil || len(left.Items) != 0 {
		t.Fatalf("--sign-test left CSRs: %v %v", left, err)
	}

	out, err = check("--pre", "-o", "json")
	if err != nil {
		t.Fatalf("check --pre -o json: %v\n%s", err, out)
	}
	var report preflight.Report
	if err := json.Unmarshal([]byte(out), &report); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if last := report.Checks[len(report.Checks)-1]; last.Name != "csr signer" || last.Status != preflight.Info || !strings.HasPrefix(last.Message, "unknown") {
		t.Errorf("without --sign-test and with no issued CSR, the signer is %+v, want unknown", last)
	}

	out, err = check()
	if err == nil || !strings.Contains(err.Error(), "check(s) failed") {
		t.Fatalf("check without CRDs: %v\n%s", err, out)
	}
	expect(out, "✗ crd peeringrepositories.gitpeer.io: not installed", "✗ agent: no Deployment labelled app.kubernetes.io/name=gitpeer in namespace gitpeer-system")

	scheme := reconciler.NewScheme()
	utilruntime.Must(apiextensionsv1.AddToScheme(scheme))
	c, err := client.New(cp.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	if err := crdinstall.Install(ctx, c); err != nil {
		t.Fatal(err)
	}
	out, err = check()
	if err == nil {
		t.Fatalf("check without an agent passed:\n%s", out)
	}
	t.Logf("check:\n%s", out)
	expect(out, "✔ crd peeringrepositories.gitpeer.io: serves v1alpha1", "✔ crd tenants.authentication.liqo.io: serves v1beta1", "• peeringrepositories: none yet", "✗ agent: ")
}
