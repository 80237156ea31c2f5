package reconciler

import (
	"context"
	"crypto/x509"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/reconciler/provider"
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

// liqoFound is a PEM certificate found where Liqo keeps what it issued for
// a consumer: for the ResourceSlice slice, or its control plane when slice
// is "".
type liqoFound struct {
	slice string
	pem   []byte
}

// recordLiqoIssued records the certificates of found that Liqo issued to
// consumer (provider.CheckLiqoIssued; a slice's by its name, within
// provider.MaxSliceCertificates) in one write. One that does not parse is no
// certificate anyone could use; one that is not Liqo's, or over the cap, is
// reported with a Warning event.
func (s liqoProvider) recordLiqoIssued(ctx context.Context, consumer string, found []liqoFound) error {
	if len(found) == 0 {
		return nil
	}
	roots, err := s.clientCA(ctx)
	if err != nil {
		return err
	}
	var controlPlane []*x509.Certificate
	var sliceCerts []provider.SliceCert
	for _, f := range found {
		cert, err := crypto.ParseCertificatePEM(f.pem)
		if err != nil {
			continue
		}
		if err := provider.CheckLiqoIssued(cert, roots, consumer, f.slice, s.r.Now()); err != nil {
			s.r.eventAbout(s.obj, corev1.EventTypeWarning, vocabulary.ReasonLiqoCertificateIgnored, consumer,
				"not recorded: %v (a certificate Liqo did not issue to %s, put in a ResourceSlice's status or a Secret of its tenant namespace)", err, consumer)
			continue
		}
		if f.slice == "" {
			controlPlane = append(controlPlane, cert)
		} else {
			sliceCerts = append(sliceCerts, provider.SliceCert{Slice: f.slice, Cert: cert})
		}
	}
	var over []string
	err = s.updateRecords(ctx, consumer, func(r *vocabulary.ConsumerRecords) bool {
		changed := false
		for _, cert := range controlPlane {
			var added bool
			r.Certificates, added = vocabulary.WithIssued(r.Certificates, cert.SerialNumber.Text(16), cert.NotAfter)
			changed = changed || added
		}
		var added bool
		r.Certificates, added, over = provider.WithSliceCertificates(r.Certificates, sliceCerts)
		return changed || added
	})
	if err == nil && len(over) > 0 {
		s.r.eventAbout(s.obj, corev1.EventTypeWarning, vocabulary.ReasonSliceCertificatesOverCap, consumer,
			"the certificates Liqo issued for ResourceSlices %s of %s are not recorded: its records hold %d slice certificates already; a revocation neither marks them revoked nor deletes their caches liqo-remote-certificate-<slice> once the slices are gone: delete those by hand",
			strings.Join(over, ", "), consumer, provider.MaxSliceCertificates)
	}
	return err
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
	var found []liqoFound
	for i := range drained {
		pem, err := provider.SliceCertificate(&drained[i])
		if err == nil && pem != nil {
			found = append(found, liqoFound{slice: drained[i].GetName(), pem: pem})
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
		found = append(found, liqoFound{slice: slice, pem: secret.Data[provider.LiqoCacheCertificateKey]})
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
	var found []liqoFound
	for _, name := range slices.Sorted(maps.Keys(seen)) {
		found = append(found, liqoFound{slice: name, pem: seen[name]})
	}
	err := s.recordLiqoIssued(ctx, consumer, found)
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
// names: the certificates stay recorded. It returns the recorded slices still
// present, whose caches wait for a later round.
func (s liqoProvider) deleteGoneSliceCaches(ctx context.Context, consumer, ns string, present []string) ([]string, error) {
	records, err := s.records(ctx, consumer)
	if err != nil {
		return nil, err
	}
	gone := provider.SliceCachesToDelete(records.Certificates, present)
	if err := s.deleteLiqoCaches(ctx, ns, provider.LiqoCertificateCaches(gone)[1:]...); err != nil {
		return nil, err
	}
	if len(gone) > 0 {
		if err := s.updateRecords(ctx, consumer, func(r *vocabulary.ConsumerRecords) bool {
			var changed bool
			r.Certificates, changed = provider.WithCachesDeleted(r.Certificates, gone)
			return changed
		}); err != nil {
			return nil, err
		}
	}
	var waiting []string
	for _, r := range records.Certificates {
		if r.ResourceSlice != "" && slices.Contains(present, r.ResourceSlice) && !slices.Contains(waiting, r.ResourceSlice) {
			waiting = append(waiting, r.ResourceSlice)
		}
	}
	return waiting, nil
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
