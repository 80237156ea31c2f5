package consumer

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"text/template"
	"time"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/gitsync"
	"github.com/gitpeer/gitpeer/reconciler/check"
	"github.com/gitpeer/gitpeer/reconciler/liqo"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// LiqoRecheck is how soon a round comes back while it waits for one of
// Liqo's controllers (the agent does not watch their objects).
const LiqoRecheck = 2 * time.Second

// directMode names spec.consumer.direct for what it is in the messages of its
// peerings, and DirectModeWarning says what it gives away.
const (
	directMode        = "direct mode, for single-admin labs only"
	DirectModeWarning = "spec.consumer.direct is on: this cluster commits request.yaml and tenant.yaml straight to the branch, so its push is the approval and its credentials can push the protected branch; use it only in single-admin labs"
)

// PlanPeering decides the round of the consumer's peering with one provider
// from what the round observed of it: the step (Decide), the mode check, and
// every action and message of that step. It reads and writes nothing.
func PlanPeering(s Snapshot, now time.Time) Plan {
	pe := s.Docs
	o := Observed{Identity: s.Identity != nil, RequestAgain: s.RequestAgain}
	if s.Namespace != nil {
		o.Revoked = s.Namespace.Revoked
	}
	var p Plan
	step := Decide(pe, o)
	if step != DropIdentity && p.blockedByMode(s) {
		return p
	}
	switch step {
	case ApplyIdentity:
		p.applyIdentity(s, now)
	case KeepIdentity:
		p.Outcome = Outcome{Phase: gitpeerv1alpha1.PhaseFailed, Message: fmt.Sprintf("%v; skipped: the current Identity is kept", pe.Invalid[vocabulary.IdentityFile])}
	case DropIdentity:
		p.add(ForgetProvider{}, NoteCertificate{}, MarkRevoked{At: now},
			Event{Revoked, pe.Provider, fmt.Sprintf("identity.yaml for provider %s left the branch: Identity, kubeconfig and pin deleted", pe.Provider)})
		p.Outcome = Outcome{Phase: gitpeerv1alpha1.PhaseRevoked, Message: "identity.yaml removed: Identity, kubeconfig and pin deleted"}
	case StayRevoked:
		p.Outcome = Outcome{Phase: gitpeerv1alpha1.PhaseRevoked, Message: fmt.Sprintf(
			"identity revoked by provider %s at %s; not requesting again on its own: to peer again, set annotation %s=%s on this PeeringRepository (or commit a request with gitpeer request)",
			pe.Provider, s.Namespace.RevokedAt, gitpeerv1alpha1.RequestAgainAnnotation, pe.Provider)}
	case RequestAgain:
		p.add(ClearRevoked{}, ConsumeAnnotation{Key: gitpeerv1alpha1.RequestAgainAnnotation})
		p.request(s)
	case Request:
		p.request(s)
	case WaitForNonce:
		p.Outcome = Outcome{Phase: gitpeerv1alpha1.PhaseRequested, Message: "waiting for the provider's nonce"}
	case ProposeTenant:
		p.proposeTenant(s, now)
	}
	return p
}

// blockedByMode lets the peering go on when its tenant namespace (none yet:
// a new peering) records the agent's mode, or records the switch a person
// accepted; otherwise the peering is left alone and reported.
func (p *Plan) blockedByMode(s Snapshot) bool {
	if s.Namespace == nil {
		return false
	}
	peer := s.Docs.Provider
	recorded := cmp.Or(s.Namespace.Mode, gitpeerv1alpha1.PeeringModeStandalone)
	acceptKey := gitpeerv1alpha1.SwitchModeAnnotationPrefix + peer
	switch liqo.DecideMode(recorded, s.Mode, s.SwitchAccepted) {
	case liqo.ModeGoOn:
		return false
	case liqo.ModeSwitch:
		p.add(RecordMode{Mode: s.Mode}, ConsumeAnnotation{Key: acceptKey},
			Log{"peering switched mode", []any{"peer", peer, "from", recorded, "to", s.Mode}},
			Event{ModeSwitched, peer, liqo.ModeSwitched(peer, recorded, s.Mode)})
		return false
	}
	msg := liqo.ModeChanged(peer, recorded, s.Mode, s.ModeSummary)
	p.add(Log{"peering left alone: its mode changed", []any{"peer", peer, "recorded", recorded, "current", s.Mode}}, Event{ModeChanged, peer, msg})
	p.Outcome = Outcome{Phase: gitpeerv1alpha1.PhaseFailed, Reason: ModeChanged, Message: msg}
	return true
}

