package provider

import (
	gocrypto "crypto"
	"crypto/x509"
	"errors"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
)

// TestNonceUsed: the nonce is rotated exactly when the applied Tenant's
// signature verifies against it with the Tenant's key: a nonce is used once.
func TestNonceUsed(t *testing.T) {
	key, _ := crypto.GenerateKey(crypto.Ed25519)
	other, _ := crypto.GenerateKey(crypto.Ed25519)
	nonce, next := crypto.GenerateNonce(), crypto.GenerateNonce()
	// tenant is a Tenant signed over nonce by signer, naming the key of owner.
	tenant := func(signer, owner gocrypto.Signer) *authv1beta1.Tenant {
		tn, err := protocol.NewTenant("consumer-1", signer, nonce)
		if err != nil {
			t.Fatal(err)
		}
		if tn.Spec.PublicKey, err = crypto.MarshalPublicKeyPEM(owner.Public()); err != nil {
			t.Fatal(err)
		}
		return tn
	}
	broken := tenant(key, key)
	broken.Spec.PublicKey = []byte("not a key")
	for name, tc := range map[string]struct {
		tenant *authv1beta1.Tenant
		nonce  string
		want   bool
	}{
		"signed over the current nonce: used, rotate":          {tenant(key, key), nonce, true},
		"the nonce was rotated already: keep":                  {tenant(key, key), next, false},
		"no nonce":                                             {tenant(key, key), "", false},
		"signature by another key than the Tenant's: not used": {tenant(other, key), nonce, false},
		"the Tenant's key is unreadable: not used":             {broken, nonce, false},
	} {
		t.Run(name, func(t *testing.T) {
			if got := NonceUsed(tc.tenant, tc.nonce); got != tc.want {
				t.Errorf("NonceUsed = %t, want %t", got, tc.want)
			}
		})
	}
}

func TestStanding(t *testing.T) {
	cert := &x509.Certificate{SerialNumber: big.NewInt(0x2a), NotAfter: time.Date(2027, 1, 2, 3, 4, 5, 0, time.UTC)}
	for condition, want := range map[authv1beta1.TenantCondition]struct {
		phase   gitpeerv1alpha1.PeeringPhase
		message string
	}{
		authv1beta1.TenantConditionActive:   {gitpeerv1alpha1.PhaseIssued, "certificate 2a valid until 2027-01-02T03:04:05Z"},
		"":                                  {gitpeerv1alpha1.PhaseIssued, "certificate 2a valid until 2027-01-02T03:04:05Z"},
		authv1beta1.TenantConditionCordoned: {gitpeerv1alpha1.PhaseCordoned, "tenant cordoned"},
		authv1beta1.TenantConditionDrained:  {gitpeerv1alpha1.PhaseDrained, "tenant drained: RBAC removed"},
	} {
		t.Run(string(condition), func(t *testing.T) {
			if phase, message := Standing(condition, cert); phase != want.phase || message != want.message {
				t.Errorf("Standing = %s, %q; want %s, %q", phase, message, want.phase, want.message)
			}
		})
	}
}

// TestPlanBindings: the consumer is bound, as the user of its certificate's
// CN, to the configured role only; a drained Tenant loses every binding the
// PeeringRepository made, a cordoned one keeps it.
func TestPlanBindings(t *testing.T) {
	const role = "liqo-tenant"
	current, previous := authv1beta1.RoleBindingName(role), authv1beta1.RoleBindingName("old-role")
	for name, tc := range map[string]struct {
		owned     []string
		condition authv1beta1.TenantCondition
		delete    []string
		bind      bool
	}{
		"none yet: bind":                           {nil, authv1beta1.TenantConditionActive, nil, true},
		"bound: keep":                              {[]string{current}, authv1beta1.TenantConditionActive, nil, true},
		"role changed: unbind the old, bind":       {[]string{previous}, authv1beta1.TenantConditionActive, []string{previous}, true},
		"both: unbind the old":                     {[]string{previous, current}, "", []string{previous}, true},
		"cordoned keeps its binding":               {[]string{current}, authv1beta1.TenantConditionCordoned, nil, true},
		"drained removes every binding":            {[]string{previous, current, "other"}, authv1beta1.TenantConditionDrained, []string{previous, current, "other"}, false},
		"drained with nothing bound binds nothing": {nil, authv1beta1.TenantConditionDrained, nil, false},
	} {
		t.Run(name, func(t *testing.T) {
			b := PlanBindings(tc.owned, "consumer-1", role, tc.condition)
			if !slices.Equal(b.Delete, tc.delete) {
				t.Errorf("delete %v, want %v", b.Delete, tc.delete)
			}
			for _, n := range tc.owned {
				if b.Deletes(n) != slices.Contains(tc.delete, n) {
					t.Errorf("Deletes(%q) = %t", n, b.Deletes(n))
				}
			}
			if (b.Bind != nil) != tc.bind {
				t.Fatalf("bind %v, want %t", b.Bind, tc.bind)
			}
			if b.Bind == nil {
				return
			}
			want := rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "consumer-1"}
			if b.Bind.Name != current || b.Bind.RoleRef != (rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role}) ||
				len(b.Bind.Subjects) != 1 || b.Bind.Subjects[0] != want {
				t.Errorf("binding %+v", b.Bind)
			}
		})
	}
}

