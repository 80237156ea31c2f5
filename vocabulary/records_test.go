package vocabulary_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/gitpeer/gitpeer/vocabulary"
)

// TestRecordsSecretName pins the shard of a consumer: records are looked up
// by this name, so it must never change.
func TestRecordsSecretName(t *testing.T) {
	for consumer, want := range map[string]string{
		"consumer-1": "gitpeer-records-peering-07", // sha256("consumer-1")[0] = 0x07
		"edge-42":    "gitpeer-records-peering-0b", // sha256("edge-42")[0] = 0x4b, modulo 64
	} {
		if got := vocabulary.RecordsSecretName("peering", consumer); got != want {
			t.Errorf("RecordsSecretName(peering, %s) = %s, want %s", consumer, got, want)
		}
	}
	shards := map[string]bool{}
	for i := range 10000 {
		shards[vocabulary.RecordsSecretName("p", fmt.Sprintf("consumer-%d", i))] = true
	}
	if len(shards) != vocabulary.RecordsShards {
		t.Errorf("10,000 consumers over %d Secrets, want %d", len(shards), vocabulary.RecordsShards)
	}
}

func TestMergeRecords(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	early, late := now.Add(-time.Hour), now
	a := vocabulary.ConsumerRecords{PinnedKey: "new", Certificates: []vocabulary.IssuedRecord{
		{Serial: "1", NotAfter: now.Add(time.Hour)}, {Serial: "2", NotAfter: now.Add(time.Hour), RevokedAt: &late}}}
	b := vocabulary.ConsumerRecords{PinnedKey: "old", Certificates: []vocabulary.IssuedRecord{
		{Serial: "1", NotAfter: now.Add(time.Hour), RevokedAt: &early}, {Serial: "2", NotAfter: now.Add(time.Hour)}, {Serial: "3", NotAfter: now}}}
	got := vocabulary.MergeRecords(a, b)
	want := vocabulary.ConsumerRecords{PinnedKey: "new", Certificates: []vocabulary.IssuedRecord{
		{Serial: "1", NotAfter: now.Add(time.Hour), RevokedAt: &early}, {Serial: "2", NotAfter: now.Add(time.Hour), RevokedAt: &late}, {Serial: "3", NotAfter: now}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("MergeRecords = %+v, want %+v", got, want)
	}
	if a.Certificates[0].RevokedAt != nil {
		t.Error("MergeRecords changed its input")
	}
	if got := vocabulary.MergeRecords(vocabulary.ConsumerRecords{}, b).PinnedKey; got != "old" {
		t.Errorf("pin %q, want the only one", got)
	}
	kept, changed := vocabulary.WithoutExpired(got.Certificates, now)
	if !changed || len(kept) != 2 || len(got.Certificates) != 3 {
		t.Errorf("WithoutExpired = %+v, %v", kept, changed)
	}
}

func TestIssuedRecords(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	notAfter := now.Add(time.Hour)
	records, changed := vocabulary.WithIssued(nil, "ab", notAfter)
	if !changed || len(records) != 1 || records[0].Serial != "ab" || !records[0].NotAfter.Equal(notAfter) {
		t.Fatalf("WithIssued = %+v, %v", records, changed)
	}
	if again, changed := vocabulary.WithIssued(records, "ab", notAfter); changed || len(again) != 1 {
		t.Errorf("the same certificate twice: %+v, %v", again, changed)
	}
	records = append(records, vocabulary.IssuedRecord{Serial: "old", NotAfter: now.Add(-time.Minute)})
	revoked, changed := vocabulary.WithRevoked(records, now)
	if !changed || len(revoked) != 1 || revoked[0].RevokedAt == nil || !revoked[0].RevokedAt.Equal(now) {
		t.Fatalf("WithRevoked = %+v, %v; want the expired record dropped and the other revoked now", revoked, changed)
	}
	if records[0].RevokedAt != nil {
		t.Error("WithRevoked changed its input")
	}
	if again, changed := vocabulary.WithRevoked(revoked, now.Add(time.Minute)); changed || !again[0].RevokedAt.Equal(now) {
		t.Errorf("revoking twice: %+v, %v; want the first revocation time kept", again, changed)
	}
}

// TestSliceRecords: a certificate Liqo issued for a ResourceSlice is
// recorded with its slice's name, in the records format of every other
// certificate (a record without a slice is written as before), and survives
// a merge.
func TestSliceRecords(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	records, changed := vocabulary.WithIssued(nil, "a1", now.Add(time.Hour))
	if !changed {
		t.Fatal("WithIssued: no change")
	}
	for _, tc := range []struct {
		slice, serial string
		notAfter      time.Time
		changed       bool
	}{
		{"slice-1", "b2", now.Add(2 * time.Hour), true},
		{"slice-1", "b2", now.Add(2 * time.Hour), false}, // seen again
		{"slice-2", "a1", now.Add(time.Hour), true},      // recorded before without its name
	} {
		records, changed = vocabulary.WithSliceIssued(records, tc.slice, tc.serial, tc.notAfter)
		if changed != tc.changed {
			t.Errorf("WithSliceIssued(%s, %s) changed = %v, want %v", tc.slice, tc.serial, changed, tc.changed)
		}
	}
	want := []vocabulary.IssuedRecord{{Serial: "a1", NotAfter: now.Add(time.Hour), ResourceSlice: "slice-2"}, {Serial: "b2", NotAfter: now.Add(2 * time.Hour), ResourceSlice: "slice-1"}}
	if !reflect.DeepEqual(records, want) {
		t.Fatalf("records = %+v, want %+v", records, want)
	}
	data, err := json.Marshal([]vocabulary.IssuedRecord{{Serial: "c3", NotAfter: now}, records[1]})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(data), `[{"serial":"c3","notAfter":"2026-01-01T12:00:00Z"},{"serial":"b2","notAfter":"2026-01-01T14:00:00Z","resourceSlice":"slice-1"}]`; got != want {
		t.Errorf("records JSON = %s, want %s", got, want)
	}
	merged := vocabulary.MergeRecords(vocabulary.ConsumerRecords{Certificates: []vocabulary.IssuedRecord{{Serial: "b2", NotAfter: now.Add(2 * time.Hour)}}}, vocabulary.ConsumerRecords{Certificates: records})
	if merged.Certificates[0].ResourceSlice != "slice-1" {
		t.Errorf("MergeRecords lost the slice: %+v", merged.Certificates)
	}
}
