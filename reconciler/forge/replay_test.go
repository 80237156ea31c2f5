package forge

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// exchange is one request a forge's API received and its answer, recorded from the API's
// documented behaviour: the request's method, path, query and the JSON fields of its body that
// matter, and the status and body of the response.
type exchange struct {
	Method   string            `json:"method"`
	Path     string            `json:"path"`
	Query    url.Values        `json:"query,omitempty"`
	Body     map[string]any    `json:"body,omitempty"`
	Contains map[string]string `json:"contains,omitempty"`
	Status   int               `json:"status"`
	Response json.RawMessage   `json:"response,omitempty"`
	// Raw is a response body that is not JSON (a raw file).
	Raw string `json:"raw,omitempty"`
}

// replay serves the exchanges of testdata/<name>.json in order: each request must be the next
// recorded one (method, path, query, and the recorded body fields), else the test fails. The test
// also fails when a recorded exchange was never requested.
func replay(t *testing.T, name string) *httptest.Server {
	t.Helper()
	data, err := os.ReadFile("testdata/" + name + ".json")
	if err != nil {
		t.Fatal(err)
	}
	var script []exchange
	if err := json.Unmarshal(data, &script); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var mu sync.Mutex
	next := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if next >= len(script) {
			t.Errorf("%s: unexpected request %s %s (all %d recorded exchanges served)", name, r.Method, r.URL, len(script))
			http.Error(w, "not recorded", http.StatusTeapot)
			return
		}
		want := script[next]
		next++
		if err := want.matches(r); err != "" {
			t.Errorf("%s: exchange %d: %s", name, next, err)
			http.Error(w, err, http.StatusTeapot)
			return
		}
		if want.Raw != "" {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(want.Status)
			_, _ = io.WriteString(w, want.Raw)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(want.Status)
		_, _ = w.Write(want.Response)
	}))
	t.Cleanup(func() {
		srv.Close()
		if next != len(script) {
			t.Errorf("%s: %d of %d recorded exchanges requested", name, next, len(script))
		}
	})
	return srv
}

// matches returns why r is not the recorded request, or "".
func (e exchange) matches(r *http.Request) string {
	if r.Method != e.Method || r.URL.EscapedPath() != e.Path {
		return "got " + r.Method + " " + r.URL.EscapedPath() + ", want " + e.Method + " " + e.Path
	}
	if q := r.URL.Query(); len(e.Query) > 0 && !reflect.DeepEqual(q, e.Query) || len(e.Query) == 0 && len(q) > 0 {
		return "query " + r.URL.RawQuery + ", want " + e.Query.Encode()
	}
	if len(e.Body) == 0 && len(e.Contains) == 0 {
		return ""
	}
	data, _ := io.ReadAll(r.Body)
	var got map[string]any
	if err := json.Unmarshal(data, &got); err != nil {
		return "body is not a JSON object: " + string(data)
	}
	for k, v := range e.Body {
		if !reflect.DeepEqual(got[k], v) {
			b, _ := json.Marshal(got[k])
			w, _ := json.Marshal(v)
			return "body field " + k + " = " + string(b) + ", want " + string(w)
		}
	}
	for k, sub := range e.Contains {
		if v, _ := got[k].(string); !strings.Contains(v, sub) {
			return "body field " + k + " lacks " + sub + ": " + v
		}
	}
	return ""
}
