package reconciler

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"math/big"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/gitpeer/gitpeer/apis"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/reconciler/plan/provider"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// TestAdoptKeyPin: adopting an earlier version's namespace copies its pin
// annotation into records without a pin, and never replaces a recorded pin
// nor records a malformed one.
func TestAdoptKeyPin(t *testing.T) {
	pin, other := strings.Repeat("ab", 32), strings.Repeat("cd", 32)
	for name, tc := range map[string]struct {
		recorded, annotation, want, note string
		changed                          bool
	}{
		"no annotation":              {"", "", "", "", false},
		"no pin recorded":            {"", pin, pin, "copied from annotation", true},
		"same pin recorded":          {pin, pin, pin, "", false},
		"another pin recorded":       {pin, other, pin, "ignored: the records pin abababababababab", false},
		"annotation not a pin":       {"", "abc", "", "not a SHA-256", false},
		"annotation in upper case":   {"", strings.ToUpper(pin), "", "not a SHA-256", false},
		"annotation of another hash": {"", pin + "00", "", "not a SHA-256", false},
	} {
		t.Run(name, func(t *testing.T) {
			r := vocabulary.ConsumerRecords{PinnedKey: tc.recorded}
			note, changed := AdoptKeyPin(&r, tc.annotation)
			if r.PinnedKey != tc.want || changed != tc.changed || (tc.note == "") != (note == "") || !strings.Contains(note, tc.note) {
				t.Errorf("AdoptKeyPin(%q, %q) = pin %q, %q, %t; want pin %q, a note with %q, %t", tc.recorded, tc.annotation, r.PinnedKey, note, changed, tc.want, tc.note, tc.changed)
			}
		})
	}
}

// legacyRecords is gitpeer 0.1.0's single records Secret of n consumers: each
// with a pin and a valid certificate, every 10th with a revoked unexpired
// certificate, every 7th with an expired one.
func legacyRecords(t *testing.T, n int, now time.Time) (*corev1.Secret, map[string]vocabulary.ConsumerRecords) {
	t.Helper()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "gitpeer-system", Name: vocabulary.IssuedSecretPrefix + "peering"}}
	want := map[string]vocabulary.ConsumerRecords{}
	for i := range n {
		consumer := fmt.Sprintf("consumer-%05d", i)
		rec := vocabulary.ConsumerRecords{PinnedKey: strings.Repeat(fmt.Sprintf("%x", i%16), 64), Certificates: []vocabulary.IssuedRecord{
			{Serial: fmt.Sprintf("%032x", i), NotAfter: now.Add(20 * time.Hour)}}}
		if i%10 == 0 {
			revoked := now.Add(-time.Hour)
			rec.Certificates = append(rec.Certificates, vocabulary.IssuedRecord{Serial: fmt.Sprintf("%032x", i+n), NotAfter: now.Add(4 * time.Hour), RevokedAt: &revoked})
		}
		want[consumer] = rec
		if i%7 == 0 {
			rec.Certificates = append(rec.Certificates, vocabulary.IssuedRecord{Serial: fmt.Sprintf("%032x", i+2*n), NotAfter: now.Add(-time.Hour)})
		}
		if err := vocabulary.SetRecords(secret, "uid-1", consumer, rec); err != nil {
			t.Fatal(err)
		}
	}
	return secret, want
}

