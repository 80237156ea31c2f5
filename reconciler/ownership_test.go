package reconciler

import (
	"crypto/x509"
	"math/big"
	"testing"
	"time"
)

func TestRevivalBlocker(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	revoked := now.Add(-time.Hour)
	rec := func(serial string, notAfter time.Time, revokedAt *time.Time) issuedRecord {
		return issuedRecord{Serial: serial, NotAfter: notAfter, RevokedAt: revokedAt}
	}
	for name, tc := range map[string]struct {
		records []issuedRecord
		want    string
	}{
		"no records":                    {nil, ""},
		"unrevoked, unexpired":          {[]issuedRecord{rec("a", now.Add(time.Hour), nil)}, ""},
		"revoked, expired":              {[]issuedRecord{rec("a", now.Add(-time.Second), &revoked)}, ""},
		"revoked, expiring exactly now": {[]issuedRecord{rec("a", now, &revoked)}, ""},
		"revoked, unexpired":            {[]issuedRecord{rec("a", now.Add(time.Minute), &revoked)}, "a"},
		"the longest-valid revoked one": {[]issuedRecord{rec("a", now.Add(time.Minute), &revoked), rec("b", now.Add(time.Hour), &revoked), rec("c", now.Add(2*time.Hour), nil)}, "b"},
	} {
		t.Run(name, func(t *testing.T) {
			got := revivalBlocker(tc.records, now)
			if (got == nil) != (tc.want == "") || (got != nil && got.Serial != tc.want) {
				t.Errorf("revivalBlocker = %+v, want serial %q", got, tc.want)
			}
		})
	}
}

func TestIssuedRecords(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	cert := &x509.Certificate{SerialNumber: big.NewInt(0xab), NotAfter: now.Add(time.Hour)}
	records, changed := withIssued(nil, cert)
	if !changed || len(records) != 1 || records[0].Serial != "ab" || !records[0].NotAfter.Equal(cert.NotAfter) {
		t.Fatalf("withIssued = %+v, %v", records, changed)
	}
	if again, changed := withIssued(records, cert); changed || len(again) != 1 {
		t.Errorf("the same certificate twice: %+v, %v", again, changed)
	}
	records = append(records, issuedRecord{Serial: "old", NotAfter: now.Add(-time.Minute)})
	revoked, changed := withRevoked(records, now)
	if !changed || len(revoked) != 1 || revoked[0].RevokedAt == nil || !revoked[0].RevokedAt.Equal(now) {
		t.Fatalf("withRevoked = %+v, %v; want the expired record dropped and the other revoked now", revoked, changed)
	}
	if records[0].RevokedAt != nil {
		t.Error("withRevoked changed its input")
	}
	if again, changed := withRevoked(revoked, now.Add(time.Minute)); changed || !again[0].RevokedAt.Equal(now) {
		t.Errorf("revoking twice: %+v, %v; want the first revocation time kept", again, changed)
	}
}

func TestConsumerAllowed(t *testing.T) {
	for name, tc := range map[string]struct {
		patterns []string
		consumer string
		want     bool
	}{
		"no patterns: anyone": {nil, "x", true},
		"exact":               {[]string{"edge-1"}, "edge-1", true},
		"glob":                {[]string{"core", "edge-*"}, "edge-42", true},
		"no match":            {[]string{"edge-*"}, "attacker", false},
		"bad pattern ignored": {[]string{"[", "edge-*"}, "x", false},
		"character class":     {[]string{"edge-[0-9]"}, "edge-7", true},
	} {
		t.Run(name, func(t *testing.T) {
			if got := consumerAllowed(tc.patterns, tc.consumer); got != tc.want {
				t.Errorf("consumerAllowed(%q, %q) = %v", tc.patterns, tc.consumer, got)
			}
		})
	}
}

func TestOwnerOf(t *testing.T) {
	for name, tc := range map[string]struct {
		labels map[string]string
		want   ownership
	}{
		"ours":                     {map[string]string{OwnerLabel: "u1", ManagedByLabel: managedBy}, ownedByUs},
		"another repository's":     {map[string]string{OwnerLabel: "u2", ManagedByLabel: managedBy}, ownedByOthers},
		"legacy gitpeer":           {map[string]string{ManagedByLabel: managedBy}, legacy},
		"not gitpeer's":            {map[string]string{"liqo.io/tenant-namespace": "true"}, ownedByOthers},
		"no labels":                {nil, ownedByOthers},
		"empty owner is not ours":  {map[string]string{OwnerLabel: "", ManagedByLabel: managedBy}, ownedByOthers},
		"managed by someone else":  {map[string]string{ManagedByLabel: "liqo"}, ownedByOthers},
		"owner label, not managed": {map[string]string{OwnerLabel: "u1"}, ownedByUs},
	} {
		t.Run(name, func(t *testing.T) {
			if got := ownerOf(tc.labels, "u1"); got != tc.want {
				t.Errorf("ownerOf(%v) = %v, want %v", tc.labels, got, tc.want)
			}
		})
	}
}
