package webhook_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
	m := hmac.New(sha256.New, []byte(key))
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

// setup starts a control plane with the CRDs and one PeeringRepository per
// webhook type, and serves a Receiver for it.
func setup(t *testing.T) (client.Client, *httptest.Server) {
	t.Helper()
	cp := controlplane.Start(t)
	scheme := reconciler.NewScheme()
	utilruntime.Must(apiextensionsv1.AddToScheme(scheme))
	k8s, err := client.New(cp.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := crdinstall.Install(ctx, k8s); err != nil {
		t.Fatal(err)
	}
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hook"}, Data: map[string][]byte{webhook.TokenKey: []byte(token + "\n")}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "empty"}, Data: map[string][]byte{"other": []byte(token)}},
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
	recv := &webhook.Receiver{Client: k8s, SecretReader: k8s}
	srv := httptest.NewServer(recv.Handler())
	t.Cleanup(srv.Close)
	return k8s, srv
}

func repository(name, secret, typ, branch string) *gitpeerv1alpha1.PeeringRepository {
	ann := map[string]string{}
	if secret != "" {
		ann[webhook.SecretAnnotation] = secret
	}
	if typ != "" {
		ann[webhook.TypeAnnotation] = typ
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
	k8s, srv := setup(t)
	t.Run("requests", func(t *testing.T) { testRequests(t, k8s, srv) })
	t.Run("paths", func(t *testing.T) { testPaths(t, k8s, srv) })
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
		{name: "github signed with another key", path: "github", body: pushGH, header: github("push", other, pushGH), want: 403},
		{name: "github signature of another body", path: "github", body: pushGH, header: github("push", token, `{"ref":"refs/heads/main"}`), want: 403},
		{name: "github sha1 signature only", path: "github", body: pushGH, header: hdr("X-GitHub-Event", "push", "X-Hub-Signature", "sha1=abcd"), want: 401},
		{name: "github unsigned", path: "github", body: pushGH, header: hdr("X-GitHub-Event", "push"), want: 401},
		{name: "github signature not hex", path: "github", body: pushGH, header: hdr("X-GitHub-Event", "push", "X-Hub-Signature-256", "sha256=zz"), want: 403},
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
		{name: "gitlab wrong token", path: "gitlab", body: pushGH, header: hdr("X-Gitlab-Event", "Push Hook", "X-Gitlab-Token", other), want: 403},
		{name: "gitlab token prefix", path: "gitlab", body: pushGH, header: hdr("X-Gitlab-Event", "Push Hook", "X-Gitlab-Token", token[:5]), want: 403},
		{name: "gitlab no token", path: "gitlab", body: pushGH, header: hdr("X-Gitlab-Event", "Push Hook"), want: 401},
		{name: "gitlab GitHub-signed", path: "gitlab", body: pushGH, header: github("push", token, pushGH), want: 401},
		{name: "gitlab tag push", path: "gitlab", body: pushGH, header: hdr("X-Gitlab-Event", "Tag Push Hook", "X-Gitlab-Token", token), want: 200},
		{name: "gitlab malformed JSON", path: "gitlab", body: "ref=main", header: hdr("X-Gitlab-Event", "Push Hook", "X-Gitlab-Token", token), want: 400},
		// Gitea and Forgejo
		{name: "gitea push", path: "gitea", body: pushGH, header: hdr("X-Gitea-Event", "push", "X-Gitea-Signature", hmacHex(token, pushGH)), want: 202, triggers: true},
		{name: "forgejo push", path: "gitea", body: pushGH, header: hdr("X-Forgejo-Event", "push", "X-Forgejo-Signature", hmacHex(token, pushGH)), want: 202, triggers: true},
		{name: "gitea wrong key", path: "gitea", body: pushGH, header: hdr("X-Gitea-Event", "push", "X-Gitea-Signature", hmacHex(other, pushGH)), want: 403},
		{name: "gitea signature with sha256= prefix", path: "gitea", body: pushGH, header: hdr("X-Gitea-Event", "push", "X-Gitea-Signature", "sha256="+hmacHex(token, pushGH)), want: 403},
		{name: "gitea unsigned", path: "gitea", body: pushGH, header: hdr("X-Gitea-Event", "push"), want: 401},
		{name: "gitea create event", path: "gitea", body: pushGH, header: hdr("X-Gitea-Event", "create", "X-Gitea-Signature", hmacHex(token, pushGH)), want: 200},
		// Generic
		{name: "generic empty body", path: "generic", header: hdr("Authorization", "Bearer "+token), want: 202, triggers: true},
		{name: "generic other branch", path: "generic", body: `{"ref":"refs/heads/dev"}`, header: hdr("Authorization", "Bearer "+token), want: 200},
		{name: "generic wrong token", path: "generic", header: hdr("Authorization", "Bearer "+other), want: 403},
		{name: "generic basic auth", path: "generic", header: hdr("Authorization", "Basic "+token), want: 401},
		{name: "generic no auth", path: "generic", want: 401},
		// Repositories that are not webhooks
		{name: "unknown repository", path: "nope", body: pushGH, header: github("push", token, pushGH), want: 404},
		{name: "not opted in", path: "off", body: pushGH, header: github("push", token, pushGH), want: 404},
		{name: "Secret missing", path: "nosecret", body: pushGH, header: github("push", token, pushGH), want: 404},
		{name: "Secret without token", path: "notoken", body: pushGH, header: github("push", token, pushGH), want: 404},
		{name: "unknown type", path: "badtype", body: pushGH, header: github("push", token, pushGH), want: 404},
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

// testPaths checks that the receiver says nothing about what exists beyond
// "not a webhook", and honours the namespace restriction.
func testPaths(t *testing.T, k8s client.Client, srv *httptest.Server) {
	h := github("push", token, pushGH)
	_, unknown := send(t, srv.URL+"/hook/"+ns+"/nope", "", pushGH, h)
	_, off := send(t, srv.URL+"/hook/"+ns+"/off", "", pushGH, h)
	if unknown != off {
		t.Errorf("unknown repository answers %q, repository without webhook %q", unknown, off)
	}
	for _, p := range []string{"/hook/" + ns, "/hook/" + ns + "/github/extra", "/hook/UPPER/github", "/hook/" + ns + "/..", "/hook//github", "/other/" + ns + "/github"} {
		if status, msg := send(t, srv.URL+p, "", pushGH, h); status != http.StatusNotFound {
			t.Errorf("%s: status %d (%s), want 404", p, status, msg)
		}
	}
	restricted := httptest.NewServer((&webhook.Receiver{Client: k8s, SecretReader: k8s, Namespace: "elsewhere"}).Handler())
	defer restricted.Close()
	if status, msg := send(t, restricted.URL+"/hook/"+ns+"/github", "", pushGH, h); status != http.StatusNotFound {
		t.Errorf("outside --watch-namespace: status %d (%s), want 404", status, msg)
	}
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
