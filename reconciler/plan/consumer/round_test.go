package consumer

import (
	"bytes"
	gocrypto "crypto"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1/documents"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/vocabulary"
)

const (
	tProvider  = "provider"
	tConsumer  = "consumer" // the CN of certificate()
	tAPIServer = "https://provider:6443"
)

// kinds lists the types of a plan's actions, in order.
func kinds(p Plan) []string {
	out := make([]string, len(p.Actions))
	for i, a := range p.Actions {
		out[i] = strings.TrimPrefix(fmt.Sprintf("%T", a), "consumer.")
	}
	return out
}

// find returns the plan's first action of type A.
func find[A Action](t *testing.T, p Plan) A {
	t.Helper()
	for _, a := range p.Actions {
		if got, ok := a.(A); ok {
			return got
		}
	}
	var zero A
	t.Fatalf("plan %v has no %T", kinds(p), zero)
	return zero
}

// peering is the consumer's view of one peering at each protocol step: its
// key, the provider's nonce and CA, and builders of the documents and
// cluster objects a round observes.
type peering struct {
	t     *testing.T
	key   gocrypto.Signer
	nonce string
	ca    []byte
	now   time.Time
}

func newPeering(t *testing.T) *peering {
	return &peering{t: t, key: newKey(t), nonce: crypto.GenerateNonce(), ca: caPEM(t, "provider", true), now: time.Now()}
}

// snapshot is a standalone consumer with review branches that anchors the
// provider by its CA hash, at the given documents, holding nothing yet.
func (p *peering) snapshot(pe protocol.Documents) Snapshot {
	pe.Provider, pe.Consumer = tProvider, tConsumer
	return Snapshot{
		Docs: &pe, Key: p.key, Mode: gitpeerv1alpha1.PeeringModeStandalone, ModeSummary: "standalone",
		Spec: &gitpeerv1alpha1.ConsumerSpec{}, Branch: "main", BranchMoved: true,
		Anchor: Anchor{Hashes: []string{hashOf(p.t, p.ca)}},
	}
}

func (p *peering) request() *documents.PeeringRequest { return &documents.PeeringRequest{} }

func (p *peering) nonceDoc() *documents.Nonce {
	return &documents.Nonce{Spec: documents.NonceSpec{Nonce: p.nonce}}
}

// tenant is tenant.yaml signed by key for the peering's nonce.
func (p *peering) tenant(key gocrypto.Signer) *authv1beta1.Tenant {
	tn, err := protocol.NewTenant(tConsumer, key, p.nonce)
	if err != nil {
		p.t.Fatal(err)
	}
	return tn
}

// identity is identity.yaml for the consumer's key, with the provider's CA.
func (p *peering) identity(serial int64) *authv1beta1.Identity {
	return &authv1beta1.Identity{ObjectMeta: metav1.ObjectMeta{Name: authv1beta1.ControlPlaneIdentityName(tProvider)},
		Spec: authv1beta1.IdentitySpec{ClusterID: tProvider, Type: authv1beta1.ControlPlaneIdentityType,
			AuthParams: authv1beta1.AuthParams{APIServer: tAPIServer, CA: p.ca, SignedCRT: certificate(p.t, p.key, p.now.Add(-time.Minute), serial)}}}
}

// issued is the peering with identity.yaml merged beside the consumer's own tenant.yaml.
func (p *peering) issued() protocol.Documents {
	return protocol.Documents{Request: p.request(), Nonce: p.nonceDoc(), Tenant: p.tenant(p.key), Identity: p.identity(1)}
}

func signedNonce(nonce string, signature []byte, proposed bool) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: authv1beta1.SignedNonceSecretName},
		Data: map[string][]byte{authv1beta1.NonceSecretField: []byte(nonce)}}
	if signature != nil {
		s.Data[authv1beta1.SignedNonceSecretField] = signature
	}
	if proposed {
		metav1.SetMetaDataAnnotation(&s.ObjectMeta, vocabulary.ProposedAnnotation, "branch x")
	}
	return s
}

type planCase struct {
	snap    Snapshot
	actions []string
	phase   gitpeerv1alpha1.PeeringPhase
	message string // a part of the outcome's message
	check   func(t *testing.T, p Plan)
}

func runPlanCases(t *testing.T, now time.Time, cases map[string]planCase) {
	t.Helper()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := PlanPeering(tc.snap, now)
			if p.Outcome.Err != nil {
				t.Fatalf("PlanPeering failed: %v", p.Outcome.Err)
			}
			if got := kinds(p); !slices.Equal(got, tc.actions) {
				t.Errorf("actions = %v, want %v", got, tc.actions)
			}
			if p.Outcome.Phase != tc.phase || !strings.Contains(p.Outcome.Message, tc.message) {
				t.Errorf("outcome = %s %q, want %s with %q", p.Outcome.Phase, p.Outcome.Message, tc.phase, tc.message)
			}
			if tc.check != nil {
				tc.check(t, p)
			}
		})
	}
}

