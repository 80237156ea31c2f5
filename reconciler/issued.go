package reconciler

import (
	"cmp"
	"context"
	gocrypto "crypto"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/reconciler/provider"
)

// RecordsSecretPrefix, followed by the PeeringRepository's name, "-" and a
// shard (two hex digits, see RecordsSecretName), names the Secrets in the
// agent's namespace where a provider records every certificate it issued, per
// consumer, with its expiry and revocation time, and the consumer's key pin.
// They are sharded so that each stays small at any number of consumers.
const RecordsSecretPrefix = "gitpeer-records-"

// ReasonRecordsMigrated: gitpeer 0.1.0's single records Secret was moved to the sharded Secrets.
const ReasonRecordsMigrated = "RecordsMigrated"

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

// IssuedRecord is one certificate issued to a consumer: see provider.IssuedRecord.
type IssuedRecord = provider.IssuedRecord

// ConsumerRecords is what the provider remembers of one consumer: the key
// pinned at first issuance (see KeyPin) and the certificates issued since. It
// is stored as JSON under the consumer's ID in its records Secret
// (RecordsSecretName).
type ConsumerRecords struct {
	PinnedKey    string         `json:"pinnedKey,omitempty"`
	Certificates []IssuedRecord `json:"certificates,omitempty"`
}

// KeyPin is the pin the provider records for a consumer's public key: the
// SHA-256 of its PKIX encoding, in hex.
func KeyPin(key gocrypto.PublicKey) (string, error) { return crypto.KeyPin(key) }

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
// there, and names the slice on it (a record of it made without the name,
// as at revocation before gitpeer recorded slices as they were issued, gains
// it); it reports a change.
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

// records returns what the provider remembers of consumer.
func (s *session) records(ctx context.Context, consumer string) (ConsumerRecords, error) {
	var out ConsumerRecords
	err := s.withRecordsSecret(ctx, consumer, func(sh *recordsShard) error {
		var err error
		out, err = DecodeRecords(sh.secret, consumer)
		return err
	})
	return out, err
}

// recordsShard is one records Secret as this round knows it: read once per
// round (a Secret not found is held empty, without resourceVersion) and kept
// up to date by the round's writes. The peerings of a round run at once
// (provideAll) and share shards: its lock serialises what they read and
// write of it.
type recordsShard struct {
	sync.Mutex
	secret *corev1.Secret // nil until read
}

// withRecordsSecret runs f with the records Secret of consumer read and
// locked, after moving the records of gitpeer 0.1.0's single Secret, if any.
func (s *session) withRecordsSecret(ctx context.Context, consumer string, f func(*recordsShard) error) error {
	if err := s.migrateLegacyRecords(ctx); err != nil {
		return err
	}
	return s.withShard(ctx, RecordsSecretName(s.obj.Name, consumer), f)
}

// withShard runs f with the records Secret name read (once per round) and locked.
func (s *session) withShard(ctx context.Context, name string, f func(*recordsShard) error) error {
	s.mu.Lock()
	if s.shards == nil {
		s.shards = map[string]*recordsShard{}
	}
	sh := s.shards[name]
	if sh == nil {
		sh = &recordsShard{}
		s.shards[name] = sh
	}
	s.mu.Unlock()
	sh.Lock()
	defer sh.Unlock()
	if sh.secret == nil {
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: s.obj.Namespace, Name: name}}
		if err := s.r.Get(ctx, client.ObjectKeyFromObject(secret), secret); client.IgnoreNotFound(err) != nil {
			return err
		}
		sh.secret = secret
	}
	return f(sh)
}

// dropShards forgets the records Secrets the round read: a later use reads
// them again. The provider's steps are done with them when provideAll
// returns, and the round's commit, its memory's peak, need not hold them
// (64 Secrets of ~160 consumers' records each at 10,000 peerings).
func (s *session) dropShards() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.shards = nil
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
	metav1.SetMetaDataLabel(&secret.ObjectMeta, ManagedByLabel, managedBy)
	if owner != "" {
		metav1.SetMetaDataLabel(&secret.ObjectMeta, OwnerLabel, string(owner))
	}
	if secret.Data == nil {
		secret.Data = map[string][]byte{}
	}
	secret.Data[consumer] = data
	return nil
}

// WithoutExpired drops the certificates expired at now: they grant nothing and
// block nothing (see provider.RevivalBlocker), and renewals would grow the records
// without end. It reports a change.
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

