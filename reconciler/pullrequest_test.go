package reconciler

import (
	"context"
	gocrypto "crypto"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/go-git/go-git/v5/plumbing"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fakeclient "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/yaml"

	"github.com/gitpeer/gitpeer/apis"
	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/examples/repofixture"
	"github.com/gitpeer/gitpeer/reconciler/forge"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// TestCheckProposed runs the consumer's pull-request checks on the tenant.yaml a pull request's
// head holds: its own Tenant passes (the provider's rules listed as checked after merge, never as
// passed); a tampered one, another key's, or a missing one fails.
func TestCheckProposed(t *testing.T) {
	key, err := crypto.GenerateKey(crypto.Ed25519)
	if err != nil {
		t.Fatal(err)
	}
	other, err := crypto.GenerateKey(crypto.Ed25519)
	if err != nil {
		t.Fatal(err)
	}
	nonce := crypto.GenerateNonce()
	pe := nonceIssued(t, key, nonce)
	own, err := protocol.NewTenant("edge-1", key, nonce)
	if err != nil {
		t.Fatal(err)
	}
	good, _ := yaml.Marshal(own)
	foreign, err := protocol.NewTenant("edge-1", other, nonce)
	if err != nil {
		t.Fatal(err)
	}
	foreignDoc, _ := yaml.Marshal(foreign)
	elsewhere := own.DeepCopy()
	elsewhere.Namespace = "kube-system"
	elsewhereDoc, _ := yaml.Marshal(elsewhere)
	termsDoc, err := repofixture.Terms("hub")
	if err != nil {
		t.Fatal(err)
	}
	terms, err := protocol.DecodeTerms("hub", termsDoc)
	if err != nil {
		t.Fatal(err)
	}
	s := sessionOf(&PeeringRepositoryReconciler{Now: time.Now}, &gitpeerv1alpha1.PeeringRepository{Spec: gitpeerv1alpha1.PeeringRepositorySpec{Path: "peers"}})
	s.key = key
	for _, tc := range []struct {
		name   string
		file   []byte
		err    error
		failed bool
		want   string
		// termsErr replaces the published terms: missing or invalid.
		termsErr error
	}{
		{name: "own tenant", file: good, failed: false, want: "passed: hub/edge-1/tenant.yaml"},
		{name: "tampered signature", file: []byte(strings.Replace(string(good), "signature: ", "signature: AAAA", 1)), failed: true, want: "failed: hub/edge-1/tenant.yaml"},
		{name: "another key", file: foreignDoc, failed: true, want: "not the key of request.yaml"},
		{name: "not a document", file: []byte("kind: Tenant\nfoo: bar\n"), failed: true, want: "failed: "},
		{name: "tenant outside the terms' namespace", file: elsewhereDoc, failed: true, want: `failed: hub/edge-1/tenant.yaml: invalid document: tenant.yaml asks for namespace "kube-system", the provider's terms give edge-1 namespace "liqo-tenant-edge-1"`},
		{name: "terms missing", file: good, termsErr: protocol.ErrNoTerms, failed: true, want: "failed: hub/terms.yaml: terms missing: hub has not published hub/terms.yaml"},
		{name: "terms invalid", file: good, termsErr: errors.New("hub/terms.yaml: unknown field"), failed: true, want: "failed: hub/terms.yaml: terms invalid: hub/terms.yaml: unknown field"},
		{name: "unreadable", err: errors.New("404 Not Found"), failed: true, want: "cannot read it at the pull request's head"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pe.Terms, pe.TermsErr = terms, tc.termsErr
			if tc.termsErr != nil {
				pe.Terms = nil
			}
			var read string
			lines := s.consumerStep().checkProposed(pe, func(p string) ([]byte, error) { read = p; return tc.file, tc.err })
			text := strings.Join(lines, "\n")
			if read != "peers/hub/edge-1/tenant.yaml" {
				t.Errorf("read %q, want the file under spec.path", read)
			}
			if failed := strings.Contains(text, "failed: "); failed != tc.failed || !strings.Contains(text, tc.want) {
				t.Fatalf("lines:\n%s\nwant failed=%v and %q", text, tc.failed, tc.want)
			}
			if !strings.Contains(text, "checked by the provider after merge, not here: the nonce against its Secret") {
				t.Errorf("the provider's rules must be listed as checked after merge, never passed:\n%s", text)
			}
		})
	}
}