// TestPlanRequest: the steps before the provider's nonce, and a revocation.
func TestPlanRequest(t *testing.T) {
	p := newPeering(t)
	revoked := &Namespace{Revoked: true, RevokedAt: "2026-11-28T10:00:00Z"}
	with := func(s Snapshot, f func(*Snapshot)) Snapshot { f(&s); return s }
	none := p.snapshot(protocol.Documents{})
	direct := with(none, func(s *Snapshot) { s.Spec = &gitpeerv1alpha1.ConsumerSpec{Direct: true} })
	runPlanCases(t, p.now, map[string]planCase{
		"nothing yet: request.yaml pushed to the review branch": {snap: none, actions: []string{"PushReview"},
			phase: gitpeerv1alpha1.PhaseRequested, message: "request.yaml proposed on branch gitpeer/provider/consumer; waiting for someone to merge it into main",
			check: func(t *testing.T, pl Plan) {
				push := find[PushReview](t, pl)
				if push.Branch != "gitpeer/provider/consumer" || push.Change.Path != "provider/consumer/request.yaml" || push.Message.Action != vocabulary.ActionRequest {
					t.Errorf("push = %s %s %s", push.Branch, push.Change.Path, push.Message.Action)
				}
				if len(push.Pushed) != 1 || push.Pushed[0].Reason != Requested {
					t.Errorf("events of the push = %v", push.Pushed)
				}
			}},
		"direct mode: request.yaml staged for the round's commit, announced with a Warning": {snap: direct, actions: []string{"Stage"},
			phase: gitpeerv1alpha1.PhaseRequested, message: "request.yaml committed to the branch (direct mode",
			check: func(t *testing.T, pl Plan) {
				if got := find[Stage](t, pl).Pushed; len(got) != 2 || got[0].Reason != Requested || got[1].Reason != DirectMode {
					t.Errorf("events of the commit = %v", got)
				}
			}},
		"requested, no nonce yet: wait": {snap: p.snapshot(protocol.Documents{Request: p.request()}), actions: []string{},
			phase: gitpeerv1alpha1.PhaseRequested, message: "waiting for the provider's nonce"},
		"revoked: no request on its own": {snap: with(none, func(s *Snapshot) { s.Namespace = revoked }), actions: []string{},
			phase: gitpeerv1alpha1.PhaseRevoked, message: "identity revoked by provider provider at 2026-11-28T10:00:00Z; not requesting again on its own"},
		"revoked, an admin asks again: clear the mark, consume the annotation, request": {
			snap:    with(none, func(s *Snapshot) { s.Namespace, s.RequestAgain = revoked, true }),
			actions: []string{"ClearRevoked", "ConsumeAnnotation", "PushReview"}, phase: gitpeerv1alpha1.PhaseRequested, message: "request.yaml proposed",
			check: func(t *testing.T, pl Plan) {
				if got := find[ConsumeAnnotation](t, pl).Key; got != gitpeerv1alpha1.RequestAgainAnnotation {
					t.Errorf("consumed %s", got)
				}
			}},
		"identity.yaml left the branch: forget the provider, mark the revocation": {
			snap:    with(p.snapshot(protocol.Documents{Request: p.request(), Nonce: p.nonceDoc()}), func(s *Snapshot) { s.Identity = p.identity(1) }),
			actions: []string{"ForgetProvider", "NoteCertificate", "MarkRevoked", "Event"}, phase: gitpeerv1alpha1.PhaseRevoked, message: "identity.yaml removed",
			check: func(t *testing.T, pl Plan) {
				if got := find[MarkRevoked](t, pl).At; !got.Equal(p.now) {
					t.Errorf("revoked at %s", got)
				}
				if got := find[NoteCertificate](t, pl).Expiry; got != 0 {
					t.Errorf("certificate noted %d after the revocation", got)
				}
			}},
		"invalid identity.yaml: the current Identity is kept": {
			snap:    with(p.snapshot(protocol.Documents{Request: p.request(), Invalid: map[vocabulary.FileKind]error{vocabulary.IdentityFile: protocol.ErrInvalid}}), func(s *Snapshot) { s.Identity = p.identity(1) }),
			actions: []string{}, phase: gitpeerv1alpha1.PhaseFailed, message: "skipped: the current Identity is kept"},
	})
}

