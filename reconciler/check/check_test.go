package check

import (
	gocrypto "crypto"
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/examples/repofixture"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/vocabulary"
)

const apiServer = "https://provider-a.example:6443"

// directory decodes the files of a peering directory of provider-a at stage,
// with terms publishing apiServer, and returns it with the consumer's key.
func directory(t *testing.T, stage repofixture.Stage) (*protocol.Documents, gocrypto.Signer) {
	t.Helper()
	now := time.Now()
	ca, err := repofixture.NewCA("provider-a CA", now.Add(-time.Hour), 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	staged, err := repofixture.Build("provider-a", "consumer-1", stage, repofixture.Options{CA: ca, APIServer: apiServer, NotBefore: now.Add(-time.Minute), TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	pe := &protocol.Documents{Provider: "provider-a", Consumer: "consumer-1"}
	for name, data := range staged.Files {
		if err := pe.Decode(protocol.Path{Provider: "provider-a", Consumer: "consumer-1", Kind: vocabulary.FileKind(name)}, data); err != nil {
			t.Fatal(err)
		}
	}
	doc, err := repofixture.Terms("provider-a")
	if err != nil {
		t.Fatal(err)
	}
	if pe.Terms, err = protocol.DecodeTerms("provider-a", doc); err != nil {
		t.Fatal(err)
	}
	pe.Terms.Spec.APIServer = apiServer
	return pe, staged.Key
}

func wantErr(t *testing.T, err error, want string) {
	t.Helper()
	if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
		t.Fatalf("err = %v, want %q", err, want)
	}
}

// TestTenant: the provider agent checks a Tenant against its own nonce
// and proxy setting, offline checkers against nonce.yaml (or identity.yaml
// once it rotated); every other rule is the same for both.
func TestTenant(t *testing.T) {
	offline := Facts{Now: time.Now()}
	for _, tc := range []struct {
		name   string
		stage  repofixture.Stage
		mutate func(pe *protocol.Documents)
		facts  func(pe *protocol.Documents) Facts
		want   string
	}{
		{name: "proposed, offline", stage: repofixture.TenantProposed},
		{name: "proposed, the provider's nonce", stage: repofixture.TenantProposed,
			facts: func(pe *protocol.Documents) Facts { return Facts{Nonce: &pe.Nonce.Spec.Nonce} }},
		{name: "the provider's nonce is not nonce.yaml's", stage: repofixture.TenantProposed, want: "tenant signature:",
			facts: func(*protocol.Documents) Facts { return Facts{Nonce: ptr.To(crypto.GenerateNonce())} }},
		{name: "no nonce issued", stage: repofixture.TenantProposed, want: "no nonce was issued",
			facts: func(*protocol.Documents) Facts { return Facts{Nonce: ptr.To("")} }},
		{name: "issued, nonce rotated: identity.yaml vouches offline", stage: repofixture.Issued},
		{name: "issued, nonce rotated: the provider's nonce does not", stage: repofixture.Issued, want: "tenant signature:",
			facts: func(pe *protocol.Documents) Facts { return Facts{Nonce: &pe.Nonce.Spec.Nonce} }},
		{name: "replay: rotated nonce and no identity.yaml", stage: repofixture.Issued, want: "identity.yaml does not vouch",
			mutate: func(pe *protocol.Documents) { pe.Identity.Spec.AuthParams.SignedCRT = nil }},
		{name: "no request.yaml", stage: repofixture.TenantProposed, want: "no valid request.yaml",
			mutate: func(pe *protocol.Documents) { pe.Request = nil }},
		{name: "another namespace than the terms'", stage: repofixture.TenantProposed, want: `asks for namespace "kube-system"`,
			mutate: func(pe *protocol.Documents) { pe.Tenant.Namespace = "kube-system" }},
		{name: "a proxyURL offline: well formed", stage: repofixture.TenantProposed,
			mutate: func(pe *protocol.Documents) { pe.Tenant.Spec.ProxyURL = ptr.To("http://proxy:3128") }},
		{name: "a proxyURL offline: malformed", stage: repofixture.TenantProposed, want: "is not an absolute",
			mutate: func(pe *protocol.Documents) { pe.Tenant.Spec.ProxyURL = ptr.To("proxy:3128") }},
		{name: "a proxyURL the provider does not allow", stage: repofixture.TenantProposed, want: "allowProxyURL is false",
			mutate: func(pe *protocol.Documents) { pe.Tenant.Spec.ProxyURL = ptr.To("http://proxy:3128") },
			facts: func(pe *protocol.Documents) Facts {
				return Facts{Nonce: &pe.Nonce.Spec.Nonce, AllowProxyURL: ptr.To(false)}
			}},
		{name: "authzPolicy TolerateNoHandshake", stage: repofixture.TenantProposed, want: "TolerateNoHandshake",
			mutate: func(pe *protocol.Documents) { pe.Tenant.Spec.AuthzPolicy = ptr.To(authv1beta1.TolerateNoHandshake) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pe, key := directory(t, tc.stage)
			if tc.mutate != nil {
				tc.mutate(pe)
			}
			f := offline
			if tc.facts != nil {
				f = tc.facts(pe)
			}
			v := Tenant(pe, f)
			wantErr(t, v.Err, tc.want)
			if tc.want == "" && !key.Public().(interface{ Equal(gocrypto.PublicKey) bool }).Equal(v.Key) {
				t.Fatal("the key is not the Tenant's")
			}
		})
	}
}

// TestIdentity: an Identity must certify the consumer's own key (the
// consumer agent) or the Tenant's (offline), beside its own Tenant, and point
// at the API server the provider's terms publish; invalid terms vouch for
// nothing, absent ones (a plain Liqo provider) leave it to the anchor.
func TestIdentity(t *testing.T) {
	stranger, err := crypto.GenerateKey(crypto.Ed25519)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		mutate func(pe *protocol.Documents)
		key    func(own gocrypto.Signer) gocrypto.PublicKey
		want   string
	}{
		{name: "offline"},
		{name: "the consumer's own key", key: gocrypto.Signer.Public},
		{name: "another cluster's key", want: "not this cluster's key", key: func(gocrypto.Signer) gocrypto.PublicKey { return stranger.Public() }},
		{name: "no tenant.yaml: the consumer did not ask", want: "did not ask provider-a", key: gocrypto.Signer.Public,
			mutate: func(pe *protocol.Documents) { pe.Tenant = nil }},
		{name: "no tenant.yaml offline: the request's key", mutate: func(pe *protocol.Documents) { pe.Tenant = nil }},
		{name: "another API server than the terms'", want: `points at API server "https://attacker.invalid:6443"`,
			mutate: func(pe *protocol.Documents) { pe.Identity.Spec.AuthParams.APIServer = "https://attacker.invalid:6443" }},
		{name: "no terms (plain Liqo provider): the anchor decides",
			mutate: func(pe *protocol.Documents) {
				pe.Terms, pe.TermsErr = nil, protocol.ErrNoTerms
				pe.Identity.Spec.AuthParams.APIServer = "https://attacker.invalid:6443"
			}},
		{name: "terms without an API server", mutate: func(pe *protocol.Documents) { pe.Terms.Spec.APIServer = "" }},
		{name: "invalid terms", want: "cannot vouch for the Identity's API server: p/terms.yaml: invalid",
			mutate: func(pe *protocol.Documents) { pe.Terms, pe.TermsErr = nil, errors.New("p/terms.yaml: invalid") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pe, own := directory(t, repofixture.Issued)
			if tc.mutate != nil {
				tc.mutate(pe)
			}
			f := Facts{Now: time.Now()}
			if tc.key != nil {
				f.Key = tc.key(own)
			}
			v := Identity(pe, f)
			wantErr(t, v.Err, tc.want)
			if (v.Cert != nil) != (tc.want == "") {
				t.Fatalf("certificate %v with error %v", v.Cert, v.Err)
			}
		})
	}
}

func TestOwnTenant(t *testing.T) {
	mine, err := crypto.GenerateKey(crypto.Ed25519)
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := crypto.GenerateKey(crypto.Ed25519)
	if err != nil {
		t.Fatal(err)
	}
	tenant := func(key gocrypto.Signer) *authv1beta1.Tenant {
		tn, err := protocol.NewTenant("consumer-1", key, crypto.GenerateNonce())
		if err != nil {
			t.Fatal(err)
		}
		return tn
	}
	garbled := tenant(mine)
	garbled.Spec.PublicKey = []byte("not a key")
	for name, tc := range map[string]struct {
		tenant  *authv1beta1.Tenant
		wantErr string
	}{
		"own Tenant merged":     {tenant(mine), ""},
		"no Tenant: not asked":  {nil, "did not ask provider-a"},
		"another cluster's key": {tenant(theirs), "not this cluster's key"},
		"Tenant with a bad key": {garbled, "no valid key"},
	} {
		t.Run(name, func(t *testing.T) {
			wantErr(t, OwnTenant(&protocol.Documents{Provider: "provider-a", Consumer: "consumer-1", Tenant: tc.tenant}, mine.Public()), tc.wantErr)
		})
	}
}
