package reconciler

import (
	"fmt"
	"runtime"
	"strconv"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitpeer/gitpeer/apis"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/reconciler/plan/provider"
	"github.com/gitpeer/gitpeer/test/controlplane"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// BenchmarkRoundCSRList measures what a provider's round keeps of the CSRs
// labelled for consumers (listCSRs) on a real API server holding 10,000 of
// them, issued by the cluster's signer: every CSR, as rounds kept before the
// round limit, against those of the round's signing peerings alone (1,000,
// provider.DefaultRoundLimit). It reports the live heap the list holds.
//
//	go test ./reconciler/ -run '^$' -bench RoundCSRList -benchtime 1x
func BenchmarkRoundCSRList(b *testing.B) {
	const n = 10000
	cp := controlplane.Start(b)
	cfg := rest.CopyConfig(cp.Config)
	cfg.QPS, cfg.Burst = 1000, 2000
	c, err := client.New(cfg, client.Options{Scheme: apis.NewScheme()})
	if err != nil {
		b.Fatal(err)
	}
	key, err := crypto.GenerateKey(crypto.Ed25519)
	if err != nil {
		b.Fatal(err)
	}
	consumer := func(i int) string { return fmt.Sprintf("consumer-%05d", i) }
	ctx := b.Context()
	forEachAtOnce(n, 32, func(i int) {
		request, err := crypto.BuildCSR(key, consumer(i))
		if err != nil {
			b.Error(err)
			return
		}
		csr := provider.NewCSR(provider.Signing{Consumer: consumer(i), Owner: "owner", Request: request, Signature: []byte{byte(i)}, TTL: time.Hour})
		if err := c.Create(ctx, csr); err != nil {
			b.Error(err)
			return
		}
		csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "Benchmark"})
		if err := c.SubResource("approval").Update(ctx, csr); err != nil {
			b.Error(err)
		}
	})
	if b.Failed() {
		b.FailNow()
	}
	for signed := 0; signed < n; time.Sleep(time.Second) { // the signer issues every certificate
		var list certificatesv1.CertificateSigningRequestList
		if err := c.List(ctx, &list, client.HasLabels{vocabulary.ConsumerLabel}); err != nil {
			b.Fatal(err)
		}
		signed = 0
		for _, csr := range list.Items {
			if len(csr.Status.Certificate) > 0 {
				signed++
			}
		}
	}
	s := sessionOf(&PeeringRepositoryReconciler{Client: c, APIReader: c}, nil)
	heap := func() int64 { // live bytes after a collection
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return int64(m.HeapAlloc)
	}
	for _, bc := range []struct {
		name string
		keep func(string) bool
	}{
		{"every-CSR", func(string) bool { return true }},
		{"signing-" + strconv.Itoa(provider.DefaultRoundLimit), func(c string) bool { return c < consumer(provider.DefaultRoundLimit) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				before := heap()
				csrs, err := s.listCSRs(ctx, client.HasLabels{vocabulary.ConsumerLabel}, bc.keep)
				if err != nil {
					b.Fatal(err)
				}
				held := heap()
				b.ReportMetric(float64(held-before)/(1<<20), "held-MiB")
				b.ReportMetric(float64(len(csrs)), "consumers")
				runtime.KeepAlive(csrs)
			}
		})
	}
}