// TestPlanProposeTenant: the consumer signs the provider's nonce and proposes
// tenant.yaml once per nonce; the signed-nonce Secret records the push.
func TestPlanProposeTenant(t *testing.T) {
	p := newPeering(t)
	with := func(s Snapshot, f func(*Snapshot)) Snapshot { f(&s); return s }
	offered := p.snapshot(protocol.Documents{Request: p.request(), Nonce: p.nonceDoc()})
	mine := p.tenant(p.key)
	merged := p.snapshot(protocol.Documents{Request: p.request(), Nonce: p.nonceDoc(), Tenant: mine})
	direct := &gitpeerv1alpha1.ConsumerSpec{Direct: true}
	runPlanCases(t, p.now, map[string]planCase{
		"nonce offered: push tenant.yaml for review, then record it": {snap: offered,
			actions: []string{"PushReview", "EnsureNamespace", "MarkProposed", "Event"}, phase: gitpeerv1alpha1.PhaseAwaitingApproval,
			message: "tenant.yaml proposed on branch gitpeer/provider/consumer; waiting for approval",
			check: func(t *testing.T, pl Plan) {
				mark := find[MarkProposed](t, pl)
				if mark.Nonce != p.nonce || crypto.VerifyNonceSignature(p.key.Public(), p.nonce, mark.Signature) != nil {
					t.Errorf("mark = %+v", mark)
				}
				if push := find[PushReview](t, pl); push.Change.Path != "provider/consumer/tenant.yaml" || push.Message.Action != vocabulary.ActionProposeTenant {
					t.Errorf("push = %s %s", push.Change.Path, push.Message.Action)
				}
			}},
		"proposed before (the record holds this nonce): wait": {
			snap:    with(offered, func(s *Snapshot) { s.SignedNonce = signedNonce(p.nonce, mine.Spec.Signature, false) }),
			actions: []string{}, phase: gitpeerv1alpha1.PhaseAwaitingApproval, message: "waiting for approval"},
		"the record holds an older nonce: propose again": {
			snap:    with(offered, func(s *Snapshot) { s.SignedNonce = signedNonce("older", nil, false) }),
			actions: []string{"PushReview", "EnsureNamespace", "MarkProposed", "Event"}, phase: gitpeerv1alpha1.PhaseAwaitingApproval},
		"quiet round: the last one proposed it": {snap: with(offered, func(s *Snapshot) { s.Quiet = true }),
			actions: []string{}, phase: gitpeerv1alpha1.PhaseAwaitingApproval, message: "waiting for approval"},
		"direct mode: tenant.yaml staged; the next round records it": {snap: with(offered, func(s *Snapshot) { s.Spec = direct }),
			actions: []string{"Stage"}, phase: gitpeerv1alpha1.PhaseAwaitingApproval, message: "tenant.yaml proposed on the branch (direct mode",
			check: func(t *testing.T, pl Plan) {
				if got := find[Stage](t, pl).Pushed; len(got) != 2 || got[0].Reason != DirectMode || got[1].Reason != TenantProposed {
					t.Errorf("events of the commit = %v", got)
				}
			}},
		"tenant.yaml merged: wait for identity.yaml": {snap: merged, actions: []string{},
			phase: gitpeerv1alpha1.PhaseAwaitingApproval, message: "tenant.yaml merged; waiting for identity.yaml"},
		"direct mode, tenant.yaml on the branch: record the push": {snap: with(merged, func(s *Snapshot) { s.Spec = direct }),
			actions: []string{"EnsureNamespace", "MarkProposed"}, phase: gitpeerv1alpha1.PhaseAwaitingApproval, message: "tenant.yaml merged"},
		"direct mode, recorded: nothing to write": {
			snap:    with(merged, func(s *Snapshot) { s.Spec, s.SignedNonce = direct, signedNonce(p.nonce, mine.Spec.Signature, false) }),
			actions: []string{}, phase: gitpeerv1alpha1.PhaseAwaitingApproval, message: "tenant.yaml merged"},
		"another key's tenant.yaml on the branch: propose this cluster's": {
			snap:    p.snapshot(protocol.Documents{Request: p.request(), Nonce: p.nonceDoc(), Tenant: p.tenant(newKey(t))}),
			actions: []string{"PushReview", "EnsureNamespace", "MarkProposed", "Event"}, phase: gitpeerv1alpha1.PhaseAwaitingApproval},
	})
	t.Run("a review branch template that does not render fails the peering", func(t *testing.T) {
		bad := with(offered, func(s *Snapshot) { s.Spec = &gitpeerv1alpha1.ConsumerSpec{ReviewBranchTemplate: "{{.Nope}}"} })
		if pl := PlanPeering(bad, p.now); pl.Outcome.Err == nil || !strings.Contains(pl.Outcome.Err.Error(), "reviewBranchTemplate") || len(pl.Actions) != 0 {
			t.Errorf("plan = %v, %v", kinds(pl), pl.Outcome.Err)
		}
	})
}