// request commits request.yaml with the cluster's public key: to the review
// branch, where it reaches the branch only when someone merges it, so the
// consumer needs no push right to the branch; in direct mode, straight to the
// branch.
func (p *Plan) request(s Snapshot) {
	pe := s.Docs
	doc, err := protocol.RequestDocument(pe.Provider, pe.Consumer, s.Key.Public())
	if err != nil {
		p.Outcome = Outcome{Err: err}
		return
	}
	msg := protocol.Message{
		Subject: fmt.Sprintf("Request peering of %s with %s", pe.Consumer, pe.Provider),
		Action:  vocabulary.ActionRequest, Provider: pe.Provider, Consumer: pe.Consumer,
	}
	change := gitsync.Put(protocol.Path{Provider: pe.Provider, Consumer: pe.Consumer, Kind: vocabulary.RequestFile}.String(), doc)
	requested := func(where string) Event {
		return Event{Requested, pe.Provider, fmt.Sprintf("request.yaml for provider %s pushed to %s", pe.Provider, where)}
	}
	if s.Spec.Direct {
		p.add(Stage{Message: msg, Change: change, Pushed: []Event{requested("the branch"), warnDirect(pe.Provider, "request.yaml")}})
		p.Outcome = Outcome{Phase: gitpeerv1alpha1.PhaseRequested, Message: "request.yaml committed to the branch (" + directMode + "); waiting for the provider's nonce"}
		return
	}
	branch, err := ReviewBranch(s.Spec, pe.Provider, pe.Consumer)
	if err != nil {
		p.Outcome = Outcome{Err: err}
		return
	}
	p.add(PushReview{Branch: branch, Message: msg, Change: change, Pushed: []Event{requested("branch " + branch)}})
	p.Outcome = Outcome{Phase: gitpeerv1alpha1.PhaseRequested, Message: fmt.Sprintf(
		"request.yaml proposed on branch %s; waiting for someone to merge it into %s, then for the provider's nonce", branch, s.Branch)}
}

// warnDirect is the Warning that in direct mode the consumer committed file
// for provider straight to the branch, approved by no one but itself.
func warnDirect(provider, file string) Event {
	return Event{DirectMode, provider, fmt.Sprintf("%s for provider %s committed straight to the branch: %s", file, provider, DirectModeWarning)}
}

// proposeTenant signs the provider's nonce, builds the CSR and pushes
// tenant.yaml for review (or to the branch in direct mode), once per nonce:
// the signed-nonce Secret records the push.
func (p *Plan) proposeTenant(s Snapshot, now time.Time) {
	pe := s.Docs
	nonce := pe.Nonce.Spec.Nonce
	branch, err := ReviewBranch(s.Spec, pe.Provider, pe.Consumer)
	if err != nil {
		p.Outcome = Outcome{Err: err}
		return
	}
	where := "branch " + branch
	if branch == "" {
		where = "the branch (" + directMode + ")"
	}
	if s.Liqo {
		p.proposeLiqoTenant(s, now, branch, where)
		return
	}
	tenant, err := protocol.NewTenant(pe.Consumer, s.Key, nonce)
	if err != nil {
		p.Outcome = Outcome{Err: err}
		return
	}
	signature := tenant.Spec.Signature
	marked := s.SignedNonce != nil && string(s.SignedNonce.Data[authv1beta1.NonceSecretField]) == nonce
	if pe.Tenant != nil && bytes.Equal(pe.Tenant.Spec.Signature, signature) {
		// Direct mode pushed it with the round's commit: the record follows from the branch.
		if s.Spec.Direct && !s.Quiet && !marked {
			p.add(EnsureNamespace{}, MarkProposed{Nonce: nonce, Signature: signature})
		}
		p.Outcome = Outcome{Phase: gitpeerv1alpha1.PhaseAwaitingApproval, Message: "tenant.yaml merged; waiting for identity.yaml"}
		return
	}
	p.Outcome = Outcome{Phase: gitpeerv1alpha1.PhaseAwaitingApproval, Message: "tenant.yaml proposed on " + where + "; waiting for approval"}
	if s.Quiet || marked {
		return // the last round, at this commit, proposed it; or the record says it was pushed
	}
	p.pushTenant(pe, tenant, branch, where, EnsureNamespace{}, MarkProposed{Nonce: nonce, Signature: signature})
}

