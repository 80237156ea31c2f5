package provider

import (
	"strings"
	"testing"
	"time"

	"github.com/gitpeer/gitpeer/vocabulary"
)

func TestRevivalBlocker(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	revoked := now.Add(-time.Hour)
	rec := func(serial string, notAfter time.Time, revokedAt *time.Time) vocabulary.IssuedRecord {
		return vocabulary.IssuedRecord{Serial: serial, NotAfter: notAfter, RevokedAt: revokedAt}
	}
	for name, tc := range map[string]struct {
		records []vocabulary.IssuedRecord
		want    string
	}{
		"no records":                    {nil, ""},
		"unrevoked, unexpired":          {[]vocabulary.IssuedRecord{rec("a", now.Add(time.Hour), nil)}, ""},
		"revoked, expired":              {[]vocabulary.IssuedRecord{rec("a", now.Add(-time.Second), &revoked)}, ""},
		"revoked, expiring exactly now": {[]vocabulary.IssuedRecord{rec("a", now, &revoked)}, ""},
		"revoked, unexpired":            {[]vocabulary.IssuedRecord{rec("a", now.Add(time.Minute), &revoked)}, "a"},
		"the longest-valid revoked one": {[]vocabulary.IssuedRecord{rec("a", now.Add(time.Minute), &revoked), rec("b", now.Add(time.Hour), &revoked), rec("c", now.Add(2*time.Hour), nil)}, "b"},
	} {
		t.Run(name, func(t *testing.T) {
			got := RevivalBlocker(tc.records, now)
			if (got == nil) != (tc.want == "") || (got != nil && got.Serial != tc.want) {
				t.Errorf("RevivalBlocker = %+v, want serial %q", got, tc.want)
			}
		})
	}
}

// TestRevivalRefusal: a consumer with an unexpired revoked certificate is
// refused, naming the certificate and the override (accepted by CheckTenant);
// an expired one blocks nothing.
func TestRevivalRefusal(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	revoked := now.Add(-time.Hour)
	unexpired := []vocabulary.IssuedRecord{{Serial: "2a", NotAfter: now.Add(time.Hour), RevokedAt: &revoked}}
	expired := []vocabulary.IssuedRecord{{Serial: "2a", NotAfter: now.Add(-time.Second), RevokedAt: &revoked}}
	for name, tc := range map[string]struct {
		records []vocabulary.IssuedRecord
		want    string
	}{
		"nothing revoked":             {nil, ""},
		"revoked, expired":            {expired, ""},
		"revoked, unexpired: refused": {unexpired, "revoked certificate 2a is valid until 2026-01-01T13:00:00Z; re-peering is refused until then (override, used once: annotation revival.gitpeer.io/consumer-1=accept-unexpired-revoked-certificates"},
	} {
		t.Run(name, func(t *testing.T) {
			got := RevivalRefusal(tc.records, "consumer-1", now)
			if (got == "") != (tc.want == "") || !strings.HasPrefix(got, tc.want) {
				t.Errorf("RevivalRefusal = %q, want %q", got, tc.want)
			}
		})
	}
}