// TestPlanLiqoTenant: in Liqo mode, Liqo's nonce signer signs the nonce
// through the liqo-signed-nonce Secret; the round comes back while it waits.
func TestPlanLiqoTenant(t *testing.T) {
	p := newPeering(t)
	with := func(s Snapshot, f func(*Snapshot)) Snapshot { f(&s); return s }
	liqo := func(s *Snapshot) { s.Liqo, s.Mode = true, gitpeerv1alpha1.PeeringModeLiqo }
	offered := with(p.snapshot(protocol.Documents{Request: p.request(), Nonce: p.nonceDoc()}), liqo)
	good := sign(t, p.key, p.nonce)
	recheck := func(t *testing.T, pl Plan) {
		if got := find[RecheckAt](t, pl).At; !got.Equal(p.now.Add(LiqoRecheck)) {
			t.Errorf("recheck at %s", got)
		}
	}
	runPlanCases(t, p.now, map[string]planCase{
		"no Secret: write the nonce for Liqo's signer": {snap: offered, actions: []string{"EnsureNamespace", "PutNonce", "RecheckAt"},
			phase: gitpeerv1alpha1.PhaseRequested, message: "waiting for Liqo's nonce signer", check: recheck},
		"not signed yet: come back": {snap: with(offered, func(s *Snapshot) { s.SignedNonce = signedNonce(p.nonce, nil, false) }),
			actions: []string{"RecheckAt"}, phase: gitpeerv1alpha1.PhaseRequested, message: "waiting for Liqo's nonce signer", check: recheck},
		"signed by another key: never used": {
			snap:    with(offered, func(s *Snapshot) { s.SignedNonce = signedNonce(p.nonce, sign(t, newKey(t), p.nonce), false) }),
			actions: []string{"RecheckAt"}, phase: gitpeerv1alpha1.PhaseRequested},
		"signed: push tenant.yaml with Liqo's signature, then mark the Secret": {
			snap:    with(offered, func(s *Snapshot) { s.SignedNonce = signedNonce(p.nonce, good, false) }),
			actions: []string{"PushReview", "MarkLiqoProposed", "Event"}, phase: gitpeerv1alpha1.PhaseAwaitingApproval, message: "tenant.yaml proposed on branch",
			check: func(t *testing.T, pl Plan) {
				if !strings.Contains(string(find[PushReview](t, pl).Change.Content), base64.StdEncoding.EncodeToString(good)) {
					t.Error("tenant.yaml does not carry the signature of Liqo's nonce signer")
				}
				if m := find[MarkLiqoProposed](t, pl); m.Nonce != p.nonce || m.Where != "branch gitpeer/provider/consumer" {
					t.Errorf("mark = %+v", m)
				}
			}},
		"proposed for this nonce: wait": {snap: with(offered, func(s *Snapshot) { s.SignedNonce = signedNonce(p.nonce, good, true) }),
			actions: []string{}, phase: gitpeerv1alpha1.PhaseAwaitingApproval, message: "waiting for approval"},
		"merged: wait for identity.yaml": {
			snap:    with(p.snapshot(protocol.Documents{Request: p.request(), Nonce: p.nonceDoc(), Tenant: p.tenant(p.key)}), liqo),
			actions: []string{}, phase: gitpeerv1alpha1.PhaseAwaitingApproval, message: "tenant.yaml merged"},
		"direct mode, merged: mark the Secret from the branch": {
			snap: with(p.snapshot(protocol.Documents{Request: p.request(), Nonce: p.nonceDoc(), Tenant: p.tenant(p.key)}), func(s *Snapshot) {
				liqo(s)
				s.Spec, s.SignedNonce = &gitpeerv1alpha1.ConsumerSpec{Direct: true}, signedNonce(p.nonce, good, false)
			}),
			actions: []string{"MarkLiqoProposed"}, phase: gitpeerv1alpha1.PhaseAwaitingApproval, message: "tenant.yaml merged"},
	})
}