// TestRecordsMigrateAndScale moves gitpeer 0.1.0's single records Secret of
// 100, 1,000 and 10,000 consumers to the sharded Secrets, as the first read
// of a round does: every consumer keeps its records (expired certificates
// dropped), a revoked certificate still blocks revival, the old Secret is
// deleted, and each Secret stays far below the API server's 1 MiB limit.
func TestRecordsMigrateAndScale(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 23, 18, 0, 0, 0, time.UTC)
	for _, n := range []int{100, 1000, 10000} {
		legacy, want := legacyRecords(t, n, now)
		legacySize := size(t, legacy)
		// A record already in the sharded Secrets (written by this version) is merged, not overwritten.
		revokedAt := now.Add(-2 * time.Hour)
		sharded := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "gitpeer-system", Name: vocabulary.RecordsSecretName("peering", "consumer-00001")}}
		newer := vocabulary.ConsumerRecords{PinnedKey: want["consumer-00001"].PinnedKey, Certificates: []vocabulary.IssuedRecord{
			{Serial: want["consumer-00001"].Certificates[0].Serial, NotAfter: now.Add(20 * time.Hour), RevokedAt: &revokedAt}}}
		if err := vocabulary.SetRecords(sharded, "uid-1", "consumer-00001", newer); err != nil {
			t.Fatal(err)
		}
		want["consumer-00001"] = newer
		c := fake.NewClientBuilder().WithScheme(apis.NewScheme()).WithObjects(legacy, sharded).Build()
		r := &PeeringRepositoryReconciler{Client: c, Now: func() time.Time { return now }}
		obj := &gitpeerv1alpha1.PeeringRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "gitpeer-system", Name: "peering", UID: "uid-1"}}

		s := newRecordStore(r, obj)
		got, err := s.records(ctx, "consumer-00010")
		if err != nil {
			t.Fatal(err)
		}
		if provider.RevivalRefusal(got.Certificates, "consumer-00010", now) == "" {
			t.Errorf("%d consumers: the moved revoked certificate no longer blocks revival: %+v", n, got)
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(legacy), &corev1.Secret{}); !apierrors.IsNotFound(err) {
			t.Errorf("%d consumers: the single Secret is still there (%v)", n, err)
		}
		var secrets corev1.SecretList
		if err := c.List(ctx, &secrets); err != nil {
			t.Fatal(err)
		}
		largest, moved := 0, 0
		for i := range secrets.Items {
			secret := &secrets.Items[i]
			if !strings.HasPrefix(secret.Name, vocabulary.RecordsSecretPrefix+"peering-") || secret.Labels[vocabulary.OwnerLabel] != "uid-1" {
				t.Errorf("unexpected Secret %s %v", secret.Name, secret.Labels)
			}
			largest = max(largest, size(t, secret))
			moved += len(secret.Data)
		}
		t.Logf("%5d consumers: single Secret %8d bytes; %2d Secrets, the largest %6d bytes", n, legacySize, len(secrets.Items), largest)
		if moved != n || largest > 256<<10 {
			t.Errorf("%d consumers: %d moved, largest Secret %d bytes", n, moved, largest)
		}

		// A later round reads the same records from the sharded Secrets alone.
		s = newRecordStore(r, obj)
		for consumer, rec := range want {
			got, err := s.records(ctx, consumer)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(describeRecords(got), describeRecords(rec)) {
				t.Fatalf("%d consumers: %s has %s, want %s", n, consumer, describeRecords(got), describeRecords(rec))
			}
		}
	}
}

// TestRecordsWrites: revoking and issuing write through the round's cached
// Secret, dropping expired certificates, and a later round reads them.
func TestRecordsWrites(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 23, 18, 0, 0, 0, time.UTC)
	c := fake.NewClientBuilder().WithScheme(apis.NewScheme()).Build()
	r := &PeeringRepositoryReconciler{Client: c, Now: func() time.Time { return now }}
	obj := &gitpeerv1alpha1.PeeringRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "gitpeer-system", Name: "peering", UID: "uid-1"}}
	s := newRecordStore(r, obj)
	if err := s.recordKeyPin(ctx, "c1", "pin"); err != nil {
		t.Fatal(err)
	}
	for _, rec := range []vocabulary.IssuedRecord{{Serial: "old", NotAfter: now.Add(time.Minute)}, {Serial: "new", NotAfter: now.Add(time.Hour)}} {
		if err := s.updateRecords(ctx, "c1", func(r *vocabulary.ConsumerRecords) bool {
			var changed bool
			r.Certificates, changed = vocabulary.WithIssued(r.Certificates, rec.Serial, rec.NotAfter)
			return changed
		}); err != nil {
			t.Fatal(err)
		}
	}
	now = now.Add(2 * time.Minute)
	if err := s.recordRevoked(ctx, "c1"); err != nil {
		t.Fatal(err)
	}
	got, err := newRecordStore(r, obj).records(ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	if d := describeRecords(got); d != "pin: new until 2026-11-23T19:00:00Z revoked 2026-11-23T18:02:00Z" {
		t.Errorf("records %s", d)
	}
}