// updateRecords changes what the provider remembers of consumer and writes
// it at once; update reports whether it changed anything.
func (s *session) updateRecords(ctx context.Context, consumer string, update func(*ConsumerRecords) bool) error {
	return s.withRecordsSecret(ctx, consumer, func(sh *recordsShard) error {
		current, err := DecodeRecords(sh.secret, consumer)
		if err != nil {
			return err
		}
		if !update(&current) {
			return nil
		}
		next := sh.secret.DeepCopy()
		if err := s.setRecords(next, consumer, current); err != nil {
			return err
		}
		return s.writeShard(ctx, sh, next)
	})
}

// setRecords stores the records of consumer in secret, without the expired certificates.
func (s *session) setRecords(secret *corev1.Secret, consumer string, records ConsumerRecords) error {
	records.Certificates, _ = WithoutExpired(records.Certificates, s.r.Now())
	return SetRecords(secret, s.obj.UID, consumer, records)
}

// writeShard creates or updates the records Secret of sh, which the caller
// holds (withShard), with secret: an update is refused if the Secret changed
// since it was read (the peering fails and the next round retries).
func (s *session) writeShard(ctx context.Context, sh *recordsShard, secret *corev1.Secret) error {
	var err error
	if secret.ResourceVersion == "" {
		err = s.r.Create(ctx, secret)
	} else {
		err = s.r.Update(ctx, secret)
	}
	if err != nil {
		sh.secret = nil // read again at the next use
		return err
	}
	sh.secret = secret
	return nil
}

// migrateLegacyRecords moves the records of gitpeer 0.1.0's single Secret
// (IssuedSecretPrefix) to the sharded Secrets, merged with what they hold,
// then deletes it (only if unchanged meanwhile). Until it succeeds no record
// is read: nothing is bound on partial records. Once it found the Secret gone
// or moved it, it reads it no more in this process (the agent never writes
// that Secret again). The peerings of a round that need records while it
// runs wait for it.
func (s *session) migrateLegacyRecords(ctx context.Context) error {
	if _, done := s.r.recordsMigrated.Load(s.obj.UID); done {
		return nil
	}
	s.migration.Lock()
	defer s.migration.Unlock()
	if _, done := s.r.recordsMigrated.Load(s.obj.UID); done {
		return nil
	}
	legacy := &corev1.Secret{}
	err := s.r.Get(ctx, client.ObjectKey{Namespace: s.obj.Namespace, Name: IssuedSecretPrefix + s.obj.Name}, legacy)
	if apierrors.IsNotFound(err) {
		s.r.recordsMigrated.Store(s.obj.UID, true)
		return nil
	}
	if err != nil {
		return err
	}
	if err := s.moveRecords(ctx, legacy); err != nil {
		return fmt.Errorf("moving the records of Secret %s to %s%s-*: %w", legacy.Name, RecordsSecretPrefix, s.obj.Name, err)
	}
	if err := s.r.Delete(ctx, legacy, client.Preconditions{UID: &legacy.UID, ResourceVersion: &legacy.ResourceVersion}); client.IgnoreNotFound(err) != nil {
		return err
	}
	s.r.recordsMigrated.Store(s.obj.UID, true)
	s.r.event(s.obj, corev1.EventTypeNormal, ReasonRecordsMigrated, "moved the records of %d consumer(s) from Secret %s to the Secrets %s%s-*, and deleted it",
		len(legacy.Data), legacy.Name, RecordsSecretPrefix, s.obj.Name)
	return nil
}

// moveRecords merges every consumer's records of legacy into its records
// Secret, writing each changed Secret once.
func (s *session) moveRecords(ctx context.Context, legacy *corev1.Secret) error {
	changed := map[string]*corev1.Secret{}
	for _, consumer := range slices.Sorted(maps.Keys(legacy.Data)) {
		old, err := DecodeRecords(legacy, consumer)
		if err != nil {
			return err
		}
		name := RecordsSecretName(s.obj.Name, consumer)
		secret := changed[name]
		if secret == nil {
			if err := s.withShard(ctx, name, func(sh *recordsShard) error {
				secret = sh.secret.DeepCopy()
				return nil
			}); err != nil {
				return err
			}
		}
		current, err := DecodeRecords(secret, consumer)
		if err != nil {
			return err
		}
		if err := s.setRecords(secret, consumer, MergeRecords(current, old)); err != nil {
			return err
		}
		changed[name] = secret
	}
	for _, name := range slices.Sorted(maps.Keys(changed)) {
		if err := s.withShard(ctx, name, func(sh *recordsShard) error { return s.writeShard(ctx, sh, changed[name]) }); err != nil {
			return err
		}
	}
	return nil
}

