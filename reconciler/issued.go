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

	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// recordStore is what the provider of one PeeringRepository remembers of its
// consumers (vocabulary.ConsumerRecords), in the records Secrets, sharded by
// consumer, as one round reads and writes them.
type recordStore struct {
	r   *PeeringRepositoryReconciler
	obj *gitpeerv1alpha1.PeeringRepository
	// mu guards shards, the records Secrets read or written this round.
	mu     sync.Mutex
	shards map[string]*recordsShard
	// migration serialises the move of gitpeer 0.1.0's records (migrateLegacyRecords).
	migration sync.Mutex
}

func newRecordStore(r *PeeringRepositoryReconciler, obj *gitpeerv1alpha1.PeeringRepository) *recordStore {
	return &recordStore{r: r, obj: obj}
}

// records returns what the provider remembers of consumer.
func (s *recordStore) records(ctx context.Context, consumer string) (vocabulary.ConsumerRecords, error) {
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
	// staged are the consumers whose records changed in secret and are not
	// written yet (stageRecords); lost those whose staged change a failed
	// write dropped, with its error, for flushRecords to report.
	staged map[string]bool
	lost   map[string]error
}

// withRecordsSecret runs f with the records Secret of consumer read and
// locked, after moving the records of gitpeer 0.1.0's single Secret, if any.
func (s *recordStore) withRecordsSecret(ctx context.Context, consumer string, f func(*recordsShard) error) error {
	if err := s.migrateLegacyRecords(ctx); err != nil {
		return err
	}
	return s.withShard(ctx, vocabulary.RecordsSecretName(s.obj.Name, consumer), f)
}

// withShard runs f with the records Secret name read (once per round) and locked.
func (s *recordStore) withShard(ctx context.Context, name string, f func(*recordsShard) error) error {
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
func (s *recordStore) dropShards() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.shards = nil
}

// updateRecords changes what the provider remembers of consumer and writes
// it at once; update reports whether it changed anything.
func (s *recordStore) updateRecords(ctx context.Context, consumer string, update func(*vocabulary.ConsumerRecords) bool) error {
	return s.withRecordsSecret(ctx, consumer, func(sh *recordsShard) error {
		if changed, err := s.changeRecords(sh, consumer, update); err != nil || !changed {
			return err
		}
		return s.writeShard(ctx, sh, sh.secret) // a failure drops sh.secret: read again at the next use
	})
}

// changeRecords applies update to consumer's records in the round's copy of
// sh's Secret and reports whether it changed them.
func (s *recordStore) changeRecords(sh *recordsShard, consumer string, update func(*vocabulary.ConsumerRecords) bool) (bool, error) {
	current, err := vocabulary.DecodeRecords(sh.secret, consumer)
	if err != nil || !update(&current) {
		return false, err
	}
	return true, s.setRecords(sh.secret, consumer, current)
}

// setRecords stores the records of consumer in secret, without the expired certificates.
func (s *recordStore) setRecords(secret *corev1.Secret, consumer string, records vocabulary.ConsumerRecords) error {
	records.Certificates, _ = vocabulary.WithoutExpired(records.Certificates, s.r.Now())
	return vocabulary.SetRecords(secret, s.obj.UID, consumer, records)
}

// writeShard creates or updates the records Secret of sh, which the caller
// holds (withShard), with secret: an update is refused if the Secret changed
// since it was read (the peering fails and the next round retries).
func (s *recordStore) writeShard(ctx context.Context, sh *recordsShard, secret *corev1.Secret) error {
	var err error
	if secret.ResourceVersion == "" {
		err = s.r.Create(ctx, secret)
	} else {
		err = s.r.Update(ctx, secret)
	}
	if err != nil {
		sh.secret = nil // read again at the next use
		for c := range sh.staged {
			if sh.lost == nil {
				sh.lost = map[string]error{}
			}
			sh.lost[c] = err
		}
		sh.staged = nil
		return err
	}
	sh.secret, sh.staged = secret, nil // a write holds every change staged before it
	return nil
}

