package reconciler

import (
	"context"
	gocrypto "crypto"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/crypto"
)

// IssuedSecretPrefix, followed by the PeeringRepository's name, names the
// Secret in the agent's namespace where a provider records every certificate
// it issued, per consumer, with its expiry and revocation time.
const IssuedSecretPrefix = "gitpeer-issued-"

// IssuedRecord is one certificate issued to a consumer: its serial (hex, as
// in the Gitpeer-Serial trailer), expiry and revocation time.
type IssuedRecord struct {
	Serial    string     `json:"serial"`
	NotAfter  time.Time  `json:"notAfter"`
	RevokedAt *time.Time `json:"revokedAt,omitempty"`
}

// ConsumerRecords is what the provider remembers of one consumer: the key
// pinned at first issuance (see KeyPin) and the certificates issued since. It
// is stored as JSON under the consumer's ID in the records Secret.
type ConsumerRecords struct {
	PinnedKey    string         `json:"pinnedKey,omitempty"`
	Certificates []IssuedRecord `json:"certificates,omitempty"`
}

// KeyPin is the pin the provider records for a consumer's public key: the
// SHA-256 of its PKIX encoding, in hex.
func KeyPin(key gocrypto.PublicKey) (string, error) { return crypto.KeyPin(key) }

// RevivalBlocker returns the revoked certificate that still forbids binding
// the consumer again at now (the one valid longest), or nil.
func RevivalBlocker(records []IssuedRecord, now time.Time) *IssuedRecord {
	var out *IssuedRecord
	for i := range records {
		r := &records[i]
		if r.RevokedAt != nil && r.NotAfter.After(now) && (out == nil || r.NotAfter.After(out.NotAfter)) {
			out = r
		}
	}
	return out
}

// WithIssued adds the certificate serial (hex) valid until notAfter to
// records unless it is there; it reports a change.
func WithIssued(records []IssuedRecord, serial string, notAfter time.Time) ([]IssuedRecord, bool) {
	if slices.ContainsFunc(records, func(r IssuedRecord) bool { return r.Serial == serial }) {
		return records, false
	}
	return append(records, IssuedRecord{Serial: serial, NotAfter: notAfter.UTC()}), true
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

func (s *session) issuedSecretKey() client.ObjectKey {
	return client.ObjectKey{Namespace: s.obj.Namespace, Name: IssuedSecretPrefix + s.obj.Name}
}

// records returns what the provider remembers of consumer, from the records
// Secret as the round observed it (observedRecords).
func (s *session) records(ctx context.Context, consumer string) (ConsumerRecords, error) {
	secret, err := s.observedRecords(ctx)
	if err != nil || secret == nil {
		return ConsumerRecords{}, err
	}
	return DecodeRecords(secret, consumer)
}

// DecodeRecords reads the records of consumer from the records Secret (none
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

// SetRecords stores the records of consumer in the records Secret, with the
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

// updateRecords changes what the provider remembers of consumer; update
// reports whether it changed anything.
func (s *session) updateRecords(ctx context.Context, consumer string, update func(*ConsumerRecords) bool) error {
	current, err := s.records(ctx, consumer)
	if err != nil {
		return err
	}
	if !update(&current) {
		return nil
	}
	key := s.issuedSecretKey()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	if _, err = controllerutil.CreateOrUpdate(ctx, s.r.Client, secret, func() error {
		return SetRecords(secret, s.obj.UID, consumer, current)
	}); err != nil {
		s.recordsSecret = nil // read again: the write may have failed on a conflict
		return err
	}
	s.recordsSecret, s.noRecords = secret, false
	return nil
}

// recordIssued remembers a certificate issued to consumer.
func (s *session) recordIssued(ctx context.Context, consumer string, cert *x509.Certificate) error {
	return s.updateRecords(ctx, consumer, func(r *ConsumerRecords) bool {
		var changed bool
		r.Certificates, changed = WithIssued(r.Certificates, cert.SerialNumber.Text(16), cert.NotAfter)
		return changed
	})
}

// recordKeyPin remembers the key pinned for consumer.
func (s *session) recordKeyPin(ctx context.Context, consumer, pin string) error {
	return s.updateRecords(ctx, consumer, func(r *ConsumerRecords) bool {
		changed := r.PinnedKey != pin
		r.PinnedKey = pin
		return changed
	})
}

// recordRevoked marks every certificate of consumer revoked.
func (s *session) recordRevoked(ctx context.Context, consumer string) error {
	return s.updateRecords(ctx, consumer, func(r *ConsumerRecords) bool {
		var changed bool
		r.Certificates, changed = WithRevoked(r.Certificates, s.r.Now())
		return changed
	})
}

// refuseRevival says why consumer must not be bound again, or "" if it may:
// a revoked certificate of it is unexpired and no admin accepted the risk.
func (s *session) refuseRevival(records ConsumerRecords, consumer string) string {
	blocker := RevivalBlocker(records.Certificates, s.r.Now())
	if blocker == nil {
		return ""
	}
	key := gitpeerv1alpha1.RevivalAnnotationPrefix + consumer
	if s.obj.GetAnnotations()[key] == gitpeerv1alpha1.AcceptRevivalValue {
		return ""
	}
	return fmt.Sprintf("revoked certificate %s is valid until %s; re-peering is refused until then (override: annotation %s=%s on the PeeringRepository, which gives every unexpired revoked certificate of %s access again)",
		blocker.Serial, blocker.NotAfter.UTC().Format(time.RFC3339), key, gitpeerv1alpha1.AcceptRevivalValue, consumer)
}