// proposeLiqoTenant has Liqo's nonce signer sign the provider's nonce
// through the liqo-signed-nonce Secret, as `liqoctl generate tenant` does,
// then pushes tenant.yaml with that signature, once per nonce.
func (p *Plan) proposeLiqoTenant(s Snapshot, now time.Time, branch, where string) {
	pe := s.Docs
	nonce := pe.Nonce.Spec.Nonce
	step, signature := PlanSignedNonce(s.SignedNonce, nonce, s.Key.Public())
	if pe.Tenant != nil && crypto.VerifyNonceSignature(s.Key.Public(), nonce, pe.Tenant.Spec.Signature) == nil {
		if s.Spec.Direct && step == ProposeSigned {
			p.add(MarkLiqoProposed{Nonce: nonce, Where: where}) // pushed by the round's commit
		}
		p.Outcome = Outcome{Phase: gitpeerv1alpha1.PhaseAwaitingApproval, Message: "tenant.yaml merged; waiting for identity.yaml"}
		return
	}
	signing := Outcome{Phase: gitpeerv1alpha1.PhaseRequested, Message: "waiting for Liqo's nonce signer to sign the provider's nonce (Secret " + authv1beta1.SignedNonceSecretName + ")"}
	switch step {
	case WriteNonce:
		p.add(EnsureNamespace{}, PutNonce{Nonce: nonce}, RecheckAt{At: now.Add(LiqoRecheck)})
		p.Outcome = signing
		return
	case WaitForSignature:
		p.add(RecheckAt{At: now.Add(LiqoRecheck)})
		p.Outcome = signing
		return
	}
	p.Outcome = Outcome{Phase: gitpeerv1alpha1.PhaseAwaitingApproval, Message: "tenant.yaml proposed on " + where + "; waiting for approval"}
	if step == AlreadyProposed {
		return
	}
	// As liqoctl builds it: Liqo's PEM public key, CSR CN = cluster ID, O = liqo.io, Liqo's signature.
	tenant, err := protocol.NewTenant(pe.Consumer, s.Key, nonce)
	if err != nil {
		p.Outcome = Outcome{Err: err}
		return
	}
	tenant.Spec.Signature = signature
	p.pushTenant(pe, tenant, branch, where, MarkLiqoProposed{Nonce: nonce, Where: where})
}

// pushTenant pushes tenant.yaml to the review branch, then writes record, the
// mark of the push; in direct mode (branch "") it stages tenant.yaml for the
// round's commit, and the next round records it from the branch.
func (p *Plan) pushTenant(pe *protocol.Documents, tenant *authv1beta1.Tenant, branch, where string, record ...Action) {
	doc, err := yaml.Marshal(tenant)
	if err != nil {
		p.Outcome = Outcome{Err: err}
		return
	}
	msg := protocol.Message{
		Subject: fmt.Sprintf("Propose Tenant of %s for %s", pe.Consumer, pe.Provider),
		Body:    "Merging this change approves the peering: the provider's agent then verifies the Tenant and issues an identity.",
		Action:  vocabulary.ActionProposeTenant, Provider: pe.Provider, Consumer: pe.Consumer,
	}
	change := gitsync.Put(protocol.Path{Provider: pe.Provider, Consumer: pe.Consumer, Kind: vocabulary.TenantFile}.String(), doc)
	proposed := Event{TenantProposed, pe.Provider, fmt.Sprintf("tenant.yaml for provider %s pushed to %s", pe.Provider, where)}
	if branch == "" {
		p.add(Stage{Message: msg, Change: change, Pushed: []Event{warnDirect(pe.Provider, "tenant.yaml"), proposed}})
		return
	}
	p.add(PushReview{Branch: branch, Message: msg, Change: change})
	p.add(record...)
	p.add(proposed)
}

// ReviewBranch renders spec.consumer.reviewBranchTemplate for the peering of
// consumer with provider; "" in direct mode.
func ReviewBranch(spec *gitpeerv1alpha1.ConsumerSpec, provider, consumer string) (string, error) {
	if spec.Direct {
		return "", nil
	}
	tmpl, err := template.New("branch").Option("missingkey=error").Parse(spec.GetReviewBranchTemplate())
	if err != nil {
		return "", fmt.Errorf("reviewBranchTemplate: %w", err)
	}
	var b strings.Builder
	if err := tmpl.Execute(&b, map[string]string{"ProviderID": provider, "ConsumerID": consumer}); err != nil {
		return "", fmt.Errorf("reviewBranchTemplate: %w", err)
	}
	return b.String(), nil
}

