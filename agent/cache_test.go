package agent

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"testing"
	"time"
	"unsafe"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	"github.com/gitpeer/gitpeer/reconciler"
	"github.com/gitpeer/gitpeer/test/controlplane"
)

// TestCacheHoldsOnlyLabelledCSRs runs the agent's cache options against a
// real API server: the metadata cache of CSRs holds only the CSRs labelled
// for a consumer by a PeeringRepository, with only those two labels.
func TestCacheHoldsOnlyLabelledCSRs(t *testing.T) {
	cp := controlplane.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	opts := cacheOptions("")
	opts.Scheme = reconciler.NewScheme()
	c, err := cache.New(cp.Config, opts)
	if err != nil {
		t.Fatal(err)
	}
	k8s, err := client.New(cp.Config, client.Options{Scheme: opts.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	own := newCSR(t, "own", map[string]string{reconciler.ConsumerLabel: "c1", reconciler.OwnerLabel: "uid-1", "other": "x"})
	own.Annotations = map[string]string{reconciler.TenantSignatureAnnotation: "abc"}
	for _, csr := range []*certificatesv1.CertificateSigningRequest{own, newCSR(t, "kubelet", nil), newCSR(t, "no-owner", map[string]string{reconciler.ConsumerLabel: "c1"})} {
		if err := k8s.Create(ctx, csr); err != nil {
			t.Fatal(err)
		}
	}
	// The agent's cache reads only informers started with it (the manager's watches): start this one.
	csrMeta := &metav1.PartialObjectMetadata{}
	csrMeta.SetGroupVersionKind(certificatesv1.SchemeGroupVersion.WithKind("CertificateSigningRequest"))
	if _, err := c.GetInformer(ctx, csrMeta); err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("the cache did not start")
	}
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(certificatesv1.SchemeGroupVersion.WithKind("CertificateSigningRequestList"))
	if err := c.List(ctx, list); err != nil { // blocks until the informer has synced
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Name != "own" {
		t.Fatalf("cached CSRs: %v; want only own", names(list.Items))
	}
	got := list.Items[0]
	want := map[string]string{reconciler.ConsumerLabel: "c1", reconciler.OwnerLabel: "uid-1"}
	if len(got.Labels) != len(want) || got.Labels[reconciler.ConsumerLabel] != "c1" || got.Labels[reconciler.OwnerLabel] != "uid-1" || got.Annotations != nil {
		t.Errorf("cached CSR: labels %v, annotations %v; want labels %v, no annotations", got.Labels, got.Annotations, want)
	}
}

// TestShareStrings checks that two objects decoded apart hold the same
// strings for equal labels and annotation keys, and the same CA bytes in
// their Tenant status, without managed fields; values stay equal.
func TestShareStrings(t *testing.T) {
	transform := shareStrings()
	tenant := func() *authv1beta1.Tenant {
		ca, uid := []byte("-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n"), string([]byte("uid-1"))
		return &authv1beta1.Tenant{
			ObjectMeta: metav1.ObjectMeta{
				Labels:        map[string]string{string([]byte(reconciler.OwnerLabel)): uid},
				Annotations:   map[string]string{string([]byte("note")): string([]byte("free text"))},
				ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "gitpeer"}},
			},
			Status: authv1beta1.TenantStatus{AuthParams: &authv1beta1.AuthParams{CA: ca}},
		}
	}
	a, b := tenant(), tenant()
	for _, o := range []*authv1beta1.Tenant{a, b} {
		if _, err := transform(o); err != nil {
			t.Fatal(err)
		}
		if o.ManagedFields != nil || o.Labels[reconciler.OwnerLabel] != "uid-1" || o.Annotations["note"] != "free text" {
			t.Fatalf("transformed: %+v", o.ObjectMeta)
		}
	}
	same := func(x, y string) bool { return unsafe.StringData(x) == unsafe.StringData(y) }
	if !same(a.Labels[reconciler.OwnerLabel], b.Labels[reconciler.OwnerLabel]) || !same(key(a.Labels), key(b.Labels)) || !same(key(a.Annotations), key(b.Annotations)) {
		t.Error("equal labels and annotation keys are not shared")
	}
	if &a.Status.AuthParams.CA[0] != &b.Status.AuthParams.CA[0] {
		t.Error("equal CAs are not shared")
	}
}

func key(m map[string]string) string {
	for k := range m {
		return k
	}
	return ""
}

func names(items []metav1.PartialObjectMetadata) []string {
	var out []string
	for _, o := range items {
		out = append(out, o.Name)
	}
	return out
}

// newCSR is a valid kube-apiserver-client CSR named name with labels.
func newCSR(t *testing.T, name string, labels map[string]string) *certificatesv1.CertificateSigningRequest {
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: name}}, key)
	if err != nil {
		t.Fatal(err)
	}
	return &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: certificatesv1.KubeAPIServerClientSignerName,
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth},
		},
	}
}