// TestPlanMode: a peering made in another mode is left alone unless a person
// accepted the switch; a revocation goes through either way.
func TestPlanMode(t *testing.T) {
	p := newPeering(t)
	with := func(s Snapshot, f func(*Snapshot)) Snapshot { f(&s); return s }
	madeInLiqo := func(s *Snapshot) {
		s.Namespace = &Namespace{Mode: gitpeerv1alpha1.PeeringModeLiqo}
	}
	waiting := with(p.snapshot(protocol.Documents{Request: p.request()}), madeInLiqo)
	runPlanCases(t, p.now, map[string]planCase{
		"made in Liqo mode, now standalone: left alone": {snap: waiting, actions: []string{"Log", "Event"},
			phase: gitpeerv1alpha1.PhaseFailed, message: "was made in liqo mode but this cluster now runs in standalone mode",
			check: func(t *testing.T, pl Plan) {
				if pl.Outcome.Reason != ModeChanged || find[Event](t, pl).Reason != ModeChanged {
					t.Errorf("reason %v", pl.Outcome.Reason)
				}
			}},
		"switch accepted: recorded, then the step": {
			snap:    with(waiting, func(s *Snapshot) { s.SwitchAccepted = gitpeerv1alpha1.PeeringModeStandalone }),
			actions: []string{"RecordMode", "ConsumeAnnotation", "Log", "Event"}, phase: gitpeerv1alpha1.PhaseRequested, message: "waiting for the provider's nonce",
			check: func(t *testing.T, pl Plan) {
				if got := find[ConsumeAnnotation](t, pl).Key; got != gitpeerv1alpha1.SwitchModeAnnotationPrefix+tProvider {
					t.Errorf("consumed %s", got)
				}
			}},
		"identity.yaml left the branch: dropped whatever the mode": {
			snap:    with(p.snapshot(protocol.Documents{}), func(s *Snapshot) { madeInLiqo(s); s.Identity = p.identity(1) }),
			actions: []string{"ForgetProvider", "NoteCertificate", "MarkRevoked", "Event"}, phase: gitpeerv1alpha1.PhaseRevoked},
	})
}

// TestPlanIdentityRefusals: identity.yaml is refused, with nothing written
// but the tenant namespace once the documents pass, unless this cluster
// asked for it, it is for this cluster's key, it matches the provider's
// terms and an anchor (or the first-use pin) vouches for its API server.
func TestPlanIdentityRefusals(t *testing.T) {
	p := newPeering(t)
	with := func(pe protocol.Documents, f func(*Snapshot)) Snapshot { s := p.snapshot(pe); f(&s); return s }
	noop := func(*Snapshot) {}
	stranger := p.issued()
	stranger.Tenant = p.tenant(newKey(t))
	noTenant := p.issued()
	noTenant.Tenant = nil
	otherKey := p.issued()
	otherKey.Identity.Spec.AuthParams.SignedCRT = certificate(t, newKey(t), p.now.Add(-time.Minute), 1)
	expired := p.issued()
	expired.Identity.Spec.AuthParams.SignedCRT = certificate(t, p.key, p.now.Add(-2*time.Hour), 1)
	terms := p.issued()
	terms.Terms = &documents.ProviderTerms{Spec: documents.ProviderTermsSpec{APIServer: "https://elsewhere:6443"}}
	badTerms := p.issued()
	badTerms.TermsErr = errors.New("terms.yaml: invalid")
	rejected := func(why string) func(t *testing.T, pl Plan) {
		return func(t *testing.T, pl Plan) {
			t.Helper()
			if !strings.Contains(pl.Outcome.Message, "provider/consumer/identity.yaml rejected: ") || !strings.Contains(pl.Outcome.Message, why) {
				t.Errorf("message %q, want %q", pl.Outcome.Message, why)
			}
			if e := find[Event](t, pl); e.Reason != Rejected || e.About != "provider/consumer/identity.yaml" {
				t.Errorf("event %+v", e)
			}
		}
	}
	failed := gitpeerv1alpha1.PhaseFailed
	runPlanCases(t, p.now, map[string]planCase{
		"beside another key's tenant.yaml": {snap: with(stranger, noop), actions: []string{"Log", "Event"}, phase: failed, check: rejected("this cluster did not ask")},
		"no tenant.yaml beside it":         {snap: with(noTenant, noop), actions: []string{"Log", "Event"}, phase: failed, check: rejected("no valid tenant.yaml")},
		"certificate of another key":       {snap: with(otherKey, noop), actions: []string{"Log", "Event"}, phase: failed, check: rejected("identity certificate")},
		"expired certificate":              {snap: with(expired, noop), actions: []string{"Log", "Event"}, phase: failed, check: rejected("identity certificate")},
		"not the API server of the terms":  {snap: with(terms, noop), actions: []string{"Log", "Event"}, phase: failed, check: rejected("elsewhere")},
		"terms that cannot be read":        {snap: with(badTerms, noop), actions: []string{"Log", "Event"}, phase: failed, check: rejected("cannot vouch")},
		"no anchor, no trust on first use": {snap: with(p.issued(), func(s *Snapshot) { s.Anchor = Anchor{} }),
			actions: []string{"EnsureNamespace", "Log", "Event"}, phase: failed, check: rejected("spec.consumer.trustedCAs has no entry")},
		"anchored by another CA's hash": {snap: with(p.issued(), func(s *Snapshot) { s.Anchor = Anchor{Hashes: []string{hashOf(t, caPEM(t, "other", true))}} }),
			actions: []string{"EnsureNamespace", "Log", "Event"}, phase: failed, check: rejected("not one of the caCertHashes")},
		"the trusted CA Secret cannot be read": {snap: with(p.issued(), func(s *Snapshot) { s.AnchorErr = errors.New("trusted CA of provider provider: not found") }),
			actions: []string{"EnsureNamespace", "Log", "Event"}, phase: failed, check: rejected("trusted CA of provider provider: not found")},
		"first use, another pin": {snap: with(p.issued(), func(s *Snapshot) {
			s.Anchor = Anchor{FirstUse: true}
			s.Namespace = &Namespace{Annotations: map[string]string{vocabulary.PinnedProviderAnnotation: ProviderPin("https://before:6443", p.ca)}}
		}), actions: []string{"EnsureNamespace", "Log", "Event"}, phase: failed, check: rejected("pin mismatch")},
	})
}

