package provider

import (
	"crypto/x509"
	"math/big"
	"strings"
	"testing"
	"time"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	"github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1/documents"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
)

func TestDecide(t *testing.T) {
	merged := &authv1beta1.Tenant{Spec: authv1beta1.TenantSpec{Signature: []byte("sig"), CSR: []byte("csr")}}
	issued := &authv1beta1.Tenant{Spec: merged.Spec, Status: authv1beta1.TenantStatus{AuthParams: &authv1beta1.AuthParams{SignedCRT: []byte("crt")}}}
	other := &authv1beta1.Tenant{Spec: authv1beta1.TenantSpec{Signature: []byte("old"), CSR: []byte("csr")}, Status: issued.Status}
	invalid := map[protocol.Kind]error{protocol.Tenant: protocol.ErrInvalid}
	for name, tc := range map[string]struct {
		pe   protocol.Documents
		o    Observed
		want Step
	}{
		"build failed: fail closed, even if issued": {protocol.Documents{Tenant: merged, BuildFailed: protocol.ErrInvalid}, Observed{Tenant: issued}, FailClosed},
		"invalid tenant.yaml never revokes":         {protocol.Documents{Invalid: invalid}, Observed{Tenant: issued}, SkipInvalid},
		"tenant.yaml gone, Tenant issued: revoke":   {protocol.Documents{}, Observed{Tenant: issued}, Revoke},
		"tenant.yaml gone, identity.yaml left":      {protocol.Documents{Identity: &authv1beta1.Identity{}}, Observed{}, Revoke},
		"request only: offer a nonce":               {protocol.Documents{Request: &documents.PeeringRequest{}}, Observed{}, OfferNonce},
		"nothing at all: offer (refused later)":     {protocol.Documents{}, Observed{}, OfferNonce},
		"merged, nothing issued: issue":             {protocol.Documents{Tenant: merged}, Observed{}, Issue},
		"merged, Tenant applied, not signed yet":    {protocol.Documents{Tenant: merged}, Observed{Tenant: merged}, Issue},
		"merged and issued: maintain":               {protocol.Documents{Tenant: merged}, Observed{Tenant: issued}, Maintain},
		"a new Tenant replaces the issued one":      {protocol.Documents{Tenant: merged}, Observed{Tenant: other}, Issue},
	} {
		t.Run(name, func(t *testing.T) {
			if got := Decide(&tc.pe, tc.o); got != tc.want {
				t.Errorf("Decide = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestAdmit(t *testing.T) {
	for name, tc := range map[string]struct {
		r    Request
		want Admission
	}{
		"new request under the cap":         {Request{Consumer: "edge-1", Pending: 1, Max: 2}, Admitted},
		"new request at the cap: deferred":  {Request{Consumer: "edge-1", Pending: 2, Max: 2}, Deferred},
		"answered earlier: not counted":     {Request{Consumer: "edge-1", Answered: true, Pending: 5, Max: 2}, Answered},
		"not allowed, even if answered":     {Request{Consumer: "attacker", Allowed: []string{"edge-*"}, Answered: true, Max: 9}, NotAllowed},
		"allowed by pattern":                {Request{Consumer: "edge-7", Allowed: []string{"core", "edge-*"}, Max: 1}, Admitted},
		"zero cap defers every new request": {Request{Consumer: "edge-1"}, Deferred},
	} {
		t.Run(name, func(t *testing.T) {
			if got := Admit(tc.r); got != tc.want {
				t.Errorf("Admit(%+v) = %d, want %d", tc.r, got, tc.want)
			}
		})
	}
}

func TestAllowed(t *testing.T) {
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
			if got := Allowed(tc.patterns, tc.consumer); got != tc.want {
				t.Errorf("Allowed(%q, %q) = %v", tc.patterns, tc.consumer, got)
			}
		})
	}
}

// peering is provider-a/consumer-1 with a request and a Tenant signed over
// nonce, both of the consumer's key.
func peering(t *testing.T, nonce string) (*protocol.Documents, string) {
	t.Helper()
	key, err := crypto.GenerateKey(crypto.Ed25519)
	if err != nil {
		t.Fatal(err)
	}
	tenant, err := protocol.NewTenant("consumer-1", key, nonce)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := crypto.MarshalPublicKeyPEM(key.Public())
	if err != nil {
		t.Fatal(err)
	}
	pin, err := crypto.KeyPin(key.Public())
	if err != nil {
		t.Fatal(err)
	}
	return &protocol.Documents{Provider: "provider-a", Consumer: "consumer-1", Tenant: tenant,
		Request: &documents.PeeringRequest{Spec: documents.PeeringRequestSpec{ConsumerClusterID: "consumer-1", ProviderClusterID: "provider-a", PublicKey: pub}}}, pin
}

func TestCheckTenant(t *testing.T) {
	nonce := crypto.GenerateNonce()
	pe, pin := peering(t, nonce)
	otherKey, _ := peering(t, nonce)
	otherPin := strings.Repeat("ab", 32)
	with := func(mutate func(*authv1beta1.TenantSpec)) *protocol.Documents {
		changed := *pe
		changed.Tenant = pe.Tenant.DeepCopy()
		mutate(&changed.Tenant.Spec)
		return &changed
	}
	policy := func(p authv1beta1.AuthzPolicy) *protocol.Documents {
		return with(func(s *authv1beta1.TenantSpec) { s.AuthzPolicy = &p })
	}
	proxy := func(u string) *protocol.Documents {
		return with(func(s *authv1beta1.TenantSpec) { s.ProxyURL = &u })
	}
	for name, tc := range map[string]struct {
		pe       *protocol.Documents
		check    TenantCheck
		rejected string // substring; "" accepts
		replaces string
	}{
		"first issuance":                               {pe, TenantCheck{Nonce: nonce}, "", ""},
		"pinned key":                                   {pe, TenantCheck{Nonce: nonce, PinnedKey: pin}, "", ""},
		"no nonce issued":                              {pe, TenantCheck{}, "no nonce was issued", ""},
		"signed over another nonce":                    {pe, TenantCheck{Nonce: crypto.GenerateNonce()}, "tenant signature", ""},
		"key is not request.yaml's key":                {&protocol.Documents{Provider: "provider-a", Consumer: "consumer-1", Tenant: pe.Tenant, Request: otherKey.Request}, TenantCheck{Nonce: nonce}, "request", ""},
		"no request.yaml":                              {&protocol.Documents{Provider: "provider-a", Consumer: "consumer-1", Tenant: pe.Tenant}, TenantCheck{Nonce: nonce}, "no valid request.yaml", ""},
		"revoked certificate unexpired":                {pe, TenantCheck{Nonce: nonce, RevivalBlocked: "revoked certificate 1f is valid until"}, "revoked certificate 1f", ""},
		"another key pinned":                           {pe, TenantCheck{Nonce: nonce, PinnedKey: otherPin}, "is not the key pinned for consumer-1", ""},
		"rekey to another key only":                    {pe, TenantCheck{Nonce: nonce, PinnedKey: otherPin, Rekey: otherPin}, "is not the key pinned", ""},
		"rekeyed by the admin":                         {pe, TenantCheck{Nonce: nonce, PinnedKey: otherPin, Rekey: pin}, "", otherPin},
		"authzPolicy unset (CRD default KeysExchange)": {with(func(s *authv1beta1.TenantSpec) { s.AuthzPolicy = nil }), TenantCheck{Nonce: nonce}, "", ""},
		"authzPolicy TolerateNoHandshake": {policy(authv1beta1.TolerateNoHandshake), TenantCheck{Nonce: nonce, AllowProxyURL: true},
			`spec.authzPolicy is "TolerateNoHandshake": only KeysExchange is accepted`, ""},
		"authzPolicy empty string":    {policy(""), TenantCheck{Nonce: nonce}, `spec.authzPolicy is ""`, ""},
		"proxyURL not allowed":        {proxy("http://proxy.consumer:3128"), TenantCheck{Nonce: nonce}, "does not accept proxies named by consumers (spec.provider.allowProxyURL is false)", ""},
		"proxyURL allowed":            {proxy("http://proxy.consumer:3128"), TenantCheck{Nonce: nonce, AllowProxyURL: true}, "", ""},
		"socks5 proxyURL allowed":     {proxy("socks5://10.0.0.1:1080"), TenantCheck{Nonce: nonce, AllowProxyURL: true}, "", ""},
		"empty proxyURL":              {proxy(""), TenantCheck{Nonce: nonce}, "", ""},
		"proxyURL not a URL":          {proxy("proxy.consumer:3128"), TenantCheck{Nonce: nonce, AllowProxyURL: true}, "is not an absolute [http https socks5] URL", ""},
		"proxyURL with a file scheme": {proxy("file:///etc/passwd"), TenantCheck{Nonce: nonce, AllowProxyURL: true}, "is not an absolute", ""},
	} {
		t.Run(name, func(t *testing.T) {
			v := CheckTenant(tc.pe, tc.check)
			switch {
			case tc.rejected == "" && v.Rejected != "":
				t.Fatalf("rejected: %s", v.Rejected)
			case tc.rejected != "" && !strings.Contains(v.Rejected, tc.rejected):
				t.Fatalf("Rejected = %q, want it to contain %q", v.Rejected, tc.rejected)
			case tc.rejected == "" && (v.Pin != pin || v.Key == nil):
				t.Fatalf("pin %s, want %s", v.Pin, pin)
			case v.Replaces != tc.replaces:
				t.Fatalf("Replaces = %q, want %q", v.Replaces, tc.replaces)
			}
		})
	}
}

func TestRenewalOf(t *testing.T) {
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	cert := func(life time.Duration) *x509.Certificate {
		return &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: start, NotAfter: start.Add(life)}
	}
	for name, tc := range map[string]struct {
		cert         *x509.Certificate
		at           time.Duration // since NotBefore
		due, overdue bool
	}{
		"fresh":                                 {cert(90 * time.Minute), time.Minute, false, false},
		"just before 2/3 of its life":           {cert(90 * time.Minute), 59 * time.Minute, false, false},
		"at 2/3: due, not overdue":              {cert(90 * time.Minute), time.Hour, true, false},
		"due, within a twelfth of its life":     {cert(90 * time.Minute), time.Hour + 7*time.Minute, true, false},
		"a twelfth past the renewal point":      {cert(90 * time.Minute), time.Hour + 7*time.Minute + 30*time.Second, true, true},
		"long-lived: overdue an hour after 2/3": {cert(360 * 24 * time.Hour), 240*24*time.Hour + time.Hour, true, true},
		"long-lived: due, not an hour late":     {cert(360 * 24 * time.Hour), 240*24*time.Hour + 59*time.Minute, true, false},
		"expired and never renewed: overdue":    {cert(90 * time.Minute), 2 * time.Hour, true, true},
	} {
		t.Run(name, func(t *testing.T) {
			r := RenewalOf(tc.cert, start.Add(tc.at))
			if r.Due != tc.due || r.Overdue != tc.overdue {
				t.Errorf("RenewalOf at +%s = due %v, overdue %v; want %v, %v", tc.at, r.Due, r.Overdue, tc.due, tc.overdue)
			}
			if want := crypto.RenewalTime(tc.cert); !r.At.Equal(want) {
				t.Errorf("At = %s, want %s", r.At, want)
			}
		})
	}
}
