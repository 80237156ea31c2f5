package webhook_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/gitpeer/gitpeer/apis"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/reconciler"
	"github.com/gitpeer/gitpeer/reconciler/webhook"
	"github.com/gitpeer/gitpeer/test/controlplane"
	"github.com/gitpeer/gitpeer/test/crdinstall"
)

const (
	ns     = "gitpeer-system"
	token  = "s3cr3t-webhook-token"
	other  = "not-the-token"
	pushGH = `{"ref":"refs/heads/main","before":"0000","after":"1111","repository":{"full_name":"org/peering"}}`
)

// hmacHex is computed here, independently of the package under test.
func hmacHex(key, body string) string {
	return hmacHexWith(sha256.New, key, body)
}

func hmacHexWith(h func() hash.Hash, key, body string) string {
	m := hmac.New(h, []byte(key))
	m.Write([]byte(body))
	return hex.EncodeToString(m.Sum(nil))
}

func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

func github(event, key, body string) http.Header {
	return hdr("X-GitHub-Event", event, "X-Hub-Signature-256", "sha256="+hmacHex(key, body))
}

// env is a control plane with the CRDs, one PeeringRepository per webhook
// case, a HookReconciler feeding hooks from a manager, and a receiver whose
// API client counts its requests.
type env struct {
	k8s      client.Client // admin
	hooks    *webhook.Hooks
	srv      *httptest.Server
	requests *atomic.Int64 // API requests made by srv's receiver
	recv     func() *webhook.Receiver
}

// opted is the number of repositories in setup with a working webhook.
const opted = 5

func setup(t *testing.T) *env {
	t.Helper()
	cp := controlplane.Start(t)
	scheme := apis.NewScheme()
	utilruntime.Must(apiextensionsv1.AddToScheme(scheme))
	k8s, err := client.New(cp.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := crdinstall.Install(ctx, k8s); err != nil {
		t.Fatal(err)
	}
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hook"}, Data: map[string][]byte{webhook.TokenKey: []byte(token + "\n")}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "empty"}, Data: map[string][]byte{"other": []byte(token)}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "rotating"}, Data: map[string][]byte{webhook.TokenKey: []byte(token)}},
		repository("github", "hook", "github", ""),
		repository("gitlab", "hook", "gitlab", ""),
		repository("gitea", "hook", "gitea", ""),
		repository("generic", "hook", "", ""),
		repository("prod", "hook", "github", "prod"),
		repository("off", "", "", ""),
		repository("nosecret", "missing", "github", ""),
		repository("notoken", "empty", "github", ""),
		repository("badtype", "hook", "bitbucket", ""),
	}
	for _, o := range objs {
		if err := k8s.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}

	mgr, err := ctrl.NewManager(cp.Config, ctrl.Options{Scheme: scheme, Client: reconciler.ClientOptions(),
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
	if err != nil {
		t.Fatal(err)
	}
	hooks := &webhook.Hooks{}
	feed := &webhook.HookReconciler{Client: mgr.GetClient(), SecretReader: mgr.GetAPIReader(), Hooks: hooks, Resync: 200 * time.Millisecond}
	if err := feed.SetupWithManager(mgr, controller.Options{SkipNameValidation: ptr.To(true)}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	eventually(t, "the hooks of the opted-in repositories", func() bool { return hooks.Len() == opted })

	// The receiver's client counts every request it sends to the API server.
	requests := &atomic.Int64{}
	counted := rest.CopyConfig(cp.Config)
	counted.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			requests.Add(1)
			return rt.RoundTrip(req)
		})
	})
	patcher, err := client.New(counted, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	recv := func() *webhook.Receiver {
		return &webhook.Receiver{Client: patcher, Hooks: hooks, Rate: rate.Inf}
	}
	srv := httptest.NewServer(recv().Handler())
	t.Cleanup(srv.Close)
	return &env{k8s: k8s, hooks: hooks, srv: srv, requests: requests, recv: recv}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func repository(name, secret, typ, branch string) *gitpeerv1alpha1.PeeringRepository {
	ann := map[string]string{}
	if secret != "" {
		ann[gitpeerv1alpha1.WebhookSecretAnnotation] = secret
	}
	if typ != "" {
		ann[gitpeerv1alpha1.WebhookTypeAnnotation] = typ
	}
	return &gitpeerv1alpha1.PeeringRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: ann},
		Spec: gitpeerv1alpha1.PeeringRepositorySpec{URL: "https://git.example.com/org/peering.git", ClusterID: "cluster-a", Branch: branch,
			Provider: &gitpeerv1alpha1.ProviderSpec{Enabled: true, APIServer: "https://api.cluster-a.example.com:6443"}},
	}
}