func describeRecords(r vocabulary.ConsumerRecords) string {
	var certs []string
	for _, c := range r.Certificates {
		s := c.Serial + " until " + c.NotAfter.UTC().Format(time.RFC3339)
		if c.RevokedAt != nil {
			s += " revoked " + c.RevokedAt.UTC().Format(time.RFC3339)
		}
		certs = append(certs, s)
	}
	return r.PinnedKey + ": " + strings.Join(certs, ", ")
}

// size is the size of secret as the API server stores it (JSON).
func size(t *testing.T, secret *corev1.Secret) int {
	t.Helper()
	data, err := json.Marshal(secret)
	if err != nil {
		t.Fatal(err)
	}
	return len(data)
}

// TestLegacyRecordsReadOnce: the agent looks for gitpeer 0.1.0's records
// Secret once per PeeringRepository and process, not in every round.
func TestLegacyRecordsReadOnce(t *testing.T) {
	ctx := context.Background()
	legacyReads := 0
	c := fake.NewClientBuilder().WithScheme(apis.NewScheme()).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if strings.HasPrefix(key.Name, vocabulary.IssuedSecretPrefix) {
				legacyReads++
			}
			return c.Get(ctx, key, obj, opts...)
		}}).Build()
	r := &PeeringRepositoryReconciler{Client: c, Now: time.Now}
	obj := &gitpeerv1alpha1.PeeringRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "gitpeer-system", Name: "peering", UID: "uid-1"}}
	for range 3 { // three rounds
		s := newRecordStore(r, obj)
		for _, consumer := range []string{"c1", "c2"} {
			if _, err := s.records(ctx, consumer); err != nil {
				t.Fatal(err)
			}
		}
	}
	if legacyReads != 1 {
		t.Errorf("the legacy records Secret was read %d times in 3 rounds, want once", legacyReads)
	}
	other := obj.DeepCopy()
	other.UID = "uid-2" // a PeeringRepository recreated under the same name looks again
	if _, err := newRecordStore(r, other).records(ctx, "c1"); err != nil || legacyReads != 2 {
		t.Errorf("recreated PeeringRepository: %v, %d reads", err, legacyReads)
	}
}

