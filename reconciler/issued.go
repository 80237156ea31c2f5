package reconciler

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitpeer/gitpeer/reconciler/provider"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// records returns what the provider remembers of consumer.
func (s *session) records(ctx context.Context, consumer string) (vocabulary.ConsumerRecords, error) {
	var out vocabulary.ConsumerRecords
	err := s.withRecordsSecret(ctx, consumer, func(sh *recordsShard) error {
		var err error
		out, err = vocabulary.DecodeRecords(sh.secret, consumer)
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
	return s.withShard(ctx, vocabulary.RecordsSecretName(s.obj.Name, consumer), f)
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

// updateRecords changes what the provider remembers of consumer and writes
// it at once; update reports whether it changed anything.
func (s *session) updateRecords(ctx context.Context, consumer string, update func(*vocabulary.ConsumerRecords) bool) error {
	return s.withRecordsSecret(ctx, consumer, func(sh *recordsShard) error {
		current, err := vocabulary.DecodeRecords(sh.secret, consumer)
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
func (s *session) setRecords(secret *corev1.Secret, consumer string, records vocabulary.ConsumerRecords) error {
	records.Certificates, _ = vocabulary.WithoutExpired(records.Certificates, s.r.Now())
	return vocabulary.SetRecords(secret, s.obj.UID, consumer, records)
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
// (vocabulary.IssuedSecretPrefix) to the sharded Secrets, merged with what they hold,
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
	err := s.r.Get(ctx, client.ObjectKey{Namespace: s.obj.Namespace, Name: vocabulary.IssuedSecretPrefix + s.obj.Name}, legacy)
	if apierrors.IsNotFound(err) {
		s.r.recordsMigrated.Store(s.obj.UID, true)
		return nil
	}
	if err != nil {
		return err
	}
	if err := s.moveRecords(ctx, legacy); err != nil {
		return fmt.Errorf("moving the records of Secret %s to %s%s-*: %w", legacy.Name, vocabulary.RecordsSecretPrefix, s.obj.Name, err)
	}
	if err := s.r.Delete(ctx, legacy, client.Preconditions{UID: &legacy.UID, ResourceVersion: &legacy.ResourceVersion}); client.IgnoreNotFound(err) != nil {
		return err
	}
	s.r.recordsMigrated.Store(s.obj.UID, true)
	s.r.event(s.obj, corev1.EventTypeNormal, vocabulary.ReasonRecordsMigrated, "moved the records of %d consumer(s) from Secret %s to the Secrets %s%s-*, and deleted it",
		len(legacy.Data), legacy.Name, vocabulary.RecordsSecretPrefix, s.obj.Name)
	return nil
}

// moveRecords merges every consumer's records of legacy into its records
// Secret, writing each changed Secret once.
func (s *session) moveRecords(ctx context.Context, legacy *corev1.Secret) error {
	changed := map[string]*corev1.Secret{}
	for _, consumer := range slices.Sorted(maps.Keys(legacy.Data)) {
		old, err := vocabulary.DecodeRecords(legacy, consumer)
		if err != nil {
			return err
		}
		name := vocabulary.RecordsSecretName(s.obj.Name, consumer)
		secret := changed[name]
		if secret == nil {
			if err := s.withShard(ctx, name, func(sh *recordsShard) error {
				secret = sh.secret.DeepCopy()
				return nil
			}); err != nil {
				return err
			}
		}
		current, err := vocabulary.DecodeRecords(secret, consumer)
		if err != nil {
			return err
		}
		if err := s.setRecords(secret, consumer, vocabulary.MergeRecords(current, old)); err != nil {
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
	return s.updateRecords(ctx, consumer, func(r *vocabulary.ConsumerRecords) bool {
		changed := false
		for _, cert := range certs {
			var added bool
			r.Certificates, added = vocabulary.WithIssued(r.Certificates, cert.SerialNumber.Text(16), cert.NotAfter)
			changed = changed || added
		}
		return changed
	})
}

// recordKeyPin remembers the key pinned for consumer.
func (s *session) recordKeyPin(ctx context.Context, consumer, pin string) error {
	return s.updateRecords(ctx, consumer, func(r *vocabulary.ConsumerRecords) bool {
		changed := r.PinnedKey != pin
		r.PinnedKey = pin
		return changed
	})
}

// AdoptKeyPin copies annotation, the key pin an earlier version kept only on
// a consumer's tenant namespace (vocabulary.PinnedKeyAnnotation), into r when r holds
// no pin and annotation is a well-formed pin; it reports a change and, for
// the Adopted event, what it did with the annotation ("" if there was none
// or it matched). A pin in the records is never replaced: the annotation is
// writable by whoever may annotate namespaces, the records by the agent alone.
func AdoptKeyPin(r *vocabulary.ConsumerRecords, annotation string) (note string, changed bool) {
	switch {
	case annotation == "" || annotation == r.PinnedKey:
		return "", false
	case r.PinnedKey != "":
		return fmt.Sprintf("; annotation %s=%.16s ignored: the records pin %.16s", vocabulary.PinnedKeyAnnotation, annotation, r.PinnedKey), false
	}
	if b, err := hex.DecodeString(annotation); err != nil || len(b) != sha256.Size || hex.EncodeToString(b) != annotation {
		return fmt.Sprintf("; annotation %s=%.16s ignored: not a SHA-256 in lower-case hex", vocabulary.PinnedKeyAnnotation, annotation), false
	}
	r.PinnedKey = annotation
	return fmt.Sprintf("; key pin %.16s copied from annotation %s into the records, which decide from now on", annotation, vocabulary.PinnedKeyAnnotation), true
}

// adoptKeyPin applies AdoptKeyPin to the records of consumer.
func (s *session) adoptKeyPin(ctx context.Context, consumer, annotation string) (note string, err error) {
	err = s.updateRecords(ctx, consumer, func(r *vocabulary.ConsumerRecords) bool {
		var changed bool
		note, changed = AdoptKeyPin(r, annotation)
		return changed
	})
	return note, err
}

// recordRevoked marks every certificate of consumer revoked.
func (s *session) recordRevoked(ctx context.Context, consumer string) error {
	return s.updateRecords(ctx, consumer, func(r *vocabulary.ConsumerRecords) bool {
		var changed bool
		r.Certificates, changed = vocabulary.WithRevoked(r.Certificates, s.r.Now())
		return changed
	})
}

// refuseRevival says why consumer must not be bound again, or "" if it may
// (provider.RevivalRefusal); the revival annotation may accept it once
// (provider.CheckTenant).
func (s *session) refuseRevival(records vocabulary.ConsumerRecords, consumer string) string {
	return provider.RevivalRefusal(records.Certificates, consumer, s.r.Now())
}
