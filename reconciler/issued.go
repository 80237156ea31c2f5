package reconciler

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
)

// IssuedSecretPrefix, followed by the PeeringRepository's name, names the
// Secret in the agent's namespace where a provider records every certificate
// it issued, per consumer, with its expiry and revocation time.
const IssuedSecretPrefix = "gitpeer-issued-"

// issuedRecord is one certificate issued to a consumer.
type issuedRecord struct {
	Serial    string     `json:"serial"`
	NotAfter  time.Time  `json:"notAfter"`
	RevokedAt *time.Time `json:"revokedAt,omitempty"`
}

// consumerRecords is what the provider remembers of one consumer: the key
// pinned at first issuance and the certificates issued since.
type consumerRecords struct {
	PinnedKey    string         `json:"pinnedKey,omitempty"`
	Certificates []issuedRecord `json:"certificates,omitempty"`
}

// revivalBlocker returns the revoked certificate that still forbids binding
// the consumer again at now (the one valid longest), or nil.
func revivalBlocker(records []issuedRecord, now time.Time) *issuedRecord {
	var out *issuedRecord
	for i := range records {
		r := &records[i]
		if r.RevokedAt != nil && r.NotAfter.After(now) && (out == nil || r.NotAfter.After(out.NotAfter)) {
			out = r
		}
	}
	return out
}

// withIssued adds cert to records unless it is there; it reports a change.
func withIssued(records []issuedRecord, cert *x509.Certificate) ([]issuedRecord, bool) {
	serial := cert.SerialNumber.Text(16)
	if slices.ContainsFunc(records, func(r issuedRecord) bool { return r.Serial == serial }) {
		return records, false
	}
	return append(records, issuedRecord{Serial: serial, NotAfter: cert.NotAfter.UTC()}), true
}

// withRevoked marks every unrevoked record revoked at now and drops the
// expired ones; it reports a change.
func withRevoked(records []issuedRecord, now time.Time) ([]issuedRecord, bool) {
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

// records returns what the provider remembers of consumer.
func (s *session) records(ctx context.Context, consumer string) (consumerRecords, error) {
	var out consumerRecords
	secret := &corev1.Secret{}
	if err := s.r.Get(ctx, s.issuedSecretKey(), secret); err != nil {
		return out, client.IgnoreNotFound(err)
	}
	if data, ok := secret.Data[consumer]; ok {
		if err := json.Unmarshal(data, &out); err != nil {
			return out, fmt.Errorf("secret %s, key %s: %w", s.issuedSecretKey(), consumer, err)
		}
	}
	return out, nil
}

// updateRecords changes what the provider remembers of consumer; update
// reports whether it changed anything.
func (s *session) updateRecords(ctx context.Context, consumer string, update func(*consumerRecords) bool) error {
	current, err := s.records(ctx, consumer)
	if err != nil {
		return err
	}
	if !update(&current) {
		return nil
	}
	data, err := json.Marshal(current)
	if err != nil {
		return err
	}
	key := s.issuedSecretKey()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	_, err = controllerutil.CreateOrUpdate(ctx, s.r.Client, secret, func() error {
		metav1.SetMetaDataLabel(&secret.ObjectMeta, ManagedByLabel, managedBy)
		metav1.SetMetaDataLabel(&secret.ObjectMeta, OwnerLabel, string(s.obj.UID))
		if secret.Data == nil {
			secret.Data = map[string][]byte{}
		}
		secret.Data[consumer] = data
		return nil
	})
	return err
}

// recordIssued remembers a certificate issued to consumer.
func (s *session) recordIssued(ctx context.Context, consumer string, cert *x509.Certificate) error {
	return s.updateRecords(ctx, consumer, func(r *consumerRecords) bool {
		var changed bool
		r.Certificates, changed = withIssued(r.Certificates, cert)
		return changed
	})
}

// recordKeyPin remembers the key pinned for consumer.
func (s *session) recordKeyPin(ctx context.Context, consumer, pin string) error {
	return s.updateRecords(ctx, consumer, func(r *consumerRecords) bool {
		changed := r.PinnedKey != pin
		r.PinnedKey = pin
		return changed
	})
}

// recordRevoked marks every certificate of consumer revoked.
func (s *session) recordRevoked(ctx context.Context, consumer string) error {
	return s.updateRecords(ctx, consumer, func(r *consumerRecords) bool {
		var changed bool
		r.Certificates, changed = withRevoked(r.Certificates, s.r.Now())
		return changed
	})
}

// refuseRevival says why consumer must not be bound again, or "" if it may:
// a revoked certificate of it is unexpired and no admin accepted the risk.
func (s *session) refuseRevival(records consumerRecords, consumer string) string {
	blocker := revivalBlocker(records.Certificates, s.r.Now())
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