// recordIssued remembers certificates issued to consumer, in one write.
func (s *session) recordIssued(ctx context.Context, consumer string, certs ...*x509.Certificate) error {
	if len(certs) == 0 {
		return nil
	}
	return s.updateRecords(ctx, consumer, func(r *ConsumerRecords) bool {
		changed := false
		for _, cert := range certs {
			var added bool
			r.Certificates, added = WithIssued(r.Certificates, cert.SerialNumber.Text(16), cert.NotAfter)
			changed = changed || added
		}
		return changed
	})
}

// recordSliceCertificates remembers the certificates Liqo issued for the
// ResourceSlices of consumer that the slice watch saw (sliceWatch), by slice
// name, in one write; what it could not write is seen again at the next call.
func (s *session) recordSliceCertificates(ctx context.Context, consumer string) error {
	seen := s.r.slices.take(consumer)
	if len(seen) == 0 {
		return nil
	}
	err := s.updateRecords(ctx, consumer, func(r *ConsumerRecords) bool {
		changed := false
		for _, name := range slices.Sorted(maps.Keys(seen)) {
			var added bool
			r.Certificates, added = WithSliceIssued(r.Certificates, name, seen[name].SerialNumber.Text(16), seen[name].NotAfter)
			changed = changed || added
		}
		return changed
	})
	if err != nil {
		s.r.slices.putBack(consumer, seen)
	}
	return err
}

// recordKeyPin remembers the key pinned for consumer.
func (s *session) recordKeyPin(ctx context.Context, consumer, pin string) error {
	return s.updateRecords(ctx, consumer, func(r *ConsumerRecords) bool {
		changed := r.PinnedKey != pin
		r.PinnedKey = pin
		return changed
	})
}

// AdoptKeyPin copies annotation, the key pin an earlier version kept only on
// a consumer's tenant namespace (PinnedKeyAnnotation), into r when r holds
// no pin and annotation is a well-formed pin; it reports a change and, for
// the Adopted event, what it did with the annotation ("" if there was none
// or it matched). A pin in the records is never replaced: the annotation is
// writable by whoever may annotate namespaces, the records by the agent alone.
func AdoptKeyPin(r *ConsumerRecords, annotation string) (note string, changed bool) {
	switch {
	case annotation == "" || annotation == r.PinnedKey:
		return "", false
	case r.PinnedKey != "":
		return fmt.Sprintf("; annotation %s=%.16s ignored: the records pin %.16s", PinnedKeyAnnotation, annotation, r.PinnedKey), false
	}
	if b, err := hex.DecodeString(annotation); err != nil || len(b) != sha256.Size || hex.EncodeToString(b) != annotation {
		return fmt.Sprintf("; annotation %s=%.16s ignored: not a SHA-256 in lower-case hex", PinnedKeyAnnotation, annotation), false
	}
	r.PinnedKey = annotation
	return fmt.Sprintf("; key pin %.16s copied from annotation %s into the records, which decide from now on", annotation, PinnedKeyAnnotation), true
}

// adoptKeyPin applies AdoptKeyPin to the records of consumer.
func (s *session) adoptKeyPin(ctx context.Context, consumer, annotation string) (note string, err error) {
	err = s.updateRecords(ctx, consumer, func(r *ConsumerRecords) bool {
		var changed bool
		note, changed = AdoptKeyPin(r, annotation)
		return changed
	})
	return note, err
}

// recordRevoked marks every certificate of consumer revoked.
func (s *session) recordRevoked(ctx context.Context, consumer string) error {
	return s.updateRecords(ctx, consumer, func(r *ConsumerRecords) bool {
		var changed bool
		r.Certificates, changed = WithRevoked(r.Certificates, s.r.Now())
		return changed
	})
}

// refuseRevival says why consumer must not be bound again, or "" if it may
// (provider.RevivalRefusal); the revival annotation may accept it once
// (provider.CheckTenant).
func (s *session) refuseRevival(records ConsumerRecords, consumer string) string {
	return provider.RevivalRefusal(records.Certificates, consumer, s.r.Now())
}
