package webhook_test

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/gitpeer/gitpeer/reconciler/webhook"
)

// TestRateLimit checks the default per-source limit (burst 20, then 10/s) on
// unauthenticated requests: a source beyond its burst gets 429 with
// Retry-After, other sources are unaffected, X-Forwarded-For counts only from
// a trusted proxy, and IPv6 sources count by /64. The clock stands still
// unless the test moves it.
func TestRateLimit(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h := (&webhook.Receiver{Hooks: &webhook.Hooks{}, Now: func() time.Time { return now },
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}).Handler()
	post := func(remote string, forwarded ...string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/hook/"+ns+"/github", strings.NewReader(pushGH))
		req.RemoteAddr = remote
		if len(forwarded) > 0 {
			req.Header.Set("X-Forwarded-For", strings.Join(forwarded, ", "))
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w
	}
	burst := func(what, remote string, forwarded ...string) {
		t.Helper()
		for i := range webhook.DefaultBurst {
			if w := post(remote, forwarded...); w.Code != http.StatusUnauthorized {
				t.Fatalf("%s: request %d: status %d, want 401", what, i+1, w.Code)
			}
		}
	}
	limited := func(what string, w *httptest.ResponseRecorder) {
		t.Helper()
		if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "1" {
			t.Errorf("%s: status %d, Retry-After %q; want 429 and 1", what, w.Code, w.Header().Get("Retry-After"))
		}
	}
	allowed := func(what string, w *httptest.ResponseRecorder) {
		t.Helper()
		if w.Code != http.StatusUnauthorized {
			t.Errorf("%s: status %d, want 401 (not limited)", what, w.Code)
		}
	}

	burst("direct source", "192.0.2.1:4000")
	limited("beyond the burst", post("192.0.2.1:4001"))
	limited("beyond the burst, another port", post("192.0.2.1:4002"))
	limited("an untrusted peer's X-Forwarded-For is ignored", post("192.0.2.1:4003", "198.51.100.1"))
	allowed("another source", post("192.0.2.2:4000"))
	now = now.Add(100 * time.Millisecond) // one token at 10/s
	allowed("100ms later", post("192.0.2.1:4000"))
	limited("and then limited again", post("192.0.2.1:4000"))

	burst("client behind a trusted proxy", "10.1.1.1:5000", "198.51.100.7")
	limited("same client, same proxy", post("10.1.1.1:5000", "198.51.100.7"))
	limited("same client, through two trusted proxies", post("10.2.2.2:5000", "198.51.100.7", "10.1.1.1"))
	limited("same client, a spoofed first hop is not the source", post("10.1.1.1:5000", "203.0.113.9", "198.51.100.7"))
	allowed("another client behind the proxy", post("10.1.1.1:5000", "198.51.100.8"))
	allowed("the proxy itself", post("10.1.1.1:5000"))

	burst("IPv6 source", "[2001:db8::1]:6000")
	limited("same /64", post("[2001:db8::2]:6000"))
	allowed("another /64", post("[2001:db8:0:1::1]:6000"))
}
