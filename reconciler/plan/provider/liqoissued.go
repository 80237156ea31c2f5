package provider

import (
	"crypto/sha256"
	"crypto/x509"
	"fmt"
	"slices"
	"time"

	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// MaxSliceCertificates caps the certificates of ResourceSlices a provider
// records per consumer (records naming a slice). A consumer's records share
// a records Secret (vocabulary.RecordsShards, about 160 consumers each at
// 10,000) whose size the API server caps at 1 MiB: 32 slice records (about 4
// KiB) leave room for every consumer of the shard, and a consumer with more
// slices at once than this is not what Liqo's ResourceSlices are for (one per
// resource request to a provider). A certificate over the cap is reported,
// never dropped silently.
const MaxSliceCertificates = 32

// SliceCommonName is the common name Liqo gives the certificate of the
// ResourceSlice slice of consumer: the slice's name and the first 6 bytes of
// the SHA-256 of the consumer's cluster ID, in hex (liqotech/liqo v1.2.0
// pkg/liqo-controller-manager/authentication/csr.go,
// CommonNameResourceSliceCSR).
func SliceCommonName(slice, consumer string) string {
	sum := sha256.Sum256([]byte(consumer))
	return fmt.Sprintf("%s-%x", slice, sum[:6])
}

// CheckLiqoIssued reports why cert, found where Liqo keeps what it issued
// for consumer (a Tenant's or a ResourceSlice's status, Liqo's caches), is
// not a certificate Liqo issued to consumer, for the ResourceSlice slice or,
// when slice is "", for its control plane: it must chain, for client
// authentication at now, to roots (the CAs the API server accepts client
// certificates from: a certificate that does not is no access to take back),
// and carry the subject Liqo gives it: CN=<consumer>, O=[liqo.io] for the
// control plane, CN=<slice>-<hash> (SliceCommonName), O=[<consumer>] for a
// slice. Whoever may write a slice's status or a Secret of the tenant
// namespace could otherwise add serials to the consumer's records.
func CheckLiqoIssued(cert *x509.Certificate, roots *x509.CertPool, consumer, slice string, now time.Time) error {
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		return fmt.Errorf("certificate %s does not chain to the cluster's client CA: %w", cert.SerialNumber.Text(16), err)
	}
	if slice == "" {
		return protocol.CheckSubject(cert, consumer)
	}
	if cn := SliceCommonName(slice, consumer); cert.Subject.CommonName != cn || !slices.Equal(cert.Subject.Organization, []string{consumer}) {
		return fmt.Errorf("certificate %s of ResourceSlice %s is for CN=%s, O=%v, not CN=%s, O=[%s]",
			cert.SerialNumber.Text(16), slice, cert.Subject.CommonName, cert.Subject.Organization, cn, consumer)
	}
	return nil
}

// SliceCert is a certificate Liqo issued for the ResourceSlice Slice.
type SliceCert struct {
	Slice string
	Cert  *x509.Certificate
}

// WithSliceCertificates adds to records each certificate of certs, named by
// its slice (vocabulary.WithSliceIssued), while fewer than
// MaxSliceCertificates records name a slice; it returns the records, whether
// they changed, and the slices whose certificate the cap left out.
func WithSliceCertificates(records []vocabulary.IssuedRecord, certs []SliceCert) (out []vocabulary.IssuedRecord, changed bool, over []string) {
	out = records
	for _, c := range certs {
		slice, cert := c.Slice, c.Cert
		serial := cert.SerialNumber.Text(16)
		known := slices.ContainsFunc(out, func(r vocabulary.IssuedRecord) bool { return r.Serial == serial && r.ResourceSlice != "" })
		if !known && namingSlices(out) >= MaxSliceCertificates {
			over = append(over, slice)
			continue
		}
		var added bool
		out, added = vocabulary.WithSliceIssued(out, slice, serial, cert.NotAfter)
		changed = changed || added
	}
	return out, changed, over
}

// namingSlices counts the records that name a ResourceSlice.
func namingSlices(records []vocabulary.IssuedRecord) int {
	n := 0
	for _, r := range records {
		if r.ResourceSlice != "" {
			n++
		}
	}
	return n
}

// SliceCachesToDelete names the ResourceSlices whose certificate cache
// (liqo-remote-certificate-<slice>) the provider deletes now: those records
// name that are not among present, the consumer's slices that still exist.
// Liqo's ResourceSlice controller writes a slice's cache again while the
// slice exists, and never deletes it when the slice goes; a slice still
// present waits for a later round.
func SliceCachesToDelete(records []vocabulary.IssuedRecord, present []string) []string {
	var out []string
	for _, r := range records {
		if r.ResourceSlice != "" && !slices.Contains(present, r.ResourceSlice) && !slices.Contains(out, r.ResourceSlice) {
			out = append(out, r.ResourceSlice)
		}
	}
	slices.Sort(out)
	return out
}

// WithCachesDeleted clears the slice name of the records naming one of
// deleted, whose cache is gone: nothing is left to delete for them.
func WithCachesDeleted(records []vocabulary.IssuedRecord, deleted []string) ([]vocabulary.IssuedRecord, bool) {
	changed := false
	out := slices.Clone(records)
	for i := range out {
		if out[i].ResourceSlice != "" && slices.Contains(deleted, out[i].ResourceSlice) {
			out[i].ResourceSlice, changed = "", true
		}
	}
	return out, changed
}
