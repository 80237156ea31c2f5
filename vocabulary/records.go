package vocabulary

import (
	"cmp"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The records format: what a provider remembers of its consumers, in Secrets
// of the agent's namespace that the agent and `gitpeer records` read and write.

// RecordsSecretPrefix, followed by the PeeringRepository's name, "-" and a
// shard (two hex digits, see RecordsSecretName), names the Secrets in the
// agent's namespace where a provider records every certificate it issued, per
// consumer, with its expiry and revocation time, and the consumer's key pin.
// They are sharded so that each stays small at any number of consumers.
const RecordsSecretPrefix = "gitpeer-records-"

// RecordsShards is the number of records Secrets a PeeringRepository's
// consumers are spread over: at 10,000 consumers each holds about 160.
const RecordsShards = 64

// IssuedSecretPrefix, followed by the PeeringRepository's name, names the
// single records Secret of gitpeer 0.1.0 (and of `gitpeer records` of that
// version). The agent moves its records to the sharded Secrets, once, before
// it reads any record, and deletes it.
const IssuedSecretPrefix = "gitpeer-issued-"

// RecordsSecretName names the records Secret of consumer of the
// PeeringRepository repository: shard = first byte of SHA-256(consumer ID)
// modulo RecordsShards. Fixed forever: records are looked up by this name.
func RecordsSecretName(repository, consumer string) string {
	sum := sha256.Sum256([]byte(consumer))
	return fmt.Sprintf("%s%s-%02x", RecordsSecretPrefix, repository, int(sum[0])%RecordsShards)
}

// IssuedRecord is one certificate issued to a consumer, as the provider
// records it: its serial (hex, as in the Gitpeer-Serial trailer), expiry and
// revocation time. ResourceSlice names the slice of a certificate Liqo
// issued for a ResourceSlice (Liqo mode) while its cache
// (liqo-remote-certificate-<slice>) may still exist: Liqo keeps that cache
// after the slice goes, and the provider deletes it by this name once the
// certificate is revoked or dropped and the slice is gone, then clears it.
type IssuedRecord struct {
	Serial        string     `json:"serial"`
	NotAfter      time.Time  `json:"notAfter"`
	RevokedAt     *time.Time `json:"revokedAt,omitempty"`
	ResourceSlice string     `json:"resourceSlice,omitempty"`
}

// ConsumerRecords is what the provider remembers of one consumer: the key
// pinned at first issuance (the SHA-256 of its PKIX encoding, in hex) and the
// certificates issued since. It is stored as JSON under the consumer's ID in
// its records Secret (RecordsSecretName).
type ConsumerRecords struct {
	PinnedKey    string         `json:"pinnedKey,omitempty"`
	Certificates []IssuedRecord `json:"certificates,omitempty"`
}

// DecodeRecords reads the records of consumer from a records Secret (none
// if it has no key for consumer), as the provider does before binding it.
// The Secret's labels are not checked: a Secret rebuilt by `gitpeer records`
// without the owner label is read alike, and gains it at the next write.
func DecodeRecords(secret *corev1.Secret, consumer string) (ConsumerRecords, error) {
	var out ConsumerRecords
	if data, ok := secret.Data[consumer]; ok {
		if err := json.Unmarshal(data, &out); err != nil {
			return out, fmt.Errorf("secret %s/%s, key %s: %w", secret.Namespace, secret.Name, consumer, err)
		}
	}
	return out, nil
}

// SetRecords stores the records of consumer in a records Secret, with the
// agent's labels; the owner label (the PeeringRepository's UID) only when
// owner is not empty.
func SetRecords(secret *corev1.Secret, owner types.UID, consumer string, records ConsumerRecords) error {
	data, err := json.Marshal(records)
	if err != nil {
		return err
	}
	metav1.SetMetaDataLabel(&secret.ObjectMeta, ManagedByLabel, ManagedBy)
	if owner != "" {
		metav1.SetMetaDataLabel(&secret.ObjectMeta, OwnerLabel, string(owner))
	}
	if secret.Data == nil {
		secret.Data = map[string][]byte{}
	}
	secret.Data[consumer] = data
	return nil
}

// WithIssued adds the certificate serial (hex) valid until notAfter to
// records unless it is there; it reports a change.
func WithIssued(records []IssuedRecord, serial string, notAfter time.Time) ([]IssuedRecord, bool) {
	if slices.ContainsFunc(records, func(r IssuedRecord) bool { return r.Serial == serial }) {
		return records, false
	}
	return append(records, IssuedRecord{Serial: serial, NotAfter: notAfter.UTC()}), true
}

// WithSliceIssued adds the certificate serial (hex) valid until notAfter,
// which Liqo issued for the ResourceSlice slice, to records unless it is
// there, and names the slice on it (a record of it made without the name
// gains it); it reports a change.
func WithSliceIssued(records []IssuedRecord, slice, serial string, notAfter time.Time) ([]IssuedRecord, bool) {
	records, changed := WithIssued(records, serial, notAfter)
	i := slices.IndexFunc(records, func(r IssuedRecord) bool { return r.Serial == serial })
	if records[i].ResourceSlice == slice {
		return records, changed
	}
	records[i].ResourceSlice = slice
	return records, true
}

// WithRevoked marks every unrevoked record revoked at now and drops the
// expired ones; it reports a change.
func WithRevoked(records []IssuedRecord, now time.Time) ([]IssuedRecord, bool) {
	changed := false
	out := records[:0:0]
	for _, r := range records {
		if !r.NotAfter.After(now) {
			changed = true
			continue
		}
		if r.RevokedAt == nil {
			at := now.UTC()
			r.RevokedAt, changed = &at, true
		}
		out = append(out, r)
	}
	return out, changed
}

// WithoutExpired drops the certificates expired at now: they grant nothing and
// block nothing (a revoked one only forbids revival while it is valid), and
// renewals would grow the records without end. It reports a change.
func WithoutExpired(records []IssuedRecord, now time.Time) ([]IssuedRecord, bool) {
	out := slices.DeleteFunc(slices.Clone(records), func(r IssuedRecord) bool { return !r.NotAfter.After(now) })
	return out, len(out) != len(records)
}

// MergeRecords returns the union of what a and b remember of one consumer:
// every certificate, revoked if either says so (at the earlier time), of the
// ResourceSlice either names; the pin of a, or else of b.
func MergeRecords(a, b ConsumerRecords) ConsumerRecords {
	out := ConsumerRecords{PinnedKey: cmp.Or(a.PinnedKey, b.PinnedKey), Certificates: slices.Clone(a.Certificates)}
	for _, r := range b.Certificates {
		i := slices.IndexFunc(out.Certificates, func(o IssuedRecord) bool { return o.Serial == r.Serial })
		if i < 0 {
			out.Certificates = append(out.Certificates, r)
			continue
		}
		o := &out.Certificates[i]
		if r.RevokedAt != nil && (o.RevokedAt == nil || r.RevokedAt.Before(*o.RevokedAt)) {
			o.RevokedAt = r.RevokedAt
		}
		o.ResourceSlice = cmp.Or(o.ResourceSlice, r.ResourceSlice)
	}
	return out
}
