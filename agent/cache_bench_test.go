package agent

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"sync"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitpeer/gitpeer/apis"
	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	"github.com/gitpeer/gitpeer/test/controlplane"
	"github.com/gitpeer/gitpeer/test/crdinstall"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// BenchmarkCacheByKind measures the heap each informer of the agent's cache
// holds per object, with the agent's own cache options, against a real API
// server holding the objects of GITPEER_CACHE_BENCH_N (default 1,000) issued
// peerings as the agent writes them: a tenant namespace (labels and
// annotations), a Tenant with its certificate, a RoleBinding and a labelled
// CSR each. Each kind is measured apart: the heap after a collection with
// the cache started and synced, less the heap before. Run it with
// -benchtime=1x; GITPEER_CACHE_BENCH_PROFILE=<dir> also writes a heap
// profile per kind.
//
// Measured on 2026-11-26 at 10,000 peerings (MiB, B per object), before and
// after the compact forms (reconciler/compact) and shared strings:
//
//	kind         before          after
//	Namespace    14.3  1,500      8.5    893
//	Tenant       24.0  2,513     22.7  2,384
//	RoleBinding  15.0  1,572     10.1  1,054
//	CSR           8.9    933      4.7    492
//	all four     60.5  1,584     44.4  1,164  (at once, as in the agent)
//
// On 2026-11-27, with Tenants compact too (compact.Tenant): Tenant 17.7 MiB,
// 1,856 B; all four 39.4 MiB, 1,031 B.
func BenchmarkCacheByKind(b *testing.B) {
	n := 1000
	if v := os.Getenv("GITPEER_CACHE_BENCH_N"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			b.Fatal(err)
		}
	}
	cp := controlplane.Start(b)
	cfg := *cp.Config
	cfg.QPS, cfg.Burst = 2000, 4000
	scheme := apis.NewScheme()
	k8s, err := client.New(&cfg, client.Options{Scheme: scheme})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		b.Fatal(err)
	}
	if err := crdinstall.Install(ctx, k8s); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	fill(b, ctx, k8s, n)
	b.Logf("%d peerings created in %s", n, time.Since(start).Round(time.Second))

	if os.Getenv("GITPEER_CACHE_BENCH_PROFILE") != "" {
		runtime.MemProfileRate = 64 // the profiles attribute the informers' small objects
	}
	csrMeta := &metav1.PartialObjectMetadata{}
	csrMeta.SetGroupVersionKind(certificatesv1.SchemeGroupVersion.WithKind("CertificateSigningRequest"))
	kinds := []struct {
		name string
		objs []client.Object
	}{
		{"Namespace", []client.Object{&corev1.Namespace{}}},
		{"Tenant", []client.Object{&authv1beta1.Tenant{}}},
		{"RoleBinding", []client.Object{&rbacv1.RoleBinding{}}},
		{"CSR", []client.Object{csrMeta}},
		// The four at once, as in the agent: strings shared between kinds are held once.
		{"All", []client.Object{&corev1.Namespace{}, &authv1beta1.Tenant{}, &rbacv1.RoleBinding{}, csrMeta}},
	}
	for b.Loop() {
		for _, k := range kinds {
			bytes, objects := cacheHeap(b, cp, k.name, k.objs...)
			b.ReportMetric(float64(bytes)/float64(objects), k.name+"-B/obj")
			b.ReportMetric(float64(bytes)/(1<<20), k.name+"-MiB")
			b.Logf("%s: %d objects, %.1f MiB, %d B each", k.name, objects, float64(bytes)/(1<<20), bytes/int64(objects))
		}
	}
}

// cacheHeap starts a cache with the agent's options and only the informers
// of objs, and returns the heap it holds once synced and the objects in it.
func cacheHeap(b *testing.B, cp *controlplane.ControlPlane, name string, objs ...client.Object) (int64, int) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	before := heapAfterGC()
	opts := cacheOptions("")
	opts.Scheme = apis.NewScheme()
	c, err := cache.New(cp.Config, opts)
	if err != nil {
		b.Fatal(err)
	}
	var infs []toolscache.SharedIndexInformer
	for _, obj := range objs {
		inf, err := c.GetInformer(ctx, obj)
		if err != nil {
			b.Fatal(err)
		}
		infs = append(infs, inf.(toolscache.SharedIndexInformer))
	}
	var wg sync.WaitGroup
	wg.Go(func() { _ = c.Start(ctx) })
	if !c.WaitForCacheSync(ctx) {
		b.Fatal("the cache did not start")
	}
	objects := 0
	for _, inf := range infs {
		objects += len(inf.GetStore().ListKeys())
	}
	after := heapAfterGC()
	if dir := os.Getenv("GITPEER_CACHE_BENCH_PROFILE"); dir != "" {
		f, err := os.Create(fmt.Sprintf("%s/%s.heap", dir, name))
		if err != nil {
			b.Fatal(err)
		}
		if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
			b.Fatal(err)
		}
		_ = f.Close()
	}
	cancel()
	wg.Wait()
	runtime.KeepAlive(c)
	return int64(after) - int64(before), max(objects, 1)
}

