package reconciler

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gitpeer/gitpeer/apis"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/examples/repofixture"
	"github.com/gitpeer/gitpeer/reconciler/plan/provider"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// liqoSliceSession is a provider session on a fake API server that
// publishes ca as its client CA, as kube-apiserver does.
func liqoSliceSession(t *testing.T, sink *eventSink, ca *repofixture.CA, objs ...client.Object) *session {
	t.Helper()
	objs = append(objs, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: clientCAConfigMap},
		Data: map[string]string{clientCAKey: string(ca.PEM)}})
	c := fake.NewClientBuilder().WithScheme(apis.NewScheme()).WithObjects(objs...).Build()
	s := recordingSession(t, sink)
	s.r.Client, s.r.APIReader = c, c
	return s
}

// sliceCertificate is a certificate issued by ca for a CSR of subject cn, o.
func sliceCertificate(t *testing.T, ca *repofixture.CA, cn, o string) []byte {
	t.Helper()
	key, err := crypto.GenerateKey(crypto.Ed25519)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn, Organization: []string{o}}}, key)
	if err != nil {
		t.Fatal(err)
	}
	crt, err := ca.Issue(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}), time.Now().Add(-time.Minute), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return crt
}

// TestForeignSliceCertificate: certificates planted in the status of a
// consumer's ResourceSlices (by whoever may write it) are not recorded for
// the consumer: one signed by another CA, one the cluster's signer issued
// for another consumer; the one Liqo issued is, by slice, and the others
// are reported.
func TestForeignSliceCertificate(t *testing.T) {
	ca := must(repofixture.NewCA("cluster", time.Now().Add(-time.Hour), 24*time.Hour))
	other := must(repofixture.NewCA("other", time.Now().Add(-time.Hour), 24*time.Hour))
	const consumer = "c1"
	ns := "liqo-tenant-" + consumer
	slice := func(name string, crt []byte) unstructured.Unstructured {
		u := unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"authParams": map[string]any{"signedCRT": base64.StdEncoding.EncodeToString(crt)}}}}
		u.SetGroupVersionKind(provider.LiqoDrainedKinds[0])
		u.SetNamespace(ns)
		u.SetName(name)
		return u
	}
	genuine := sliceCertificate(t, ca, provider.SliceCommonName("slice-1", consumer), consumer)
	drained := []unstructured.Unstructured{
		slice("slice-1", genuine),
		slice("slice-2", sliceCertificate(t, other, provider.SliceCommonName("slice-2", consumer), consumer)),
		slice("slice-3", sliceCertificate(t, ca, provider.SliceCommonName("slice-3", "c2"), "c2")),
	}
	sink := &eventSink{}
	s := liqoSliceSession(t, sink, ca)
	if err := s.liqoProvider().recordLiqoCertificates(context.Background(), consumer, ns, drained, nil); err != nil {
		t.Fatal(err)
	}
	records := must(s.records(context.Background(), consumer))
	want := must(crypto.ParseCertificatePEM(genuine)).SerialNumber.Text(16)
	if len(records.Certificates) != 1 || records.Certificates[0].Serial != want || records.Certificates[0].ResourceSlice != "slice-1" {
		t.Errorf("records %+v, want only %s of slice-1", records.Certificates, want)
	}
	for _, e := range sink.wait(t, 2) {
		if e.Reason != vocabulary.ReasonLiqoCertificateIgnored {
			t.Errorf("event %s: %s", e.Reason, e.Note)
		}
	}
}

// TestDeleteGoneSliceCaches: the cache of a recorded slice is deleted once
// the slice is gone, and its name cleared (its certificate stays recorded);
// the cache of a slice still present stays, and the slice is named as
// waiting.
func TestDeleteGoneSliceCaches(t *testing.T) {
	ctx := context.Background()
	ca := must(repofixture.NewCA("cluster", time.Now().Add(-time.Hour), 24*time.Hour))
	const consumer, ns = "c1", "liqo-tenant-c1"
	cache := func(slice string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: provider.LiqoCertificateCache + "-" + slice}}
	}
	s := liqoSliceSession(t, &eventSink{}, ca, cache("gone"), cache("present"))
	if err := s.updateRecords(ctx, consumer, func(r *vocabulary.ConsumerRecords) bool {
		r.Certificates = []vocabulary.IssuedRecord{{Serial: "1", NotAfter: time.Now().Add(time.Hour), ResourceSlice: "gone"}, {Serial: "2", NotAfter: time.Now().Add(time.Hour), ResourceSlice: "present"}}
		return true
	}); err != nil {
		t.Fatal(err)
	}
	waiting := must(s.liqoProvider().deleteGoneSliceCaches(ctx, consumer, ns, []string{"present"}))
	if !slices.Equal(waiting, []string{"present"}) {
		t.Errorf("waiting %v, want [present]", waiting)
	}
	if err := s.r.Get(ctx, client.ObjectKeyFromObject(cache("gone")), &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Errorf("the cache of the gone slice: %v, want it deleted", err)
	}
	if err := s.r.Get(ctx, client.ObjectKeyFromObject(cache("present")), &corev1.Secret{}); err != nil {
		t.Errorf("the cache of the present slice: %v, want it kept", err)
	}
	records := must(newRecordStore(s.r, s.obj).records(ctx, consumer))
	if len(records.Certificates) != 2 || records.Certificates[0].ResourceSlice != "" || records.Certificates[1].ResourceSlice != "present" {
		t.Errorf("records %+v, want the gone slice's name cleared, its certificate kept", records.Certificates)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestLiqoBindings: the revocation waits for the RoleBindings naming the
// consumer, as a User or a Group, that this PeeringRepository does not own
// (Liqo's); its own go with deleteOwned, and others' subjects do not count.
func TestLiqoBindings(t *testing.T) {
	ca := must(repofixture.NewCA("cluster", time.Now().Add(-time.Hour), 24*time.Hour))
	const consumer, ns = "c1", "liqo-tenant-c1"
	binding := func(name string, labels map[string]string, subjects ...rbacv1.Subject) *rbacv1.RoleBinding {
		return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "liqo-remote-controlplane"},
			Subjects: subjects}
	}
	s := liqoSliceSession(t, &eventSink{}, ca)
	objs := []client.Object{
		binding("liqo-binding-liqo-remote-controlplane", nil, rbacv1.Subject{Kind: rbacv1.UserKind, Name: consumer}),
		binding("liqo-group", nil, rbacv1.Subject{Kind: rbacv1.GroupKind, Name: consumer}),
		binding("ours", map[string]string{vocabulary.OwnerLabel: string(s.obj.UID)}, rbacv1.Subject{Kind: rbacv1.UserKind, Name: consumer}),
		binding("another", nil, rbacv1.Subject{Kind: rbacv1.UserKind, Name: "c2"}),
		binding("a-service-account", nil, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: consumer, Namespace: ns}),
	}
	for _, obj := range objs {
		if err := s.r.Create(context.Background(), obj); err != nil {
			t.Fatal(err)
		}
	}
	got := must(s.liqoProvider().liqoBindings(context.Background(), consumer, ns))
	if want := []string{"liqo-binding-liqo-remote-controlplane", "liqo-group"}; !slices.Equal(got, want) {
		t.Errorf("bound by %v, want %v", got, want)
	}
}