// TestPlanApplyIdentity: a valid identity.yaml becomes a working kubeconfig,
// proven before anything is pinned or written.
func TestPlanApplyIdentity(t *testing.T) {
	p := newPeering(t)
	with := func(f func(*Snapshot)) Snapshot { s := p.snapshot(p.issued()); f(&s); return s }
	kubeconfig := func() []byte {
		id := p.issued().Identity
		data, err := crypto.BuildKubeconfig(crypto.KubeconfigParams{ProviderClusterID: tProvider, IdentityName: id.Name, APIServer: tAPIServer,
			CA: p.ca, Certificate: id.Spec.AuthParams.SignedCRT, Key: p.key})
		if err != nil {
			t.Fatal(err)
		}
		return data
	}()
	ready := gitpeerv1alpha1.PhaseReady
	runPlanCases(t, p.now, map[string]planCase{
		"anchored: prove, then write the Identity and its kubeconfig": {snap: with(func(*Snapshot) {}),
			actions: []string{"EnsureNamespace", "NoteCertificate", "Prove", "WriteIdentity"}, phase: ready,
			message: "kubeconfig Secret liqo-tenant-provider/kubeconfig-controlplane-provider works (certificate 1, expires",
			check: func(t *testing.T, pl Plan) {
				prove, write := find[Prove](t, pl), find[WriteIdentity](t, pl)
				if prove.User != tConsumer || string(prove.Kubeconfig) != string(kubeconfig) || string(write.Kubeconfig) != string(kubeconfig) {
					t.Error("the proof and the write are not of the kubeconfig built from identity.yaml")
				}
				if strings.Contains(pl.Outcome.Message, "first use") {
					t.Errorf("anchored peering reported as first use: %s", pl.Outcome.Message)
				}
			}},
		"same kubeconfig, same commit: not proven again": {snap: with(func(s *Snapshot) { s.Kubeconfig, s.BranchMoved = kubeconfig, false }),
			actions: []string{"EnsureNamespace", "NoteCertificate", "WriteIdentity"}, phase: ready},
		"same kubeconfig, the branch moved: proven again": {snap: with(func(s *Snapshot) { s.Kubeconfig = kubeconfig }),
			actions: []string{"EnsureNamespace", "NoteCertificate", "Prove", "WriteIdentity"}, phase: ready},
		"quiet round: the last one wrote it": {snap: with(func(s *Snapshot) { s.Quiet = true }),
			actions: []string{"EnsureNamespace", "NoteCertificate"}, phase: ready},
		"trust on first use: pinned after the proof, with a Warning": {snap: with(func(s *Snapshot) { s.Anchor = Anchor{FirstUse: true} }),
			actions: []string{"EnsureNamespace", "NoteCertificate", "Prove", "PinProvider", "Log", "Event", "WriteIdentity"}, phase: ready,
			message: "trusted on first use",
			check: func(t *testing.T, pl Plan) {
				if got := find[PinProvider](t, pl).Pin; got != ProviderPin(tAPIServer, p.ca) {
					t.Errorf("pin %s", got)
				}
				if e := find[Event](t, pl); e.Reason != TrustedOnFirstUse {
					t.Errorf("event %+v", e)
				}
			}},
		"trust on first use, pinned before: nothing to pin": {snap: with(func(s *Snapshot) {
			s.Anchor = Anchor{FirstUse: true}
			s.Namespace = &Namespace{Annotations: map[string]string{vocabulary.PinnedProviderAnnotation: ProviderPin(tAPIServer, p.ca)}}
		}), actions: []string{"EnsureNamespace", "NoteCertificate", "Prove", "WriteIdentity"}, phase: ready, message: "trusted on first use"},
	})
	t.Run("proof failures name the provider and what it answered", func(t *testing.T) {
		prove := Prove{Provider: tProvider, User: tConsumer}
		if got := prove.Failed("", errors.New("connection refused")); got != "kubeconfig for provider does not work yet, kept the current one: connection refused" {
			t.Error(got)
		}
		if got := prove.Failed("intruder", nil); got != `provider provider authenticates this kubeconfig as "intruder", not "consumer"; kept the current one` {
			t.Error(got)
		}
	})
}