// applyIdentity acts on identity.yaml only for a provider this cluster asked
// (its own tenant.yaml merged beside it), checks it (check.Identity, with the
// cluster's own key: the certificate and the API server of the provider's
// terms) and against the anchor the admin
// configured (CA hashes or CA) or, only by opt-in, the provider's pin; proves
// the kubeconfig with a SelfSubjectReview when it is new or the branch moved,
// and only then pins the provider (trust on first use) and writes the
// Identity and its kubeconfig Secret. A rejected identity.yaml leaves
// everything in place.
func (p *Plan) applyIdentity(s Snapshot, now time.Time) {
	pe := s.Docs
	id := pe.Identity
	checked := check.Identity(pe, check.Facts{Key: s.Key.Public(), Now: now})
	if checked.Err != nil {
		p.reject(pe, checked.Err)
		return
	}
	cert := checked.Cert
	p.add(EnsureNamespace{})
	var annotations map[string]string
	if s.Namespace != nil {
		annotations = s.Namespace.Annotations
	}
	pin, err := "", s.AnchorErr
	if err == nil {
		pin, err = Trust(annotations, pe.Provider, id.Spec.AuthParams.APIServer, id.Spec.AuthParams.CA, s.Anchor)
	}
	if err != nil {
		p.reject(pe, err)
		return
	}
	p.add(NoteCertificate{Expiry: cert.NotAfter.Unix()})
	if s.Liqo {
		p.applyLiqoIdentity(s, now, annotations, pin)
		return
	}
	ns := authv1beta1.TenantNamespaceName(authv1beta1.ClusterID(pe.Provider))
	ready := Outcome{Phase: gitpeerv1alpha1.PhaseReady, Message: fmt.Sprintf("kubeconfig Secret %s/%s works (certificate %s, expires %s)%s",
		ns, authv1beta1.KubeconfigSecretName(id.Name), cert.SerialNumber.Text(16), cert.NotAfter.UTC().Format(time.RFC3339), firstUseNote(pin))}
	if s.Quiet {
		p.Outcome = ready // the last round, at this commit, proved and wrote this kubeconfig
		return
	}
	// An empty CA builds a kubeconfig without certificate-authority-data: the system roots verify the server.
	kubeconfig, err := crypto.BuildKubeconfig(crypto.KubeconfigParams{
		ProviderClusterID: pe.Provider, IdentityName: id.Name, Namespace: ptr.Deref(id.Spec.Namespace, ""), APIServer: id.Spec.AuthParams.APIServer,
		ProxyURL: ptr.Deref(id.Spec.AuthParams.ProxyURL, ""), CA: id.Spec.AuthParams.CA, Certificate: id.Spec.AuthParams.SignedCRT, Key: s.Key,
	})
	if err != nil {
		p.Outcome = Outcome{Err: err}
		return
	}
	if !bytes.Equal(s.Kubeconfig, kubeconfig) || s.BranchMoved {
		p.add(Prove{Provider: pe.Provider, User: pe.Consumer, Kubeconfig: kubeconfig})
	}
	p.recordPin(pe.Provider, ns, annotations, pin)
	p.add(WriteIdentity{Provider: pe.Provider, Identity: id, Kubeconfig: kubeconfig, Serial: cert.SerialNumber.Text(16)})
	p.Outcome = ready
}

