package provider

import (
	gocrypto "crypto"
	"crypto/x509"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1/documents"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/vocabulary"
)

func TestDecide(t *testing.T) {
	merged := &authv1beta1.Tenant{Spec: authv1beta1.TenantSpec{Signature: []byte("sig"), CSR: []byte("csr")}}
	issued := &authv1beta1.Tenant{Spec: merged.Spec, Status: authv1beta1.TenantStatus{AuthParams: &authv1beta1.AuthParams{SignedCRT: []byte("crt")}}}
	other := &authv1beta1.Tenant{Spec: authv1beta1.TenantSpec{Signature: []byte("old"), CSR: []byte("csr")}, Status: issued.Status}
	invalid := map[vocabulary.FileKind]error{vocabulary.TenantFile: protocol.ErrInvalid}
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
// nonce, both of the consumer's key, and that key's pin.
func peering(t *testing.T, nonce string) (*protocol.Documents, string) {
	pe, pin, _ := peeringOf(t, nonce)
	return pe, pin
}

// peeringOf is peering, with the consumer's key.
func peeringOf(t *testing.T, nonce string) (*protocol.Documents, string, gocrypto.Signer) {
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
		Request: &documents.PeeringRequest{Spec: documents.PeeringRequestSpec{ConsumerClusterID: "consumer-1", ProviderClusterID: "provider-a", PublicKey: pub}}}, pin, key
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
		"revival with another value":                   {pe, TenantCheck{Nonce: nonce, RevivalBlocked: "revoked certificate 1f is valid until", Revival: "yes"}, "revoked certificate 1f", ""},
		"revival accepted by the admin":                {pe, TenantCheck{Nonce: nonce, RevivalBlocked: "revoked certificate 1f is valid until", Revival: gitpeerv1alpha1.AcceptRevivalValue}, "", ""},
		"revived Tenant applied, override used up":     {pe, TenantCheck{Nonce: nonce, RevivalBlocked: "revoked certificate 1f is valid until", Applied: true}, "", ""},
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
			case tc.rejected != "" && v.Used != nil:
				t.Fatalf("a rejected Tenant uses overrides %v", v.Used)
			}
		})
	}
}

// TestCheckTenantOverrides: an override the accepted Tenant relies on is
// used (then removed by the provider: used once); one that has no effect is
// left in place and reported, never used.
func TestCheckTenantOverrides(t *testing.T) {
	nonce := crypto.GenerateNonce()
	pe, pin := peering(t, nonce)
	otherPin := strings.Repeat("ab", 32)
	blocked := "revoked certificate 1f is valid until 2030-01-01T00:00:00Z"
	revival := Override{gitpeerv1alpha1.RevivalAnnotationPrefix + "consumer-1", gitpeerv1alpha1.AcceptRevivalValue}
	rekey := Override{gitpeerv1alpha1.RekeyAnnotationPrefix + "consumer-1", pin}
	for name, tc := range map[string]struct {
		check  TenantCheck
		used   []Override
		unused []string // substrings, in order
	}{
		"none":                                {TenantCheck{Nonce: nonce}, nil, nil},
		"revival of a blocked consumer: used": {TenantCheck{Nonce: nonce, RevivalBlocked: blocked, Revival: revival.Value}, []Override{revival}, nil},
		"revival left after a failed removal, Tenant applied: used": {
			TenantCheck{Nonce: nonce, RevivalBlocked: blocked, Revival: revival.Value, Applied: true}, []Override{revival}, nil},
		"revival of a consumer nothing blocks: unused": {TenantCheck{Nonce: nonce, Revival: revival.Value}, nil,
			[]string{"annotation revival.gitpeer.io/consumer-1 left in place, unused: no unexpired revoked certificate of consumer-1 blocks its binding"}},
		"revival with another value: unused":        {TenantCheck{Nonce: nonce, Revival: "true"}, nil, []string{`its value is "true", only "accept-unexpired-revoked-certificates" has an effect`}},
		"rekey to the new key: used":                {TenantCheck{Nonce: nonce, PinnedKey: otherPin, Rekey: pin}, []Override{rekey}, nil},
		"rekey naming the pinned key already: used": {TenantCheck{Nonce: nonce, PinnedKey: pin, Rekey: pin}, []Override{rekey}, nil},
		"rekey naming another key: unused":          {TenantCheck{Nonce: nonce, PinnedKey: pin, Rekey: otherPin}, nil, []string{"annotation rekey.gitpeer.io/consumer-1 left in place, unused: it names key abababababababab, not the key of tenant.yaml (" + pin[:16] + ")"}},
		"rekey naming another key, key refused: unused, nothing used": {
			TenantCheck{Nonce: nonce, PinnedKey: otherPin, Rekey: strings.Repeat("cd", 32), RevivalBlocked: blocked, Revival: revival.Value}, nil, []string{"it names key cdcdcdcdcdcdcdcd"}},
		"both used": {TenantCheck{Nonce: nonce, PinnedKey: otherPin, Rekey: pin, RevivalBlocked: blocked, Revival: revival.Value}, []Override{revival, rekey}, nil},
	} {
		t.Run(name, func(t *testing.T) {
			v := CheckTenant(pe, tc.check)
			if !slices.Equal(v.Used, tc.used) {
				t.Errorf("Used = %v, want %v", v.Used, tc.used)
			}
			if len(v.Unused) != len(tc.unused) {
				t.Fatalf("Unused = %q, want %q", v.Unused, tc.unused)
			}
			for i := range tc.unused {
				if !strings.Contains(v.Unused[i], tc.unused[i]) {
					t.Errorf("Unused[%d] = %q, want it to contain %q", i, v.Unused[i], tc.unused[i])
				}
			}
		})
	}
}