// nonceIssued is the peering hub/edge-1 with key's request.yaml and nonce.yaml.
func nonceIssued(t *testing.T, key gocrypto.Signer, nonce string) *protocol.Documents {
	t.Helper()
	pe := &protocol.Documents{Provider: "hub", Consumer: "edge-1"}
	req, err := protocol.RequestDocument("hub", "edge-1", key.Public())
	if err != nil {
		t.Fatal(err)
	}
	nonceDoc, err := protocol.NonceDocument("hub", "edge-1", nonce)
	if err != nil {
		t.Fatal(err)
	}
	for k, data := range map[vocabulary.FileKind][]byte{vocabulary.RequestFile: req, vocabulary.NonceFile: nonceDoc} {
		if err := pe.Decode(protocol.Path{Provider: "hub", Consumer: "edge-1", Kind: k}, data); err != nil {
			t.Fatal(err)
		}
	}
	return pe
}

// countingForge is a forge with one open pull request that counts the calls made to it.
type countingForge struct {
	calls int
	pr    forge.PullRequest
}

func (f *countingForge) Find(context.Context, string, string) (*forge.PullRequest, error) {
	f.calls++
	pr := f.pr
	return &pr, nil
}

func (f *countingForge) Create(context.Context, string, string, string, string) (*forge.PullRequest, error) {
	return nil, errors.New("unexpected Create")
}

func (f *countingForge) Edit(_ context.Context, _ int64, title, body string) (*forge.PullRequest, error) {
	f.calls++
	f.pr.Title, f.pr.Body = title, body
	pr := f.pr
	return &pr, nil
}

func (f *countingForge) DeleteBranch(context.Context, string) error {
	return errors.New("unexpected DeleteBranch")
}

func (f *countingForge) ReadFile(context.Context, string, string) ([]byte, error) {
	f.calls++
	return nil, errors.New("404 Not Found")
}

// TestPullRequestFollowedOnChange: a consumer awaiting approval asks the forge about its pull
// request when the proposal changed or an interval has passed, not in every round in between
// (rounds of other peerings, webhooks); the peering's message stays the same either way.
func TestPullRequestFollowedOnChange(t *testing.T) {
	key, err := crypto.GenerateKey(crypto.Ed25519)
	if err != nil {
		t.Fatal(err)
	}
	fake := &countingForge{pr: forge.PullRequest{Number: 7, URL: "https://forge.example/org/peering/pulls/7", State: forge.Open, Head: "abc"}}
	defer func(orig func(forge.Repository, string) (forge.Client, error)) { newForge = orig }(newForge)
	newForge = func(forge.Repository, string) (forge.Client, error) { return fake, nil }

	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	token := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "forge"}, Data: map[string][]byte{ForgeTokenKey: []byte("t")}}
	r := &PeeringRepositoryReconciler{Client: fakeclient.NewClientBuilder().WithScheme(apis.NewScheme()).WithObjects(token).Build(), Now: func() time.Time { return now }}
	obj := &gitpeerv1alpha1.PeeringRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "peering", Generation: 1}, Spec: gitpeerv1alpha1.PeeringRepositorySpec{
		URL: "https://forge.example/org/peering.git", Interval: &metav1.Duration{Duration: time.Minute},
		Consumer: &gitpeerv1alpha1.ConsumerSpec{Providers: []authv1beta1.ClusterID{"hub"},
			PullRequest: &gitpeerv1alpha1.PullRequestSpec{Provider: "gitea", SecretRef: meta.LocalObjectReference{Name: "forge"}}},
	}}
	pe := nonceIssued(t, key, crypto.GenerateNonce())
	var messages []string
	round := func(name string, head plumbing.Hash, wantCall bool) {
		t.Helper()
		before := fake.calls
		s := sessionOf(r, obj)
		s.key, s.head = key, head
		o := s.consumerStep().followPullRequest(context.Background(), pe, outcome{phase: gitpeerv1alpha1.PhaseAwaitingApproval, message: "awaiting approval"})
		if o.err != nil {
			t.Fatalf("%s: %v", name, o.err)
		}
		if called := fake.calls > before; called != wantCall {
			t.Fatalf("%s: forge called %v, want %v", name, called, wantCall)
		}
		messages = append(messages, o.message)
		if o.message != messages[0] {
			t.Fatalf("%s: message %q, want %q", name, o.message, messages[0])
		}
	}
	round("first round", plumbing.NewHash("01"), true)
	now = now.Add(10 * time.Second)
	round("same proposal", plumbing.NewHash("01"), false)
	round("the branch moved (another peering)", plumbing.NewHash("02"), false)
	pe = nonceIssued(t, key, crypto.GenerateNonce())
	round("new nonce", plumbing.NewHash("03"), true)
	now = now.Add(30 * time.Second)
	round("same proposal again", plumbing.NewHash("03"), false)
	now = now.Add(time.Minute)
	round("an interval later", plumbing.NewHash("03"), true)
	obj.Generation = 2
	round("spec changed", plumbing.NewHash("03"), true)
}
