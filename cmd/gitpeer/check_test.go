package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitpeer/gitpeer/apis"
	"github.com/gitpeer/gitpeer/cmd/gitpeer/internal/preflight"
	gitpeercrypto "github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/test/controlplane"
	"github.com/gitpeer/gitpeer/test/crdinstall"
	"github.com/gitpeer/gitpeer/test/liqo"
	"github.com/gitpeer/gitpeer/vocabulary"
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
	left, err := kube.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{LabelSelector: vocabulary.SignTestLabel})
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

	// The side-effect-free signer check finds a certificate the signer issued.
	csr := issueCSR(ctx, t, kube)
	out, err = check("--pre")
	if err != nil {
		t.Fatalf("check --pre: %v\n%s", err, out)
	}
	expect(out, "✔ csr signer: kubernetes.io/kube-apiserver-client issued CSR "+csr)

	// A user who may not install fails the RBAC check, and cannot see the signer's work.
	newcomer, err := cp.UserConfig("newcomer")
	if err != nil {
		t.Fatal(err)
	}
	out, err = check("--pre", "--kubeconfig", writeKubeconfig(t, newcomer))
	if err == nil {
		t.Fatalf("check --pre as a user without rights passed:\n%s", out)
	}
	expect(out, "✗ rbac: the current user may not create customresourcedefinitions.apiextensions.k8s.io; ", "approve signers.certificates.k8s.io kubernetes.io/kube-apiserver-client", "• csr signer: unknown: ")

	out, err = check()
	if err == nil || !strings.Contains(err.Error(), "check(s) failed") {
		t.Fatalf("check without CRDs: %v\n%s", err, out)
	}
	expect(out, "✗ crd peeringrepositories.gitpeer.io: not installed", "✗ agent: no Deployment labelled app.kubernetes.io/name=gitpeer in namespace gitpeer-system")

	scheme := apis.NewScheme()
	utilruntime.Must(apiextensionsv1.AddToScheme(scheme))
	c, err := client.New(cp.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	if err := crdinstall.Install(ctx, c); err != nil {
		t.Fatal(err)
	}
	// Liqo as its chart installs it: information, with its cluster ID and version.
	if _, err := liqo.Install(ctx, c, liqo.Options{ClusterID: "cluster-a"}); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "liqo"}
	if err := c.Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: liqo.DefaultNamespace, Name: "liqo-controller-manager"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "controller-manager", Image: "ghcr.io/liqotech/liqo-controller-manager:v1.0.1"}}},
			},
		},
	}); err != nil {
		t.Fatal(err)
	}
	out, err = check()
	if err == nil {
		t.Fatalf("check without an agent passed:\n%s", out)
	}
	t.Logf("check:\n%s", out)
	expect(out, `• liqo: installed: cluster ID "cluster-a" in namespace liqo, version v1.0.1 (Deployment liqo/liqo-controller-manager)`,
		"✔ crd peeringrepositories.gitpeer.io: serves v1alpha1", "✔ crd tenants.authentication.liqo.io: serves v1beta1", "• peeringrepositories: none yet", "✗ agent: ")
}

// TestCheckUnreachable checks an API server that does not answer makes one failed check.
func TestCheckUnreachable(t *testing.T) {
	var out bytes.Buffer
	root := newRootCmd()
	root.SetOut(&out)
	root.SetArgs([]string{"check", "--kubeconfig", writeKubeconfig(t, &rest.Config{Host: "https://127.0.0.1:1"})})
	if err := root.Execute(); err == nil || !strings.HasPrefix(out.String(), "✗ kubernetes: server version: ") || strings.Count(out.String(), "\n") != 1 {
		t.Fatalf("error %v, output:\n%s", err, out.String())
	}
}

// issueCSR has the control plane's signer issue a kube-apiserver-client certificate, as the
// provider's agent does, and returns the CSR's name.
func issueCSR(ctx context.Context, t *testing.T, kube kubernetes.Interface) string {
	t.Helper()
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	request, err := gitpeercrypto.BuildCSR(key, "cluster-b")
	if err != nil {
		t.Fatal(err)
	}
	csrs := kube.CertificatesV1().CertificateSigningRequests()
	csr, err := csrs.Create(ctx, &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "cluster-b-"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request: request, SignerName: certificatesv1.KubeAPIServerClientSignerName,
			Usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	csr.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "Test"}}
	if _, err := csrs.UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := csrs.Get(ctx, csr.Name, metav1.GetOptions{})
		return err == nil && len(got.Status.Certificate) > 0, err
	}); err != nil {
		t.Fatalf("CSR %s: %v", csr.Name, err)
	}
	return csr.Name
}

// writeKubeconfig writes a kubeconfig of cfg in a temporary directory and returns its path.
func writeKubeconfig(t *testing.T, cfg *rest.Config) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := controlplane.WriteKubeconfig(cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}