// TestFailClose: a directory that does not build drains an issued Tenant and
// removes its bindings; with no Tenant there is nothing to drain.
func TestFailClose(t *testing.T) {
	buildFailed := errors.New("kustomize build: boom")
	tenant := func(c authv1beta1.TenantCondition) *authv1beta1.Tenant {
		return &authv1beta1.Tenant{Spec: authv1beta1.TenantSpec{TenantCondition: c}}
	}
	for name, tc := range map[string]struct {
		tenant        *authv1beta1.Tenant
		drain, unbind bool
		drainedNote   bool
	}{
		"no Tenant: nothing to drain":    {nil, false, false, false},
		"active Tenant: drain, unbind":   {tenant(authv1beta1.TenantConditionActive), true, true, true},
		"cordoned Tenant: drain, unbind": {tenant(authv1beta1.TenantConditionCordoned), true, true, true},
		"drained already: unbind only":   {tenant(authv1beta1.TenantConditionDrained), false, true, true},
	} {
		t.Run(name, func(t *testing.T) {
			c := FailClose(buildFailed, tc.tenant)
			if c.Drain != tc.drain || c.Unbind != tc.unbind {
				t.Errorf("drain %t, unbind %t; want %t, %t", c.Drain, c.Unbind, tc.drain, tc.unbind)
			}
			if !strings.HasPrefix(c.Message, "kustomize build: boom; failing closed: nothing issued or renewed") ||
				strings.HasSuffix(c.Message, "; tenant drained: RBAC removed") != tc.drainedNote {
				t.Errorf("message %q", c.Message)
			}
		})
	}
}

func TestPending(t *testing.T) {
	issued := &authv1beta1.Tenant{Status: authv1beta1.TenantStatus{AuthParams: &authv1beta1.AuthParams{}}}
	for name, tc := range map[string]struct {
		answered bool
		tenant   *authv1beta1.Tenant
		want     bool
	}{
		"answered, no Tenant":         {true, nil, true},
		"answered, Tenant not issued": {true, &authv1beta1.Tenant{}, true},
		"answered, issued":            {true, issued, false},
		"namespace not ours":          {false, nil, false},
	} {
		t.Run(name, func(t *testing.T) {
			if got := Pending(tc.answered, tc.tenant); got != tc.want {
				t.Errorf("Pending = %t, want %t", got, tc.want)
			}
		})
	}
}

// TestFirstIdentity: the commit of the first certificate of a key (no
// identity.yaml, or one for another key: a revival, a rekey) names the
// overrides its Tenant was applied under; a renewal's does not.
func TestFirstIdentity(t *testing.T) {
	key, _ := crypto.GenerateKey(crypto.Ed25519)
	other, _ := crypto.GenerateKey(crypto.Ed25519)
	cert, err := crypto.ParseCertificatePEM(liqoCert(t, key, nil))
	if err != nil {
		t.Fatal(err)
	}
	identity := func(k gocrypto.Signer) *authv1beta1.Identity {
		return &authv1beta1.Identity{Spec: authv1beta1.IdentitySpec{AuthParams: authv1beta1.AuthParams{SignedCRT: liqoCert(t, k, nil)}}}
	}
	for name, tc := range map[string]struct {
		published *authv1beta1.Identity
		want      bool
	}{
		"no identity.yaml (first issuance, revival)": {nil, true},
		"identity.yaml for another key (rekey)":      {identity(other), true},
		"identity.yaml for the same key (renewal)":   {identity(key), false},
		"identity.yaml unreadable":                   {&authv1beta1.Identity{}, true},
	} {
		t.Run(name, func(t *testing.T) {
			if got := FirstIdentity(tc.published, cert, "consumer-1"); got != tc.want {
				t.Errorf("FirstIdentity = %t, want %t", got, tc.want)
			}
		})
	}
}