func requestedAt(t *testing.T, k8s client.Client, name string) string {
	t.Helper()
	obj := &gitpeerv1alpha1.PeeringRepository{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
		return ""
	}
	return obj.GetAnnotations()[meta.ReconcileRequestAnnotation]
}

// TestReceiver runs requests against a Receiver backed by a real API server.
func TestReceiver(t *testing.T) {
	e := setup(t)
	t.Run("requests", func(t *testing.T) { testRequests(t, e.k8s, e.srv) })
	t.Run("one answer for every refusal", func(t *testing.T) { testRefusals(t, e) })
	t.Run("no API request before authentication", func(t *testing.T) { testNoAPIRequests(t, e) })
	t.Run("hooks follow Secrets and annotations", func(t *testing.T) { testHookUpdates(t, e) })
}

// testRequests checks status codes and whether a reconcile was requested for
// signed, unsigned and badly signed requests of every webhook type.
func testRequests(t *testing.T, k8s client.Client, srv *httptest.Server) {
	big := `{"ref":"refs/heads/main","pad":"` + strings.Repeat("x", webhook.DefaultMaxBodyBytes) + `"}`
	for _, tc := range []struct {
		name, method, path, body string
		header                   http.Header
		want                     int
		triggers                 bool
	}{
		// GitHub
		{name: "github push", path: "github", body: pushGH, header: github("push", token, pushGH), want: 202, triggers: true},
		{name: "github signed with another key", path: "github", body: pushGH, header: github("push", other, pushGH), want: 401},
		{name: "github signature of another body", path: "github", body: pushGH, header: github("push", token, `{"ref":"refs/heads/main"}`), want: 401},
		{name: "github sha1 signature only", path: "github", body: pushGH, header: hdr("X-GitHub-Event", "push", "X-Hub-Signature", "sha1=abcd"), want: 401},
		{name: "github sha1 signature in the sha256 header", path: "github", body: pushGH, header: hdr("X-GitHub-Event", "push", "X-Hub-Signature-256", "sha1="+hmacHexWith(sha1.New, token, pushGH)), want: 401},
		{name: "github unsigned", path: "github", body: pushGH, header: hdr("X-GitHub-Event", "push"), want: 401},
		{name: "github signature not hex", path: "github", body: pushGH, header: hdr("X-GitHub-Event", "push", "X-Hub-Signature-256", "sha256=zz"), want: 401},
		{name: "github ping", path: "github", body: `{"zen":"hi"}`, header: github("ping", token, `{"zen":"hi"}`), want: 200},
		{name: "github pull request event", path: "github", body: pushGH, header: github("pull_request", token, pushGH), want: 200},
		{name: "github push to a review branch", path: "github", body: `{"ref":"refs/heads/gitpeer/p/c"}`, header: github("push", token, `{"ref":"refs/heads/gitpeer/p/c"}`), want: 200},
		{name: "github tag push", path: "github", body: `{"ref":"refs/tags/main"}`, header: github("push", token, `{"ref":"refs/tags/main"}`), want: 200},
		{name: "github malformed JSON", path: "github", body: `{"ref":`, header: github("push", token, `{"ref":`), want: 400},
		{name: "github JSON array", path: "github", body: `["refs/heads/main"]`, header: github("push", token, `["refs/heads/main"]`), want: 400},
		{name: "github oversized", path: "github", body: big, header: github("push", token, big), want: 413},
		{name: "github GET", method: http.MethodGet, path: "github", header: github("push", token, ""), want: 405},
		{name: "configured branch", path: "prod", body: `{"ref":"refs/heads/prod"}`, header: github("push", token, `{"ref":"refs/heads/prod"}`), want: 202, triggers: true},
		{name: "default branch of a prod repository", path: "prod", body: pushGH, header: github("push", token, pushGH), want: 200},
		// GitLab
		{name: "gitlab push", path: "gitlab", body: pushGH, header: hdr("X-Gitlab-Event", "Push Hook", "X-Gitlab-Token", token), want: 202, triggers: true},
		{name: "gitlab wrong token", path: "gitlab", body: pushGH, header: hdr("X-Gitlab-Event", "Push Hook", "X-Gitlab-Token", other), want: 401},
		{name: "gitlab token prefix", path: "gitlab", body: pushGH, header: hdr("X-Gitlab-Event", "Push Hook", "X-Gitlab-Token", token[:5]), want: 401},
		{name: "gitlab no token", path: "gitlab", body: pushGH, header: hdr("X-Gitlab-Event", "Push Hook"), want: 401},
		{name: "gitlab GitHub-signed", path: "gitlab", body: pushGH, header: github("push", token, pushGH), want: 401},
		{name: "gitlab tag push", path: "gitlab", body: pushGH, header: hdr("X-Gitlab-Event", "Tag Push Hook", "X-Gitlab-Token", token), want: 200},
		{name: "gitlab malformed JSON", path: "gitlab", body: "ref=main", header: hdr("X-Gitlab-Event", "Push Hook", "X-Gitlab-Token", token), want: 400},
		// Gitea and Forgejo
		{name: "gitea push", path: "gitea", body: pushGH, header: hdr("X-Gitea-Event", "push", "X-Gitea-Signature", hmacHex(token, pushGH)), want: 202, triggers: true},
		{name: "forgejo push", path: "gitea", body: pushGH, header: hdr("X-Forgejo-Event", "push", "X-Forgejo-Signature", hmacHex(token, pushGH)), want: 202, triggers: true},
		{name: "gitea wrong key", path: "gitea", body: pushGH, header: hdr("X-Gitea-Event", "push", "X-Gitea-Signature", hmacHex(other, pushGH)), want: 401},
		{name: "forgejo wrong key", path: "gitea", body: pushGH, header: hdr("X-Forgejo-Event", "push", "X-Forgejo-Signature", hmacHex(other, pushGH)), want: 401},
		{name: "gitea signature with sha256= prefix", path: "gitea", body: pushGH, header: hdr("X-Gitea-Event", "push", "X-Gitea-Signature", "sha256="+hmacHex(token, pushGH)), want: 401},
		{name: "gitea unsigned", path: "gitea", body: pushGH, header: hdr("X-Gitea-Event", "push"), want: 401},
		{name: "gitea create event", path: "gitea", body: pushGH, header: hdr("X-Gitea-Event", "create", "X-Gitea-Signature", hmacHex(token, pushGH)), want: 200},
		// Generic
		{name: "generic empty body", path: "generic", header: hdr("Authorization", "Bearer "+token), want: 202, triggers: true},
		{name: "generic other branch", path: "generic", body: `{"ref":"refs/heads/dev"}`, header: hdr("Authorization", "Bearer "+token), want: 200},
		{name: "generic wrong token", path: "generic", header: hdr("Authorization", "Bearer "+other), want: 401},
		{name: "generic basic auth", path: "generic", header: hdr("Authorization", "Basic "+token), want: 401},
		{name: "generic no auth", path: "generic", want: 401},
		// Repositories that are not webhooks
		{name: "unknown repository", path: "nope", body: pushGH, header: github("push", token, pushGH), want: 401},
		{name: "not opted in", path: "off", body: pushGH, header: github("push", token, pushGH), want: 401},
		{name: "Secret missing", path: "nosecret", body: pushGH, header: github("push", token, pushGH), want: 401},
		{name: "Secret without token", path: "notoken", body: pushGH, header: github("push", token, pushGH), want: 401},
		{name: "unknown type", path: "badtype", body: pushGH, header: github("push", token, pushGH), want: 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := requestedAt(t, k8s, tc.path)
			status, msg := send(t, srv.URL+"/hook/"+ns+"/"+tc.path, tc.method, tc.body, tc.header)
			if status != tc.want {
				t.Fatalf("status %d (%s), want %d", status, msg, tc.want)
			}
			if after := requestedAt(t, k8s, tc.path); (after != before) != tc.triggers {
				t.Fatalf("requestedAt %q -> %q; want a change: %v", before, after, tc.triggers)
			}
		})
	}
}

