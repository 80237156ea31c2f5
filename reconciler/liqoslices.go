package reconciler

import (
	"context"
	"crypto/x509"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/reconciler/plan/provider"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// The certificates Liqo issues for a consumer's ResourceSlices, in Liqo
// mode: recorded by slice as Liqo issues them (sliceWatch), when the peering
// fails closed and at revocation, each checked to be Liqo's for that consumer
// (provider.CheckLiqoIssued); their caches deleted by recorded name once the
// slice is gone.

// clientCAConfigMap and clientCAKey name where the API server publishes the
// CAs it accepts client certificates from (kube-apiserver's
// --client-ca-file), which include the signer that issues Liqo's
// certificates: a certificate that does not chain to them grants nothing.
const (
	clientCAConfigMap = "extension-apiserver-authentication"
	clientCAKey       = "client-ca-file"
)

// clientCA returns the CAs the API server accepts client certificates from.
func (s liqoProvider) clientCA(ctx context.Context) (*x509.CertPool, error) {
	cm := &corev1.ConfigMap{}
	if err := s.r.apiReader().Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: clientCAConfigMap}, cm); err != nil {
		return nil, fmt.Errorf("reading the cluster's client CA (ConfigMap %s/%s): %w", metav1.NamespaceSystem, clientCAConfigMap, err)
	}
	pool, err := crypto.ParseCAPEM([]byte(cm.Data[clientCAKey]))
	if err != nil {
		return nil, fmt.Errorf("ConfigMap %s/%s, key %s: %w", metav1.NamespaceSystem, clientCAConfigMap, clientCAKey, err)
	}
	return pool, nil
}

// recordLiqoIssued records the certificates of found that Liqo issued to
// consumer (provider.CheckLiqoFound; a slice's by its name, within
// provider.MaxSliceCertificates) in one write. One that does not parse is no
// certificate anyone could use; one that is not Liqo's, or over the cap, is
// reported with a Warning event.
func (s liqoProvider) recordLiqoIssued(ctx context.Context, consumer string, found []provider.LiqoFound) error {
	if len(found) == 0 {
		return nil
	}
	roots, err := s.clientCA(ctx)
	if err != nil {
		return err
	}
	checked := provider.CheckLiqoFound(found, roots, consumer, s.r.Now())
	for _, err := range checked.Ignored {
		s.r.emit(s.obj, provider.IgnoredEvent(consumer, err))
	}
	over, err := s.recordLiqoChecked(ctx, consumer, checked)
	if err == nil && len(over) > 0 {
		s.r.emit(s.obj, provider.OverCapEvent(consumer, over))
	}
	return err
}

// recordLiqoChecked records checked, certificates Liqo issued to consumer,
// in one write (provider.WithLiqoChecked); over are the slices the cap left out.
func (s liqoProvider) recordLiqoChecked(ctx context.Context, consumer string, checked provider.LiqoChecked) (over []string, err error) {
	err = s.updateRecords(ctx, consumer, func(r *vocabulary.ConsumerRecords) bool {
		var changed bool
		r.Certificates, changed, over = provider.WithLiqoChecked(r.Certificates, checked)
		return changed
	})
	return over, err
}

// recordLiqoCertificates records the certificates Liqo issued for consumer
// found in the status of the ResourceSlices among drained and in its caches
// in ns, caches and those of the slices the records name (the control
// plane's, liqo-remote-certificate, and a slice's,
// liqo-remote-certificate-<slice>), by slice (recordLiqoIssued).
func (s liqoProvider) recordLiqoCertificates(ctx context.Context, consumer, ns string, drained []unstructured.Unstructured, caches []string) error {
	recorded, err := s.recordedSliceCaches(ctx, consumer)
	if err != nil {
		return err
	}
	caches = append(slices.Clone(caches), recorded...)
	slices.Sort(caches)
	caches = slices.Compact(caches)
	var found []provider.LiqoFound
	for i := range drained {
		pem, err := provider.SliceCertificate(&drained[i])
		if err == nil && pem != nil {
			found = append(found, provider.LiqoFound{Slice: drained[i].GetName(), PEM: pem})
		}
	}
	for _, name := range caches {
		secret := &corev1.Secret{}
		if err := s.r.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, secret); err != nil {
			if client.IgnoreNotFound(err) != nil {
				return err
			}
			continue
		}
		slice := strings.TrimPrefix(strings.TrimPrefix(name, provider.LiqoCertificateCache), "-")
		found = append(found, provider.LiqoFound{Slice: slice, PEM: secret.Data[provider.LiqoCacheCertificateKey]})
	}
	return s.recordLiqoIssued(ctx, consumer, found)
}

// recordWatchedSlices records the certificates Liqo issued for the
// ResourceSlices of consumer that the slice watch saw (sliceWatch), by slice
// name, in one write; what it could not write is seen again at the next call.
func (s liqoProvider) recordWatchedSlices(ctx context.Context, consumer string) error {
	seen := s.r.slices.take(consumer)
	if len(seen) == 0 {
		return nil
	}
	err := s.recordLiqoIssued(ctx, consumer, provider.WatchedFound(seen))
	if err != nil {
		s.r.slices.putBack(consumer, seen)
	}
	return err
}

// recordedSliceCaches names the caches of the ResourceSlices the records of
// consumer name (vocabulary.IssuedRecord.ResourceSlice).
func (s liqoProvider) recordedSliceCaches(ctx context.Context, consumer string) ([]string, error) {
	records, err := s.records(ctx, consumer)
	if err != nil {
		return nil, err
	}
	return provider.LiqoCertificateCaches(provider.SliceCachesToDelete(records.Certificates, nil))[1:], nil
}

// deleteGoneSliceCaches deletes, in the tenant namespace ns, Liqo's cache
// of every ResourceSlice the records of consumer name that is not among
// present (the slices that still exist: Liqo's ResourceSlice controller
// writes a slice's cache again while the slice exists), then clears those
// names (deleteSliceCaches). It returns the recorded slices still present,
// whose caches wait for a later round.
func (s liqoProvider) deleteGoneSliceCaches(ctx context.Context, consumer, ns string, present []string) ([]string, error) {
	records, err := s.records(ctx, consumer)
	if err != nil {
		return nil, err
	}
	if err := s.deleteSliceCaches(ctx, consumer, ns, provider.SliceCachesToDelete(records.Certificates, present)); err != nil {
		return nil, err
	}
	return provider.WaitingSlices(records.Certificates, present), nil
}

// sliceNames returns the names of the ResourceSlices among objs.
func sliceNames(objs []unstructured.Unstructured) []string {
	var out []string
	for _, obj := range objs {
		if obj.GetKind() == provider.LiqoDrainedKinds[0].Kind {
			out = append(out, obj.GetName())
		}
	}
	return out
}