// TestStagedRecords: the records a chunk of signing steps stage are written
// once per records Secret, and a staged change a write could not make durable
// is reported for its consumer, never taken as written.
func TestStagedRecords(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 23, 18, 0, 0, 0, time.UTC)
	// a, b and c share a records Secret, d has another.
	shard := func(c string) string { return vocabulary.RecordsSecretName("peering", c) }
	var same []string
	other := ""
	for i := 0; len(same) < 3 || other == ""; i++ {
		c := fmt.Sprintf("c%d", i)
		switch {
		case len(same) == 0 || shard(c) == shard(same[0]):
			if len(same) < 3 {
				same = append(same, c)
			}
		case other == "":
			other = c
		}
	}
	// The flush writes at once: mu guards writes and failNext.
	var mu sync.Mutex
	writes, failNext := 0, false
	c := fake.NewClientBuilder().WithScheme(apis.NewScheme()).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			mu.Lock()
			defer mu.Unlock()
			writes++
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			mu.Lock()
			defer mu.Unlock()
			writes++
			if failNext {
				failNext = false
				return apierrors.NewConflict(corev1.Resource("secrets"), obj.GetName(), fmt.Errorf("changed"))
			}
			return c.Update(ctx, obj, opts...)
		}}).Build()
	r := &PeeringRepositoryReconciler{Client: c, Now: func() time.Time { return now }}
	obj := &gitpeerv1alpha1.PeeringRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "gitpeer-system", Name: "peering", UID: "uid-1"}}

	s := newRecordStore(r, obj)
	for _, consumer := range append(same, other) {
		if err := s.stageRecords(ctx, consumer, keyPinned("pin-"+consumer)); err != nil {
			t.Fatal(err)
		}
	}
	if writes != 0 {
		t.Fatalf("%d writes before the flush, want none", writes)
	}
	if failed := s.flushRecords(ctx, 4); len(failed) != 0 || writes != 2 {
		t.Fatalf("flush: %d writes, failed %v; want 2 writes (one per records Secret), none failed", writes, failed)
	}
	if failed := s.flushRecords(ctx, 4); len(failed) != 0 || writes != 2 {
		t.Fatalf("second flush with nothing staged: %d writes, failed %v", writes, failed)
	}
	later := newRecordStore(r, obj)
	for _, consumer := range append(same, other) {
		if got, err := later.records(ctx, consumer); err != nil || got.PinnedKey != "pin-"+consumer {
			t.Errorf("%s: records %+v, %v; want pin-%s", consumer, got, err, consumer)
		}
	}

	// A staged change, then another write of its Secret fails: the staged one is reported lost.
	s = newRecordStore(r, obj)
	if err := s.stageRecords(ctx, same[0], keyPinned("second")); err != nil {
		t.Fatal(err)
	}
	failNext = true
	if err := s.recordKeyPin(ctx, same[1], "second"); err == nil {
		t.Fatal("the write meant to fail did not")
	}
	if err := s.stageRecords(ctx, same[2], keyPinned("second")); err != nil {
		t.Fatal(err)
	}
	failed := s.flushRecords(ctx, 4)
	if failed[same[0]] == nil || failed[same[2]] != nil || len(failed) != 1 {
		t.Errorf("failed %v, want %s alone (its staged pin was lost with the failed write)", failed, same[0])
	}
	for consumer, want := range map[string]string{same[0]: "pin-" + same[0], same[1]: "pin-" + same[1], same[2]: "second"} {
		if got, err := newRecordStore(r, obj).records(ctx, consumer); err != nil || got.PinnedKey != want {
			t.Errorf("%s: pin %q, %v; want %q", consumer, got.PinnedKey, err, want)
		}
	}

	// A flush whose own write fails reports every consumer staged in that Secret.
	s = newRecordStore(r, obj)
	for _, consumer := range same[:2] {
		if err := s.stageRecords(ctx, consumer, keyPinned("third")); err != nil {
			t.Fatal(err)
		}
	}
	failNext = true
	if failed := s.flushRecords(ctx, 4); failed[same[0]] == nil || failed[same[1]] == nil || len(failed) != 2 {
		t.Errorf("failed %v, want %v", failed, same[:2])
	}
}

// TestStageRecordActions: a signing step's records are staged and taken out
// of its plan, the rest kept in order for after the flush.
func TestStageRecordActions(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 23, 18, 0, 0, 0, time.UTC)
	c := fake.NewClientBuilder().WithScheme(apis.NewScheme()).Build()
	obj := &gitpeerv1alpha1.PeeringRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "gitpeer-system", Name: "peering", UID: "uid-1"}}
	s := sessionOf(&PeeringRepositoryReconciler{Client: c, Now: func() time.Time { return now }}, obj)
	cert := &x509.Certificate{SerialNumber: big.NewInt(0x2a), NotAfter: now.Add(time.Hour)}
	d := decision{plan: provider.Plan{Actions: []provider.Action{
		provider.RecordKeyPin{Pin: "pin"}, provider.Event{Reason: "First"}, provider.RecordSerial{Certificate: cert}, provider.StoreIssued{},
	}}}
	s.providerStep().stageRecordActions(ctx, "c1", &d)
	if d.done != nil || !reflect.DeepEqual(d.plan.Actions, []provider.Action{provider.Event{Reason: "First"}, provider.StoreIssued{}}) {
		t.Fatalf("after staging: %+v, done %v", d.plan.Actions, d.done)
	}
	if got, _ := newRecordStore(s.r, obj).records(ctx, "c1"); got.PinnedKey != "" {
		t.Fatalf("records written before the flush: %+v", got)
	}
	if failed := s.flushRecords(ctx, 1); len(failed) != 0 {
		t.Fatal(failed)
	}
	if got, _ := newRecordStore(s.r, obj).records(ctx, "c1"); describeRecords(got) != "pin: 2a until 2026-11-23T19:00:00Z" {
		t.Errorf("records after the flush: %s", describeRecords(got))
	}
}