// testRefusals checks the receiver says nothing about what exists: an unknown
// repository, a repository without webhook or with a broken one, a missing or
// wrong credential, a namespace it does not serve all get the same answer.
func testRefusals(t *testing.T, e *env) {
	restricted := httptest.NewServer((&webhook.Receiver{Client: e.k8s, Hooks: e.hooks, Namespace: "elsewhere"}).Handler())
	defer restricted.Close()
	signed, wrong := github("push", token, pushGH), github("push", other, pushGH)
	type answer struct {
		status      int
		body, ctype string
	}
	var first answer
	for i, tc := range []struct {
		name, url string
		header    http.Header
	}{
		{"wrong token", e.srv.URL + "/hook/" + ns + "/github", wrong},
		{"unknown repository", e.srv.URL + "/hook/" + ns + "/nope", signed},
		{"unknown repository, wrong token", e.srv.URL + "/hook/" + ns + "/nope", wrong},
		{"no credential", e.srv.URL + "/hook/" + ns + "/github", hdr("X-GitHub-Event", "push")},
		{"unknown repository, no credential", e.srv.URL + "/hook/" + ns + "/nope", hdr("X-GitHub-Event", "push")},
		{"gitlab wrong token", e.srv.URL + "/hook/" + ns + "/gitlab", hdr("X-Gitlab-Event", "Push Hook", "X-Gitlab-Token", other)},
		{"not opted in", e.srv.URL + "/hook/" + ns + "/off", signed},
		{"Secret missing", e.srv.URL + "/hook/" + ns + "/nosecret", signed},
		{"unknown namespace", e.srv.URL + "/hook/other/github", signed},
		{"invalid namespace", e.srv.URL + "/hook/UPPER/github", signed},
		{"outside --watch-namespace", restricted.URL + "/hook/" + ns + "/github", signed},
	} {
		req, err := http.NewRequest(http.MethodPost, tc.url, strings.NewReader(pushGH))
		if err != nil {
			t.Fatal(err)
		}
		req.Header = tc.header
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		got := answer{resp.StatusCode, string(body), resp.Header.Get("Content-Type")}
		if i == 0 {
			first = got
			if got.status != http.StatusUnauthorized {
				t.Errorf("%s: status %d, want 401", tc.name, got.status)
			}
		} else if got != first {
			t.Errorf("%s answers %+v, a wrong token %+v", tc.name, got, first)
		}
	}
	for _, p := range []string{"/hook/" + ns, "/hook/" + ns + "/github/extra", "/hook/" + ns + "/..", "/hook//github", "/other/" + ns + "/github"} {
		if status, msg := send(t, e.srv.URL+p, "", pushGH, signed); status != http.StatusNotFound {
			t.Errorf("%s: status %d (%s), want 404", p, status, msg)
		}
	}
}