// heapAfterGC is the live heap: after collections, and the pauses the
// cleanup of strings no longer interned (package unique) runs in.
func heapAfterGC() uint64 {
	for range 3 {
		runtime.GC()
		time.Sleep(100 * time.Millisecond)
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// fill creates n issued peerings' objects as the agent writes them.
func fill(b *testing.B, ctx context.Context, k8s client.Client, n int) {
	caKey, ca := selfSigned(b, "ca")
	owner := types.UID("8d1b5bd2-8f0e-4a43-9b59-6a2a1c1c2f11")
	work := make(chan int)
	errs := make(chan error, 1)
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for i := range work {
				if err := createPeering(ctx, k8s, i, owner, caKey, ca); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
}

func createPeering(ctx context.Context, k8s client.Client, i int, owner types.UID, caKey ed25519.PrivateKey, ca *x509.Certificate) error {
	consumer := fmt.Sprintf("consumer-%05d-7f3a9c2e", i)
	ns := authv1beta1.TenantNamespaceName(authv1beta1.ClusterID(consumer))
	ours := func(m map[string]string) map[string]string {
		m[authv1beta1.RemoteClusterIDLabel] = consumer
		m[vocabulary.ManagedByLabel], m[vocabulary.OwnerLabel] = "gitpeer", string(owner)
		return m
	}
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return err
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: consumer}}, key)
	if err != nil {
		return err
	}
	csrPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
	cert := selfSignedPEM(consumer, pub, caKey, ca)
	pin := sha256.Sum256(pub)
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: ours(authv1beta1.TenantNamespaceLabels(authv1beta1.ClusterID(consumer))),
			Annotations: map[string]string{vocabulary.ModeAnnotation: "gitpeer", vocabulary.PinnedKeyAnnotation: hex.EncodeToString(pin[:])}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: authv1beta1.RoleBindingName("liqo-remote-controlplane"), Labels: ours(map[string]string{})},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "liqo-remote-controlplane"},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: consumer}}},
		&certificatesv1.CertificateSigningRequest{
			ObjectMeta: metav1.ObjectMeta{GenerateName: consumer + "-", Labels: map[string]string{vocabulary.ConsumerLabel: consumer, vocabulary.OwnerLabel: string(owner)},
				Annotations: map[string]string{vocabulary.TenantSignatureAnnotation: hex.EncodeToString(pin[:])}},
			Spec: certificatesv1.CertificateSigningRequestSpec{Request: csrPEM, SignerName: certificatesv1.KubeAPIServerClientSignerName,
				Usages: []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth}}},
	}
	tenant := &authv1beta1.Tenant{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: consumer, Labels: ours(map[string]string{})},
		Spec: authv1beta1.TenantSpec{ClusterID: authv1beta1.ClusterID(consumer), PublicKey: pub, CSR: csrPEM,
			Signature: ed25519.Sign(key, []byte("nonce")), TenantCondition: authv1beta1.TenantConditionActive}}
	for _, o := range append(objs, tenant) {
		if err := k8s.Create(ctx, o); err != nil {
			return err
		}
	}
	tenant.Status = authv1beta1.TenantStatus{TenantNamespace: ns, AuthParams: &authv1beta1.AuthParams{
		CA: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw}), SignedCRT: cert, APIServer: "https://127.0.0.1:6443"}}
	return k8s.Status().Update(ctx, tenant)
}

func selfSigned(b testing.TB, cn string) (ed25519.PrivateKey, *x509.Certificate) {
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn}, IsCA: true, BasicConstraintsValid: true,
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		b.Fatal(err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		b.Fatal(err)
	}
	return key, ca
}

// selfSignedPEM is a client certificate for cn's key pub signed by ca, as the
// cluster signer issues it.
func selfSignedPEM(cn string, pub ed25519.PublicKey, caKey ed25519.PrivateKey, ca *x509.Certificate) []byte {
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now(), NotAfter: time.Now().Add(24 * time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, pub, caKey)
	if err != nil {
		panic(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