// stageRecords is updateRecords without the write: the change is made in
// the round's copy of consumer's records Secret, and written with every
// other change staged in it by flushRecords. The signing steps of a round
// stage their records, flush, then act: one write per records Secret for
// all of them, not one per change, and a record still durable before what
// it protects.
func (s *recordStore) stageRecords(ctx context.Context, consumer string, update func(*vocabulary.ConsumerRecords) bool) error {
	return s.withRecordsSecret(ctx, consumer, func(sh *recordsShard) error {
		if changed, err := s.changeRecords(sh, consumer, update); err != nil || !changed {
			return err
		}
		if sh.staged == nil {
			sh.staged = map[string]bool{}
		}
		sh.staged[consumer] = true
		return nil
	})
}

// flushRecords writes each records Secret holding staged changes, once, at
// most workers at once, and returns the error of every consumer whose
// staged change is not written: its write failed, or an earlier write of
// its Secret failed after the change was staged.
func (s *recordStore) flushRecords(ctx context.Context, workers int) map[string]error {
	s.mu.Lock()
	var shards []*recordsShard
	for _, sh := range s.shards {
		shards = append(shards, sh)
	}
	s.mu.Unlock()
	failed := map[string]error{}
	var mu sync.Mutex
	forEachAtOnce(len(shards), workers, func(i int) {
		sh := shards[i]
		sh.Lock()
		defer sh.Unlock()
		if len(sh.staged) > 0 {
			_ = s.writeShard(ctx, sh, sh.secret) // a failure moves the staged consumers to lost
		}
		mu.Lock()
		defer mu.Unlock()
		for c, err := range sh.lost {
			failed[c] = fmt.Errorf("writing the records of %s: %w", c, err)
		}
		sh.lost = nil
	})
	return failed
}

// migrateLegacyRecords moves the records of gitpeer 0.1.0's single Secret
// (vocabulary.IssuedSecretPrefix) to the sharded Secrets, merged with what they hold,
// then deletes it (only if unchanged meanwhile). Until it succeeds no record
// is read: nothing is bound on partial records. Once it found the Secret gone
// or moved it, it reads it no more in this process (the agent never writes
// that Secret again). The peerings of a round that need records while it
// runs wait for it.
func (s *recordStore) migrateLegacyRecords(ctx context.Context) error {
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
func (s *recordStore) moveRecords(ctx context.Context, legacy *corev1.Secret) error {
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
func (s *recordStore) recordIssued(ctx context.Context, consumer string, certs ...*x509.Certificate) error {
	if len(certs) == 0 {
		return nil
	}
	return s.updateRecords(ctx, consumer, certificatesIssued(certs...))
}

// certificatesIssued is the update of a consumer's records that remembers certs.
func certificatesIssued(certs ...*x509.Certificate) func(*vocabulary.ConsumerRecords) bool {
	return func(r *vocabulary.ConsumerRecords) bool {
		changed := false
		for _, cert := range certs {
			var added bool
			r.Certificates, added = vocabulary.WithIssued(r.Certificates, cert.SerialNumber.Text(16), cert.NotAfter)
			changed = changed || added
		}
		return changed
	}
}

// recordKeyPin remembers the key pinned for consumer.
func (s *recordStore) recordKeyPin(ctx context.Context, consumer, pin string) error {
	return s.updateRecords(ctx, consumer, keyPinned(pin))
}

// keyPinned is the update of a consumer's records that pins pin.
func keyPinned(pin string) func(*vocabulary.ConsumerRecords) bool {
	return func(r *vocabulary.ConsumerRecords) bool {
		changed := r.PinnedKey != pin
		r.PinnedKey = pin
		return changed
	}
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
func (s *recordStore) adoptKeyPin(ctx context.Context, consumer, annotation string) (note string, err error) {
	err = s.updateRecords(ctx, consumer, func(r *vocabulary.ConsumerRecords) bool {
		var changed bool
		note, changed = AdoptKeyPin(r, annotation)
		return changed
	})
	return note, err
}

// recordRevoked marks every certificate of consumer revoked.
func (s *recordStore) recordRevoked(ctx context.Context, consumer string) error {
	return s.updateRecords(ctx, consumer, func(r *vocabulary.ConsumerRecords) bool {
		var changed bool
		r.Certificates, changed = vocabulary.WithRevoked(r.Certificates, s.r.Now())
		return changed
	})
}