// testNoAPIRequests sends unauthenticated requests of every kind and checks
// the receiver sent no request to the API server for them; then one
// authenticated push, which costs exactly its patch.
func testNoAPIRequests(t *testing.T, e *env) {
	e.requests.Store(0)
	for range 5 {
		for _, path := range []string{"github", "gitlab", "gitea", "generic", "prod", "off", "nosecret", "notoken", "badtype", "nope"} {
			for _, h := range []http.Header{
				github("push", other, pushGH), hdr("X-GitHub-Event", "push"),
				hdr("X-Gitlab-Event", "Push Hook", "X-Gitlab-Token", other),
				hdr("X-Gitea-Event", "push", "X-Gitea-Signature", hmacHex(other, pushGH)),
				hdr("Authorization", "Bearer "+other),
			} {
				if status, msg := send(t, e.srv.URL+"/hook/"+ns+"/"+path, "", pushGH, h); status != http.StatusUnauthorized {
					t.Fatalf("%s: status %d (%s), want 401", path, status, msg)
				}
			}
		}
	}
	if n := e.requests.Load(); n != 0 {
		t.Errorf("250 unauthenticated requests cost %d API requests, want 0", n)
	}
	before := requestedAt(t, e.k8s, "github")
	if status, msg := send(t, e.srv.URL+"/hook/"+ns+"/github", "", pushGH, github("push", token, pushGH)); status != http.StatusAccepted {
		t.Fatalf("signed push: status %d (%s)", status, msg)
	}
	if n := e.requests.Load(); n == 0 || requestedAt(t, e.k8s, "github") == before {
		t.Errorf("a signed push cost %d API requests and requested no reconcile; the count does not see the receiver's client", n)
	}
}

// testHookUpdates checks the receiver follows a rotated token, a repository
// opting out, and a new repository, without restarting.
func testHookUpdates(t *testing.T, e *env) {
	ctx := context.Background()
	const rotated = "rotated-token"
	url := e.srv.URL + "/hook/" + ns + "/rotating"
	push := func(key string) int {
		status, _ := send(t, url, "", pushGH, github("push", key, pushGH))
		return status
	}
	if err := e.k8s.Create(ctx, repository("rotating", "rotating", "github", "")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a new repository's webhook", func() bool { return push(token) == http.StatusAccepted })
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "rotating"}, Data: map[string][]byte{webhook.TokenKey: []byte(rotated)}}
	if err := e.k8s.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the rotated token", func() bool { return push(rotated) == http.StatusAccepted })
	if status := push(token); status != http.StatusUnauthorized {
		t.Errorf("the old token after rotation: status %d, want 401", status)
	}
	obj := &gitpeerv1alpha1.PeeringRepository{}
	if err := e.k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "rotating"}, obj); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(obj.DeepCopy())
	delete(obj.Annotations, gitpeerv1alpha1.WebhookSecretAnnotation)
	if err := e.k8s.Patch(ctx, obj, patch); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the opt-out", func() bool { return push(rotated) == http.StatusUnauthorized })
}

func send(t *testing.T, url, method, body string, h http.Header) (int, string) {
	t.Helper()
	if method == "" {
		method = http.MethodPost
	}
	req, err := http.NewRequest(method, url, bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(msg))
}