// applyLiqoIdentity ends applyIdentity in Liqo mode: it holds the Identity
// to identity.yaml's parameters with the newer of its certificate and the one
// Liqo's renewer put there (PlanIdentity), reporting parameters that drifted,
// waits for Liqo's identity controller to write the kubeconfig Secret from
// them, proves that kubeconfig (once per kubeconfig) and then pins the
// provider. It never writes the kubeconfig Secret.
func (p *Plan) applyLiqoIdentity(s Snapshot, now time.Time, annotations map[string]string, pin string) {
	pe := s.Docs
	ns := authv1beta1.TenantNamespaceName(authv1beta1.ClusterID(pe.Provider))
	var current *authv1beta1.IdentitySpec
	identity := &authv1beta1.Identity{}
	if s.Identity != nil {
		current, identity = &s.Identity.Spec, s.Identity.DeepCopy()
	}
	plan, err := PlanIdentity(current, identity.Annotations[vocabulary.IdentityParamsAnnotation], &pe.Identity.Spec)
	if err != nil {
		p.Outcome = Outcome{Err: err}
		return
	}
	// Every outcome of a round that restored drifted parameters says so.
	drift := Drift{}
	if plan.Write && len(plan.Drifted) > 0 {
		drift = Drift{Reason: AuthParamsDrifted, Note: "restored " + strings.Join(plan.Drifted, ", ") + " from identity.yaml"}
		p.add(Event{AuthParamsDrifted, pe.Provider, fmt.Sprintf(
			"Identity %s/%s: %s changed outside identity.yaml (Liqo's renewal copies the provider's authParams, or another writer): restored from identity.yaml; a change of the provider's API server, CA or proxy takes effect once a reviewed identity.yaml carries it",
			ns, pe.Identity.Name, strings.Join(plan.Drifted, ", "))})
	}
	if plan.Write {
		identity.Name, identity.Spec = pe.Identity.Name, plan.Spec
		p.add(PutIdentity{Identity: identity.DeepCopy(), ParamsDigest: plan.Digest})
	}
	kubeconfig, err := LiqoKubeconfig(identity, s.LiqoKubeconfig)
	if err != nil {
		p.add(RecheckAt{At: now.Add(LiqoRecheck)})
		p.Outcome = drift.Mark(Outcome{Phase: gitpeerv1alpha1.PhaseIssued, Message: err.Error()})
		return
	}
	sum := sha256.Sum256(kubeconfig)
	if digest := hex.EncodeToString(sum[:]); digest != s.Proven {
		p.add(Prove{Provider: pe.Provider, User: pe.Consumer, Kubeconfig: kubeconfig, Liqo: true, Drift: drift}, RememberProven{Digest: digest})
	}
	p.recordPin(pe.Provider, ns, annotations, pin)
	cert, err := crypto.ParseCertificatePEM(identity.Spec.AuthParams.SignedCRT)
	if err != nil {
		p.Outcome = Outcome{Err: err}
		return
	}
	if plan.Change == CreateIdentity || plan.Change == UpdateIdentity {
		p.add(Event{PeeringReady, pe.Provider, fmt.Sprintf("Identity for provider %s applied (serial %s); Liqo's kubeconfig works", pe.Provider, cert.SerialNumber.Text(16))})
	}
	kept := ""
	if plan.Change == KeepRenewed {
		kept = "; identity.yaml is older than the certificate Liqo renewed, kept"
	}
	p.Outcome = drift.Mark(Outcome{Phase: gitpeerv1alpha1.PhaseReady, Message: fmt.Sprintf("Liqo's kubeconfig Secret %s/%s works (certificate %s, expires %s)%s%s",
		ns, s.LiqoKubeconfig.Name, cert.SerialNumber.Text(16), cert.NotAfter.UTC().Format(time.RFC3339), kept, firstUseNote(pin))})
}

// recordPin records pin (Trust's) on the tenant namespace ns when RecordPin
// says so. Each pin taken is trust on first use, never an anchor: it is
// reported with a Warning.
func (p *Plan) recordPin(provider, ns string, annotations map[string]string, pin string) {
	if !RecordPin(annotations, pin) {
		return
	}
	p.add(PinProvider{Pin: pin},
		Log{"provider trusted on first use: pinned without an anchor", []any{"provider", provider, "namespace", ns}},
		Event{TrustedOnFirstUse, provider, fmt.Sprintf(
			"provider %s trusted on first use (spec.consumer.trustOnFirstUse): its API server and CA are pinned in annotation %s of namespace %s, with no anchor; %s, and add it to spec.consumer.trustedCAs",
			provider, vocabulary.PinnedProviderAnnotation, ns, CAHashHowTo)})
}

// firstUseNote is what a peering's message adds while its provider is
// trusted on first use: pin is Trust's.
func firstUseNote(pin string) string {
	if pin == "" {
		return ""
	}
	return "; trusted on first use (spec.consumer.trustOnFirstUse), not anchored by spec.consumer.trustedCAs"
}

// reject reports identity.yaml refused (phase message, Warning, log); nothing is written.
func (p *Plan) reject(pe *protocol.Documents, reason error) {
	path := protocol.Path{Provider: pe.Provider, Consumer: pe.Consumer, Kind: vocabulary.IdentityFile}.String()
	msg := fmt.Sprintf("%s rejected: %s", path, reason)
	p.add(Log{"identity rejected", []any{"path", path, "reason", reason.Error()}}, Event{Rejected, path, msg})
	p.Outcome = Outcome{Phase: gitpeerv1alpha1.PhaseFailed, Message: msg}
}