// TestPlanLiqoIdentity: in Liqo mode the consumer applies the Identity
// unless Liqo renewed it, waits for Liqo's kubeconfig and proves each new one once.
func TestPlanLiqoIdentity(t *testing.T) {
	p := newPeering(t)
	id := p.issued().Identity
	applied := ParamsDigest(&id.Spec) // what the consumer last wrote
	inCluster := func(serial int64, notBefore time.Time, ref bool) *authv1beta1.Identity {
		c := id.DeepCopy()
		c.Spec.AuthParams.SignedCRT = certificate(t, p.key, notBefore, serial)
		metav1.SetMetaDataAnnotation(&c.ObjectMeta, vocabulary.IdentityParamsAnnotation, applied)
		if ref {
			c.Status.KubeconfigSecretRef = &corev1.LocalObjectReference{Name: authv1beta1.KubeconfigSecretName(id.Name)}
		}
		return c
	}
	liqoSecretFor := func(cert []byte, apiServer string) *corev1.Secret {
		data, err := crypto.BuildKubeconfig(crypto.KubeconfigParams{ProviderClusterID: tProvider, IdentityName: id.Name, APIServer: apiServer, CA: id.Spec.AuthParams.CA, Certificate: cert, Key: p.key})
		if err != nil {
			t.Fatal(err)
		}
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: authv1beta1.KubeconfigSecretName(id.Name)}, Data: map[string][]byte{authv1beta1.KubeconfigSecretField: data}}
	}
	liqoSecret := func(cert []byte) *corev1.Secret { return liqoSecretFor(cert, tAPIServer) }
	with := func(f func(*Snapshot)) Snapshot {
		s := p.snapshot(p.issued())
		s.Liqo, s.Mode = true, gitpeerv1alpha1.PeeringModeLiqo
		f(&s)
		return s
	}
	current := id.DeepCopy()
	metav1.SetMetaDataAnnotation(&current.ObjectMeta, vocabulary.IdentityParamsAnnotation, applied)
	current.Status.KubeconfigSecretRef = &corev1.LocalObjectReference{Name: authv1beta1.KubeconfigSecretName(id.Name)}
	works := liqoSecret(id.Spec.AuthParams.SignedCRT)
	sum := sha256.Sum256(works.Data[authv1beta1.KubeconfigSecretField])
	renewed, older := inCluster(9, p.now, true), inCluster(5, p.now.Add(-time.Hour), true)
	// Liqo's renewal: a newer certificate, and the provider's authParams copied over identity.yaml's.
	liqoRenewal := inCluster(9, p.now, true)
	liqoRenewal.Spec.AuthParams.APIServer, liqoRenewal.Spec.AuthParams.ProxyURL = "https://elsewhere:6443", ptr.To("http://proxy:3128")
	// A kubeconfig Secret being deleted, held by Liqo's CRD replicator (the revoked Identity's).
	held := works.DeepCopy()
	held.DeletionTimestamp, held.Finalizers = &metav1.Time{Time: p.now}, []string{ReplicatorFinalizer}
	restored := func(t *testing.T, pl Plan) {
		put := find[PutIdentity](t, pl)
		if put.Identity.Spec.AuthParams.APIServer != tAPIServer || put.Identity.Spec.AuthParams.ProxyURL != nil || put.ParamsDigest != applied {
			t.Errorf("PutIdentity %+v, digest %s: identity.yaml's parameters not restored", put.Identity.Spec.AuthParams, put.ParamsDigest)
		}
		if !bytes.Equal(put.Identity.Spec.AuthParams.SignedCRT, liqoRenewal.Spec.AuthParams.SignedCRT) {
			t.Errorf("the certificate Liqo renewed was not kept")
		}
		if e := find[Event](t, pl); e.Reason != AuthParamsDrifted || !strings.Contains(e.Message, "spec.authParams.apiServer, spec.authParams.proxyURL changed outside identity.yaml") {
			t.Errorf("event %+v, want AuthParamsDrifted naming the fields", e)
		}
		if pl.Outcome.Reason != AuthParamsDrifted {
			t.Errorf("outcome reason %v, want AuthParamsDrifted", pl.Outcome.Reason)
		}
	}
	runPlanCases(t, p.now, map[string]planCase{
		"no Identity: apply it, wait for Liqo's identity controller": {snap: with(func(*Snapshot) {}),
			actions: []string{"EnsureNamespace", "NoteCertificate", "PutIdentity", "RecheckAt"}, phase: gitpeerv1alpha1.PhaseIssued, message: "status.kubeconfigSecretRef",
			check: func(t *testing.T, pl Plan) {
				if got := find[PutIdentity](t, pl).ParamsDigest; got != applied {
					t.Errorf("PutIdentity records digest %q, want %q", got, applied)
				}
			}},
		"applied, Liqo's kubeconfig there: prove it once, remember it": {snap: with(func(s *Snapshot) { s.Identity, s.LiqoKubeconfig = current, works }),
			actions: []string{"EnsureNamespace", "NoteCertificate", "Prove", "RememberProven"}, phase: gitpeerv1alpha1.PhaseReady, message: "Liqo's kubeconfig Secret liqo-tenant-provider/kubeconfig-controlplane-provider works",
			check: func(t *testing.T, pl Plan) {
				if got := find[RememberProven](t, pl).Digest; got != hex.EncodeToString(sum[:]) {
					t.Errorf("remembered %s", got)
				}
			}},
		"proven before: nothing to do": {snap: with(func(s *Snapshot) { s.Identity, s.LiqoKubeconfig, s.Proven = current, works, hex.EncodeToString(sum[:]) }),
			actions: []string{"EnsureNamespace", "NoteCertificate"}, phase: gitpeerv1alpha1.PhaseReady},
		"Identity of an earlier version, same spec: annotate it, no drift": {snap: with(func(s *Snapshot) {
			s.Identity, s.LiqoKubeconfig, s.Proven = current.DeepCopy(), works, hex.EncodeToString(sum[:])
			delete(s.Identity.Annotations, vocabulary.IdentityParamsAnnotation)
		}),
			actions: []string{"EnsureNamespace", "NoteCertificate", "PutIdentity"}, phase: gitpeerv1alpha1.PhaseReady},
		"identity.yaml renewed: update, wait for Liqo to rewrite the kubeconfig": {
			snap:    with(func(s *Snapshot) { s.Identity, s.LiqoKubeconfig = older, liqoSecret(older.Spec.AuthParams.SignedCRT) }),
			actions: []string{"EnsureNamespace", "NoteCertificate", "PutIdentity", "RecheckAt"}, phase: gitpeerv1alpha1.PhaseIssued, message: "to rewrite Secret"},
		"Liqo renewed it: kept, never downgraded": {
			snap: with(func(s *Snapshot) {
				s.Identity, s.LiqoKubeconfig = renewed, liqoSecret(renewed.Spec.AuthParams.SignedCRT)
			}),
			actions: []string{"EnsureNamespace", "NoteCertificate", "Prove", "RememberProven"}, phase: gitpeerv1alpha1.PhaseReady,
			message: "identity.yaml is older than the certificate Liqo renewed, kept"},
		"Liqo's renewal moved the API server and proxy: reported, restored, its certificate kept; the kubeconfig it built is not used": {
			snap: with(func(s *Snapshot) {
				s.Identity, s.LiqoKubeconfig = liqoRenewal, liqoSecretFor(liqoRenewal.Spec.AuthParams.SignedCRT, "https://elsewhere:6443")
			}),
			actions: []string{"EnsureNamespace", "NoteCertificate", "Event", "PutIdentity", "RecheckAt"}, phase: gitpeerv1alpha1.PhaseIssued,
			message: "with the API server, CA and proxy of Identity controlplane-provider; restored spec.authParams.apiServer, spec.authParams.proxyURL from identity.yaml",
			check:   restored},
		"drift restored, Liqo's kubeconfig rebuilt: a failed proof still says what was restored": {
			snap: with(func(s *Snapshot) {
				s.Identity, s.LiqoKubeconfig = liqoRenewal, liqoSecret(liqoRenewal.Spec.AuthParams.SignedCRT)
			}),
			actions: []string{"EnsureNamespace", "NoteCertificate", "Event", "PutIdentity", "Prove", "RememberProven"}, phase: gitpeerv1alpha1.PhaseReady,
			message: "kept; restored spec.authParams.apiServer, spec.authParams.proxyURL from identity.yaml",
			check: func(t *testing.T, pl Plan) {
				restored(t, pl)
				failed := find[Prove](t, pl).Drift.Mark(Outcome{Phase: gitpeerv1alpha1.PhaseFailed, Message: "does not work yet"})
				if failed.Reason != AuthParamsDrifted || !strings.HasSuffix(failed.Message, "; restored spec.authParams.apiServer, spec.authParams.proxyURL from identity.yaml") {
					t.Errorf("failed proof outcome %+v", failed)
				}
			}},
		"kubeconfig Secret held by Liqo's CRD replicator, before Liqo set the reference: named, not waited on silently": {
			snap: with(func(s *Snapshot) {
				s.Identity, s.LiqoKubeconfig = inCluster(1, p.now.Add(-time.Minute), false), held
				s.Identity.Spec = id.Spec
			}),
			actions: []string{"EnsureNamespace", "NoteCertificate", "RecheckAt"}, phase: gitpeerv1alpha1.PhaseIssued,
			message: "held by finalizers [crdreplicator.liqo.io/operator]; Liqo's identity controller writes the new one once it is gone; crdreplicator.liqo.io/operator is removed by Liqo's CRD replicator"},
	})
}