// TestCheckOrCloseRefusedReplacement: a merged Tenant the trust rules refuse fails
// closed whatever it replaces, as a directory that does not build does: the
// Tenant in the cluster is drained and unbound, nothing is issued (no key to
// sign for), nothing is revoked; with no Tenant in the cluster there is
// nothing to drain. An accepted Tenant has no closure.
func TestCheckOrCloseRefusedReplacement(t *testing.T) {
	oldNonce, nonce := crypto.GenerateNonce(), crypto.GenerateNonce()
	pe, pin := peering(t, nonce)
	otherPin := strings.Repeat("ab", 32)
	tenant := func(c authv1beta1.TenantCondition) *authv1beta1.Tenant {
		return &authv1beta1.Tenant{Spec: authv1beta1.TenantSpec{TenantCondition: c, Signature: []byte("old"), CSR: []byte("old")},
			Status: authv1beta1.TenantStatus{AuthParams: &authv1beta1.AuthParams{SignedCRT: []byte("crt")}}}
	}
	bound := tenant(authv1beta1.TenantConditionActive)
	overUsedNonce, _ := peering(t, oldNonce) // re-signed over the nonce the bound Tenant used, rotated since
	blocked := "revoked certificate 1f is valid until 2030-01-01T00:00:00Z"
	for name, tc := range map[string]struct {
		pe      *protocol.Documents
		check   TenantCheck
		current *authv1beta1.Tenant
		// drain, unbind: the closure; closed false: accepted, no closure.
		closed, drain, unbind bool
		why                   string
	}{
		"key changed without the rekey annotation, bound: drain": {pe, TenantCheck{Nonce: nonce, PinnedKey: otherPin}, bound, true, true, true, "is not the key pinned for consumer-1"},
		"rekey annotation for another key, bound: drain": {pe, TenantCheck{Nonce: nonce, PinnedKey: otherPin, Rekey: strings.Repeat("cd", 32)}, bound, true, true, true,
			"is not the key pinned for consumer-1"},
		"re-signed over a used nonce, bound: drain":           {overUsedNonce, TenantCheck{Nonce: nonce}, bound, true, true, true, "tenant signature"},
		"key is not request.yaml's, bound: drain":             {&protocol.Documents{Provider: "provider-a", Consumer: "consumer-1", Tenant: pe.Tenant, Request: overUsedNonce.Request}, TenantCheck{Nonce: nonce}, bound, true, true, true, "request"},
		"revoked certificate unexpired, a Tenant left: drain": {pe, TenantCheck{Nonce: nonce, RevivalBlocked: blocked}, bound, true, true, true, "revoked certificate 1f"},
		"refused, bound and cordoned: drain":                  {pe, TenantCheck{Nonce: nonce, PinnedKey: otherPin}, tenant(authv1beta1.TenantConditionCordoned), true, true, true, "is not the key pinned"},
		"refused, drained already: unbind only":               {pe, TenantCheck{Nonce: nonce, PinnedKey: otherPin}, tenant(authv1beta1.TenantConditionDrained), true, false, true, "is not the key pinned"},
		"refused, applied and not issued yet: drain":          {pe, TenantCheck{Nonce: nonce, PinnedKey: otherPin}, &authv1beta1.Tenant{}, true, true, true, "is not the key pinned"},
		"refused, no Tenant: nothing to drain":                {pe, TenantCheck{Nonce: nonce, PinnedKey: otherPin}, nil, true, false, false, "is not the key pinned"},
		"no nonce, bound: drain":                              {pe, TenantCheck{}, bound, true, true, true, "no nonce was issued"},
		"rekeyed by the admin: issue":                         {pe, TenantCheck{Nonce: nonce, PinnedKey: otherPin, Rekey: pin}, bound, false, false, false, ""},
		"same key, new Tenant: issue":                         {pe, TenantCheck{Nonce: nonce, PinnedKey: pin}, bound, false, false, false, ""},
	} {
		t.Run(name, func(t *testing.T) {
			v, c := CheckOrClose(tc.pe, tc.check, tc.current)
			if (c != nil) != tc.closed {
				t.Fatalf("closure %+v (verdict %+v), want closed %t", c, v, tc.closed)
			}
			if !tc.closed {
				if v.Key == nil || v.Rejected != "" {
					t.Fatalf("accepted Tenant: verdict %+v", v)
				}
				return
			}
			if v.Key != nil || v.Used != nil {
				t.Errorf("a refused Tenant yields a key to sign for (%v) or uses overrides (%v)", v.Key, v.Used)
			}
			if c.Drain != tc.drain || c.Unbind != tc.unbind {
				t.Errorf("drain %t, unbind %t; want %t, %t", c.Drain, c.Unbind, tc.drain, tc.unbind)
			}
			if !strings.HasPrefix(c.Message, "provider-a/consumer-1/tenant.yaml rejected, nothing issued: ") || !strings.Contains(c.Message, tc.why) ||
				!strings.Contains(c.Message, "failing closed: nothing issued or renewed until a valid tenant.yaml is merged") ||
				strings.HasSuffix(c.Message, "; tenant drained: RBAC removed") != tc.unbind {
				t.Errorf("message %q", c.Message)
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
