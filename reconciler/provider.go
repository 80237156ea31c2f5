package reconciler

import (
	"context"
	gocrypto "crypto"
	"crypto/x509"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/gitsync"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/reconciler/provider"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// providing is one peering directory <me>/<consumer> of a provider's round,
// planned: its tenant namespace and Tenant (nil when there is none), and the
// step to take, or the outcome when planning settled it already (done).
type providing struct {
	pe     *protocol.Documents
	ns     string
	tenant *authv1beta1.Tenant
	step   provider.Step
	done   *outcome
	// signs: the step signs a certificate (an issuance or a renewal, not in
	// Liqo mode); provideAll takes such steps last, with the round's CSR list.
	signs bool
	// heldBack: the round's limit held the peering back (done says so); the next round takes it.
	heldBack bool
}

// planProvide decides the step of the provider side of the peering pe
// (provider.Decide): it reads what the cluster holds for it, checks its mode,
// admits a request (admitRequest) and holds it back when the round already
// acts on as many peerings as limit allows (provider.Acts). The round plans
// its peerings one after the other, in its order, so that the same requests
// are admitted and the same peerings act whatever order they then run in
// (provideAll).
func (s *session) planProvide(ctx context.Context, pe *protocol.Documents, limit *provider.RoundLimit) providing {
	p := providing{pe: pe, ns: authv1beta1.TenantNamespaceName(authv1beta1.ClusterID(pe.Consumer))}
	settled := func(o outcome) providing { p.done = &o; return p }
	nsObj, err := s.tenantNamespace(ctx, pe.Consumer, p.ns)
	if err != nil {
		return settled(s.skipForeign(pe, err))
	}
	tenant := &authv1beta1.Tenant{}
	err = s.r.Get(ctx, client.ObjectKey{Namespace: p.ns, Name: pe.Consumer}, tenant)
	if err != nil && !apierrors.IsNotFound(err) {
		return settled(outcome{err: err})
	}
	if err == nil && !s.owns(tenant) {
		return settled(s.skipForeign(pe, errNotOurs{"Tenant " + p.ns + "/" + pe.Consumer}))
	}
	if err == nil {
		p.tenant = tenant
	}
	p.step = provider.Decide(pe, provider.Observed{Tenant: p.tenant})
	if p.step != provider.Revoke {
		if o, stop := s.checkMode(ctx, pe.Consumer, nsObj); stop {
			return settled(o)
		}
	}
	admitted := false
	if p.step == provider.OfferNonce {
		if pe.Request == nil {
			return settled(outcome{phase: gitpeerv1alpha1.PhaseRevoked, message: "no request"})
		}
		o, refused, isNew := s.admitRequest(ctx, pe, p.ns)
		if refused {
			return settled(o)
		}
		admitted = isNew
	}
	cert, renewalDue := s.renewalDue(p)
	if !limit.Take(provider.Acts(p.step, pe.Nonce != nil, renewalDue)) {
		p.heldBack = true
		return settled(heldBack(p, cert, limit.Max))
	}
	if admitted {
		s.pending++
	}
	p.signs = !s.liqoMode() && (p.step == provider.Issue || renewalDue)
	return p
}

// renewalDue reports, for a peering planned to be maintained, whether the
// certificate in its Tenant's status is due for renewal (provider.RenewalOf),
// which the agent does itself unless in Liqo mode; cert is that certificate.
// A certificate that does not parse is not due here: maintain reports it.
func (s *session) renewalDue(p providing) (cert *x509.Certificate, due bool) {
	if p.step != provider.Maintain || s.liqoMode() {
		return nil, false
	}
	cert, err := crypto.ParseCertificatePEM(p.tenant.Status.AuthParams.SignedCRT)
	if err != nil {
		return nil, false
	}
	return cert, provider.RenewalOf(cert, s.r.Now()).Due
}

// heldBack is the outcome of a peering the round's limit held back: where it
// stands (a request, a Tenant waiting to be issued, an issued one waiting to
// be renewed) and that the next round takes it.
func heldBack(p providing, cert *x509.Certificate, limit int) outcome {
	note := fmt.Sprintf("held back: this round acted on %d peerings, its limit; the next round takes this one", limit)
	switch p.step {
	case provider.OfferNonce:
		return outcome{phase: gitpeerv1alpha1.PhaseRequested, message: note}
	case provider.Maintain:
		o := issuedOutcome(p.tenant, cert)
		o.message = joinNote(o.message, "renewal "+note)
		return o
	}
	return outcome{phase: gitpeerv1alpha1.PhaseNonceIssued, message: "Tenant merged, not issued yet; " + note}
}

// provide takes the step planned for a peering (planProvide). The peerings
// of a round run it at once (provideAll).
func (s *session) provide(ctx context.Context, p providing) outcome {
	if p.done != nil {
		return *p.done
	}
	pe, ns := p.pe, p.ns
	switch p.step {
	case provider.FailClosed:
		return s.failClosed(ctx, pe.Consumer, p.tenant, provider.FailClose(pe.BuildFailed, p.tenant))
	case provider.SkipInvalid:
		return outcome{phase: gitpeerv1alpha1.PhaseFailed, message: fmt.Sprintf("%v; skipped: nothing issued or revoked until it is fixed or deleted", pe.Invalid[vocabulary.TenantFile])}
	case provider.Revoke:
		return s.revoke(ctx, pe)
	case provider.OfferNonce:
		return s.offerNonce(ctx, pe, ns)
	case provider.Maintain:
		if s.liqoMode() {
			return s.publishLiqoIdentity(ctx, pe, p.tenant)
		}
		return s.maintain(ctx, pe, p.tenant, false)
	}
	if s.liqoMode() {
		return s.issueLiqo(ctx, pe, ns, p.tenant)
	}
	return s.issue(ctx, pe, ns, p.tenant)
}

// offerNonce makes sure a requested peering, admitted (planProvide), has a
// tenant namespace, a nonce Secret and that nonce committed as nonce.yaml.
func (s *session) offerNonce(ctx context.Context, pe *protocol.Documents, ns string) outcome {
	if err := s.ensureTenantNamespace(ctx, pe.Consumer, ns); err != nil {
		return s.skipForeign(pe, err)
	}
	waiting := outcome{phase: gitpeerv1alpha1.PhaseNonceIssued, message: "waiting for a merged tenant.yaml"}
	if pe.Nonce != nil && s.quiet() {
		return waiting
	}
	nonce, err := s.nonce(ctx, pe.Consumer, ns, false)
	if err != nil {
		return outcome{err: err}
	}
	if nonce == "" {
		return outcome{phase: gitpeerv1alpha1.PhaseRequested, message: "waiting for Liqo's nonce creator to fill Secret " + authv1beta1.NonceSecretName}
	}
	if pe.Nonce == nil || pe.Nonce.Spec.Nonce != nonce {
		doc, err := protocol.NonceDocument(pe.Provider, pe.Consumer, nonce)
		if err != nil {
			return outcome{err: err}
		}
		consumer := pe.Consumer // the step, held until the commit, keeps only what it reports
		s.stage(ctx, gitpeerv1alpha1.ProviderRole, consumer, protocol.Message{
			Subject: fmt.Sprintf("Issue nonce for %s on %s", consumer, pe.Provider),
			Action:  vocabulary.ActionIssueNonce, Provider: pe.Provider, Consumer: consumer,
		}, func(context.Context, bool) error {
			s.routine.add(gitpeerv1alpha1.NonceIssuedReason, "nonce issued", consumer)
			return nil
		}, gitsync.Put(protocol.Path{Provider: pe.Provider, Consumer: pe.Consumer, Kind: vocabulary.NonceFile}.String(), doc))
	}
	return waiting
}

// issue verifies a merged Tenant against the provider's own nonce and, if it
// holds, applies it in place of current (the Tenant applied before, nil if
// none), binds RBAC, signs its CSR and commits identity.yaml with a fresh
// nonce; if it does not hold, it fails closed (applyTenant).
func (s *session) issue(ctx context.Context, pe *protocol.Documents, ns string, current *authv1beta1.Tenant) outcome {
	tenant, key, note, stop := s.applyTenant(ctx, pe, ns, current)
	if stop != nil {
		return *stop
	}
	if err := s.syncBinding(ctx, pe.Consumer, ns, pe.Tenant.Spec.TenantCondition); err != nil {
		return outcome{err: err}
	}
	got, stop := s.sign(ctx, provider.Signing{Consumer: pe.Consumer, Request: pe.Tenant.Spec.CSR, Key: key, Signature: pe.Tenant.Spec.Signature},
		outcome{phase: gitpeerv1alpha1.PhaseNonceIssued, message: "waiting for the certificate to be signed"})
	if stop != nil {
		stop.message = joinNote(stop.message, note)
		return *stop
	}
	if err := s.storeIssued(ctx, tenant, ns, got.pem); err != nil {
		return outcome{err: err}
	}
	o := s.maintain(ctx, pe, tenant, true)
	o.message = joinNote(joinNote(o.message, got.note), note)
	return o
}

// applyTenant verifies the Tenant merged in pe with the trust rules
// (provider.Verify), pins its key and applies it, labelled as this
// PeeringRepository's, in place of current (nil if none). It returns the
// applied Tenant, its key and a note for the peering's message (the
// overrides it used up, those it left unused); stop is set when it was
// refused (the peering then fails closed: failClosed) or failed.
func (s *session) applyTenant(ctx context.Context, pe *protocol.Documents, ns string, current *authv1beta1.Tenant) (*authv1beta1.Tenant, gocrypto.PublicKey, string, *outcome) {
	fail := func(err error) (*authv1beta1.Tenant, gocrypto.PublicKey, string, *outcome) {
		return nil, nil, "", &outcome{err: err}
	}
	nonce, err := s.nonce(ctx, pe.Consumer, ns, true)
	if err != nil {
		return fail(err)
	}
	records, err := s.records(ctx, pe.Consumer)
	if err != nil {
		return fail(err)
	}
	// The pin comes from the records alone: only the agent may write them
	// (admission policy gitpeer-records), while anyone who may annotate
	// namespaces could write an annotation.
	annotations, applied := s.obj.GetAnnotations(), provider.Applied(pe, current)
	verdict, closure := provider.Verify(pe, provider.TenantCheck{
		Nonce:          nonce,
		PinnedKey:      records.PinnedKey,
		Rekey:          annotations[gitpeerv1alpha1.RekeyAnnotationPrefix+pe.Consumer],
		RevivalBlocked: s.refuseRevival(records, pe.Consumer),
		Revival:        annotations[gitpeerv1alpha1.RevivalAnnotationPrefix+pe.Consumer],
		Applied:        applied,
		AllowProxyURL:  s.obj.Spec.Provider.AllowProxyURL,
	}, current)
	unused := s.reportUnusedOverrides(pe.Consumer, verdict.Unused)
	if closure != nil {
		s.r.eventAbout(s.obj, corev1.EventTypeWarning, gitpeerv1alpha1.RejectedReason, protocol.Path{Provider: pe.Provider, Consumer: pe.Consumer, Kind: vocabulary.TenantFile}.String(), "%s", closure.Message)
		o := s.failClosed(ctx, pe.Consumer, current, *closure)
		o.message = joinNote(o.message, unused)
		return nil, nil, "", &o
	}
	if err := s.pinKey(ctx, pe.Consumer, verdict); err != nil {
		return fail(err)
	}
	if s.liqoMode() {
		if current == nil {
			if stray := s.strayLiqoTenant(ctx, pe.Consumer, ns); stray != nil {
				return nil, nil, "", stray
			}
		}
		if err := s.dropStaleLiqoCache(ctx, pe, ns); err != nil {
			return fail(err)
		}
	}
	tenant := &authv1beta1.Tenant{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: pe.Consumer}}
	if _, err := controllerutil.CreateOrUpdate(ctx, s.r.Client, tenant, func() error {
		metav1.SetMetaDataLabel(&tenant.ObjectMeta, authv1beta1.RemoteClusterIDLabel, pe.Consumer)
		metav1.SetMetaDataLabel(&tenant.ObjectMeta, vocabulary.ManagedByLabel, vocabulary.ManagedBy)
		metav1.SetMetaDataLabel(&tenant.ObjectMeta, vocabulary.OwnerLabel, string(s.obj.UID))
		recordOverrides(tenant, verdict.Used, applied)
		tenant.Spec = pe.Tenant.Spec
		return nil
	}); err != nil {
		return fail(err)
	}
	used, err := s.consumeOverrides(ctx, pe.Consumer, verdict.Used)
	if err != nil {
		return fail(err)
	}
	return tenant, verdict.Key, joinNote(used, unused), nil
}

// maintain keeps an issued peering true to the branch: the nonce is rotated
// once used, identity.yaml matches the issued certificate, the Tenant's
// condition is honoured, and the certificate is renewed at 2/3 of its life.
// fresh: the certificate was issued in this round. A quiet round (see quiet)
// that renews nothing leaves the nonce as it is, unread.
func (s *session) maintain(ctx context.Context, pe *protocol.Documents, tenant *authv1beta1.Tenant, fresh bool) outcome {
	ns := tenant.Namespace
	if err := s.syncTenantCondition(ctx, tenant, pe.Tenant.Spec.TenantCondition); err != nil {
		return outcome{err: err}
	}
	if err := s.syncBinding(ctx, pe.Consumer, ns, tenant.Spec.TenantCondition); err != nil {
		return outcome{err: err}
	}
	cert, err := crypto.ParseCertificatePEM(tenant.Status.AuthParams.SignedCRT)
	if err != nil {
		return outcome{err: fmt.Errorf("stored certificate of %s: %w", pe.Consumer, err)}
	}
	if err := s.recordIssued(ctx, pe.Consumer, cert); err != nil {
		return outcome{err: err}
	}
	action, reason := vocabulary.ActionIssueIdentity, gitpeerv1alpha1.IdentityIssuedReason
	if pe.Identity != nil {
		action, reason = vocabulary.ActionRenewIdentity, gitpeerv1alpha1.IdentityRenewedReason
	}
	note := ""
	if renewal := provider.RenewalOf(cert, s.r.Now()); renewal.Due {
		got, stop := s.renew(ctx, tenant, cert)
		if stop != nil {
			return s.renewalStalled(pe.Consumer, cert, renewal, *stop)
		}
		cert, note, fresh = got.cert, got.note, true
		action, reason = vocabulary.ActionRenewIdentity, gitpeerv1alpha1.IdentityRenewedReason
	}
	s.noteRenewalOf(pe.Consumer, crypto.RenewalTime(cert))
	s.noteCertificate(gitpeerv1alpha1.ProviderRole, pe.Consumer, certRecord{expiry: cert.NotAfter.Unix(), renews: true})

	identity, err := protocol.IdentityDocument(pe.Provider, pe.Consumer, *tenant.Status.AuthParams)
	if err != nil {
		return outcome{err: err}
	}
	changes := []gitsync.FileChange{gitsync.Put(protocol.Path{Provider: pe.Provider, Consumer: pe.Consumer, Kind: vocabulary.IdentityFile}.String(), identity)}
	if fresh || !s.quiet() {
		nonce, err := s.usedNonceRotated(ctx, pe.Consumer, tenant)
		if err != nil {
			return outcome{err: err}
		}
		changes = append(changes, nonce)
	}
	s.stageIdentity(ctx, pe, tenant, action, reason, cert, changes...)
	o := issuedOutcome(tenant, cert)
	o.message = joinNote(o.message, note)
	return o
}

// syncTenantCondition sets the applied Tenant's condition to want, the one on the branch.
func (s *session) syncTenantCondition(ctx context.Context, tenant *authv1beta1.Tenant, want authv1beta1.TenantCondition) error {
	if tenant.Spec.TenantCondition == want {
		return nil
	}
	patch := client.MergeFrom(tenant.DeepCopy())
	tenant.Spec.TenantCondition = want
	return s.r.Patch(ctx, tenant, patch)
}

// stageIdentity stages the commit of identity.yaml for cert, issued to
// tenant (action issue or renew, event reason once pushed), with changes; it
// names the overrides tenant was applied under (overrideTrailers). The step
// is held until the round's commit, for hundreds of peerings in an issuance:
// it keeps the strings it reports, not the peering's documents nor the parsed
// certificate.
func (s *session) stageIdentity(ctx context.Context, pe *protocol.Documents, tenant *authv1beta1.Tenant, action, reason string, cert *x509.Certificate, changes ...gitsync.FileChange) {
	consumer, serial, expires := pe.Consumer, cert.SerialNumber.Text(16), cert.NotAfter.UTC().Format(time.RFC3339)
	s.stage(ctx, gitpeerv1alpha1.ProviderRole, consumer, protocol.Message{
		Subject: fmt.Sprintf("%s identity of %s on %s (serial %s)", map[string]string{vocabulary.ActionIssueIdentity: "Issue", vocabulary.ActionRenewIdentity: "Renew"}[action], consumer, pe.Provider, serial),
		Action:  action, Provider: pe.Provider, Consumer: consumer,
		Extra: append([]protocol.Trailer{{Key: vocabulary.TrailerSerial, Value: serial}, {Key: vocabulary.TrailerExpires, Value: expires}}, overrideTrailers(pe, tenant, cert)...),
	}, func(_ context.Context, pushed bool) error {
		if pushed {
			what := "identity committed"
			if reason == gitpeerv1alpha1.IdentityRenewedReason {
				what = "renewed identity committed"
			}
			s.routine.add(reason, what, fmt.Sprintf("%s (serial %s, expires %s)", consumer, serial, expires))
		}
		return nil
	}, changes...)
}

// issuedOutcome is the outcome of an issued peering holding cert, by the
// Tenant's condition (provider.Standing).
func issuedOutcome(tenant *authv1beta1.Tenant, cert *x509.Certificate) outcome {
	phase, message := provider.Standing(tenant.Spec.TenantCondition, cert)
	return outcome{phase: phase, message: message}
}

// renew signs the stored Tenant's CSR anew and stores and records the
// certificate; stop is set as for sign.
func (s *session) renew(ctx context.Context, tenant *authv1beta1.Tenant, cert *x509.Certificate) (*issued, *outcome) {
	consumer := tenant.Name
	key, err := crypto.ParsePublicKey(tenant.Spec.PublicKey)
	if err != nil {
		return nil, &outcome{err: fmt.Errorf("stored Tenant of %s: %w", consumer, err)}
	}
	got, stop := s.sign(ctx, provider.Signing{Consumer: consumer, Request: tenant.Spec.CSR, Key: key, Signature: tenant.Spec.Signature, Renews: cert.SerialNumber.Text(16)},
		outcome{phase: gitpeerv1alpha1.PhaseIssued, message: "renewing: waiting for the certificate to be signed"})
	if stop != nil {
		return nil, stop
	}
	if err := s.storeIssued(ctx, tenant, tenant.Namespace, got.pem); err != nil {
		return nil, &outcome{err: err}
	}
	if err := s.recordIssued(ctx, consumer, got.cert); err != nil {
		return nil, &outcome{err: err}
	}
	return got, nil
}

// renewalStalled reports a renewal that did not complete this round (o says
// why); once the certificate is overdue (provider.RenewalOf) it raises the
// renewal-overdue metric, the round's RenewalOverdue Warning (one for every
// consumer overdue: an outage makes them all overdue at once) and the
// CertificatesRenewed condition.
func (s *session) renewalStalled(consumer string, cert *x509.Certificate, renewal provider.Renewal, o outcome) outcome {
	s.noteCertificate(gitpeerv1alpha1.ProviderRole, consumer, certRecord{expiry: cert.NotAfter.Unix(), renews: true, overdue: renewal.Overdue})
	if !renewal.Overdue {
		return o
	}
	serial, due, expires := cert.SerialNumber.Text(16), renewal.At.UTC().Format(time.RFC3339), cert.NotAfter.UTC().Format(time.RFC3339)
	msg := fmt.Sprintf("renewal of certificate %s of %s overdue: due at %s, expires at %s", serial, consumer, due, expires)
	s.mu.Lock()
	if s.overdue == nil {
		s.overdue = map[string]string{}
	}
	s.overdue[consumer] = msg
	s.mu.Unlock()
	s.routine.warn(gitpeerv1alpha1.RenewalOverdueReason, "certificate renewal overdue", fmt.Sprintf("%s (serial %s, due %s, expires %s)", consumer, serial, due, expires))
	o.reason = gitpeerv1alpha1.RenewalOverdueReason
	if o.err != nil {
		o.err = fmt.Errorf("%s: %w", msg, o.err)
	} else {
		o.message = joinNote(o.message, msg)
	}
	return o
}

// usedNonceRotated returns nonce.yaml for the consumer's nonce Secret, after
// rotating the nonce if the Tenant used it (provider.NonceUsed): a nonce is
// used once.
func (s *session) usedNonceRotated(ctx context.Context, consumer string, tenant *authv1beta1.Tenant) (gitsync.FileChange, error) {
	nonce, err := s.nonce(ctx, consumer, tenant.Namespace, false)
	if err != nil {
		return gitsync.FileChange{}, err
	}
	if provider.NonceUsed(tenant, nonce) {
		if nonce, err = s.rotateNonce(ctx, consumer, tenant.Namespace); err != nil {
			return gitsync.FileChange{}, err
		}
	}
	doc, err := protocol.NonceDocument(string(s.obj.Spec.ClusterID), consumer, nonce)
	if err != nil {
		return gitsync.FileChange{}, err
	}
	return gitsync.Put(protocol.Path{Provider: string(s.obj.Spec.ClusterID), Consumer: consumer, Kind: vocabulary.NonceFile}.String(), doc), nil
}

// revoke deletes everything this PeeringRepository issued to a consumer whose
// tenant.yaml left the branch, marks its certificates revoked (the key pin
// stays; see revokeConsumer), and removes identity.yaml, nonce.yaml and request.yaml from the
// branch: peering again takes a new request and a new approval.
func (s *session) revoke(ctx context.Context, pe *protocol.Documents) outcome {
	if err := s.revokeConsumer(ctx, pe.Consumer); err != nil {
		return outcome{err: err}
	}
	var changes []gitsync.FileChange
	for _, k := range []vocabulary.FileKind{vocabulary.IdentityFile, vocabulary.NonceFile, vocabulary.RequestFile} {
		changes = append(changes, gitsync.Delete(protocol.Path{Provider: pe.Provider, Consumer: pe.Consumer, Kind: k}.String()))
	}
	consumer := pe.Consumer // the step, held until the commit, keeps only what it reports
	s.stage(ctx, gitpeerv1alpha1.ProviderRole, consumer, protocol.Message{
		Subject: fmt.Sprintf("Revoke identity of %s on %s", consumer, pe.Provider),
		Body:    "tenant.yaml left the branch: the Tenant, its RoleBindings and its nonce were deleted. The request is used up: peering again takes a new request and a new approval.",
		Action:  vocabulary.ActionRevoke, Provider: pe.Provider, Consumer: consumer,
	}, func(_ context.Context, pushed bool) error {
		if pushed {
			s.routine.add(gitpeerv1alpha1.RevokedReason, "peering revoked", consumer)
		}
		return nil
	}, changes...)
	s.noteCertificate(gitpeerv1alpha1.ProviderRole, pe.Consumer, certRecord{})
	return outcome{phase: gitpeerv1alpha1.PhaseRevoked, message: "tenant.yaml removed: access revoked"}
}

// issuedConsumers lists the consumers holding a Tenant issued by this
// PeeringRepository. It reads their names from the informer's store, by the
// owner index: every round asks, and copying thousands of cached Tenants to
// read their names would cost more than the round.
func (s *session) issuedConsumers() ([]string, error) {
	objs, err := s.r.tenants.ByIndex(ownerIndex, string(s.obj.UID))
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(objs))
	for _, obj := range objs {
		o, ok := obj.(client.Object)
		if !ok {
			return nil, fmt.Errorf("cached Tenant is a %T", obj)
		}
		out = append(out, o.GetName())
	}
	return out, nil
}

// ensureTenantNamespace makes sure liqo-tenant-<peer> exists with Liqo's
// labels (Pod Security privileged included) and belongs to this PeeringRepository: it creates it, adopts a legacy
// one (see adoptIfLegacy) and refuses any other (errNotOurs).
func (s *session) ensureTenantNamespace(ctx context.Context, peer, ns string) error {
	obj, err := s.tenantNamespace(ctx, peer, ns)
	if err != nil || obj != nil {
		return err
	}
	labels := authv1beta1.TenantNamespaceLabels(authv1beta1.ClusterID(peer))
	labels[vocabulary.ManagedByLabel], labels[vocabulary.OwnerLabel] = vocabulary.ManagedBy, string(s.obj.UID)
	return s.r.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: labels,
		Annotations: map[string]string{vocabulary.ModeAnnotation: s.modeName()}}})
}

// nonce returns the consumer's current nonce from the liqo-nonce Secret,
// creating one unless onlyExisting is set (then "" means none). In Liqo mode
// the Secret is created empty, for Liqo's nonce creator to fill: "" until then.
func (s *session) nonce(ctx context.Context, consumer, ns string, onlyExisting bool) (string, error) {
	secret := &corev1.Secret{}
	err := s.r.Get(ctx, client.ObjectKey{Namespace: ns, Name: authv1beta1.NonceSecretName}, secret)
	switch {
	case err == nil:
		return string(secret.Data[authv1beta1.NonceSecretField]), nil
	case !apierrors.IsNotFound(err) || onlyExisting:
		return "", client.IgnoreNotFound(err)
	case s.liqoMode():
		return "", s.createLiqoNonce(ctx, consumer, ns)
	}
	return s.rotateNonce(ctx, consumer, ns)
}

// rotateNonce stores a fresh nonce in the liqo-nonce Secret.
func (s *session) rotateNonce(ctx context.Context, consumer, ns string) (string, error) {
	nonce := crypto.GenerateNonce()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: authv1beta1.NonceSecretName}}
	_, err := controllerutil.CreateOrUpdate(ctx, s.r.Client, secret, func() error {
		metav1.SetMetaDataLabel(&secret.ObjectMeta, authv1beta1.NonceSecretLabel, authv1beta1.TrueValue)
		metav1.SetMetaDataLabel(&secret.ObjectMeta, authv1beta1.RemoteClusterIDLabel, consumer)
		metav1.SetMetaDataLabel(&secret.ObjectMeta, vocabulary.ManagedByLabel, vocabulary.ManagedBy)
		metav1.SetMetaDataLabel(&secret.ObjectMeta, vocabulary.OwnerLabel, string(s.obj.UID))
		secret.Data = map[string][]byte{authv1beta1.NonceSecretField: []byte(nonce)}
		return nil
	})
	return nonce, err
}

// syncBinding applies provider.PlanBindings in the consumer's tenant
// namespace: the consumer bound to the configured ClusterRole, and this
// PeeringRepository's other bindings there removed (to a previous
// clusterRoleName, or all of them when the Tenant is Drained).
func (s *session) syncBinding(ctx context.Context, consumer, ns string, condition authv1beta1.TenantCondition) error {
	var owned rbacv1.RoleBindingList
	if err := s.r.List(ctx, &owned, client.InNamespace(ns), s.ownerLabels()); err != nil {
		return err
	}
	names := make([]string, len(owned.Items))
	for i := range owned.Items {
		names[i] = owned.Items[i].Name
	}
	plan := provider.PlanBindings(names, consumer, s.obj.Spec.Provider.GetClusterRoleName(), condition)
	for i := range owned.Items {
		if plan.Deletes(owned.Items[i].Name) {
			if err := s.r.Delete(ctx, &owned.Items[i]); client.IgnoreNotFound(err) != nil {
				return err
			}
		}
	}
	if plan.Bind == nil {
		return nil
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: plan.Bind.Name}}
	_, err := controllerutil.CreateOrUpdate(ctx, s.r.Client, rb, func() error {
		metav1.SetMetaDataLabel(&rb.ObjectMeta, authv1beta1.RemoteClusterIDLabel, consumer)
		metav1.SetMetaDataLabel(&rb.ObjectMeta, vocabulary.ManagedByLabel, vocabulary.ManagedBy)
		metav1.SetMetaDataLabel(&rb.ObjectMeta, vocabulary.OwnerLabel, string(s.obj.UID))
		rb.RoleRef, rb.Subjects = plan.Bind.RoleRef, plan.Bind.Subjects
		return nil
	})
	return err
}

// storeIssued records the issued certificate in the Tenant's status, as Liqo does.
func (s *session) storeIssued(ctx context.Context, tenant *authv1beta1.Tenant, ns string, cert []byte) error {
	ca, err := s.providerCA(ctx)
	if err != nil {
		return err
	}
	patch := client.MergeFrom(tenant.DeepCopy())
	tenant.Status.TenantNamespace = ns
	// proxyURL = spec.proxyURL, as Liqo's tenant controller sets it (CheckTenant allowed it).
	tenant.Status.AuthParams = &authv1beta1.AuthParams{CA: ca, SignedCRT: cert, APIServer: s.apiServer(), ProxyURL: tenant.Spec.ProxyURL}
	return s.r.Status().Patch(ctx, tenant, patch)
}

// providerCA is the CA consumers must trust: spec.provider.caSecretRef's
// ca.crt, or the CA of the agent's own connection to its API server.
func (s *session) providerCA(ctx context.Context) ([]byte, error) {
	if ref := s.obj.Spec.Provider.CASecretRef; ref != nil {
		secret, err := s.r.secret(ctx, s.obj.Namespace, ref.Name)
		if err != nil {
			return nil, err
		}
		return secret.Data["ca.crt"], nil
	}
	if len(s.r.Config.CAData) > 0 {
		return s.r.Config.CAData, nil
	}
	return os.ReadFile(s.r.Config.CAFile)
}

func (s *session) apiServer() string {
	if s.obj.Spec.Provider.APIServer != "" {
		return s.obj.Spec.Provider.APIServer
	}
	return s.r.Config.Host
}

// publishTerms stages the provider's terms.yaml for the round's commit (what merging a tenant.yaml
// grants: the tenant ClusterRole and its rules, the tenant namespace, the
// certificate lifetime and renewal, the API server) when the branch holds
// other terms, invalid ones or none. Consumers quote it in their pull
// requests; the offline checks compare proposals with it. A failure is
// reported (event, log) and blocks nothing.
func (s *session) publishTerms(ctx context.Context) {
	if err := s.writeTerms(ctx); err != nil {
		log.FromContext(ctx).Error(err, "publishing the provider's terms")
		s.r.event(s.obj, corev1.EventTypeWarning, vocabulary.ReasonTermsFailed, "publishing %s: %v", protocol.TermsPath(string(s.obj.Spec.ClusterID)), err)
	}
}

// writeTerms builds the terms from the provider's spec and the tenant
// ClusterRole it binds (termsSpec), and stages them for the round's commit
// unless the branch holds them already.
func (s *session) writeTerms(ctx context.Context) error {
	me := string(s.obj.Spec.ClusterID)
	spec, err := s.termsSpec(ctx)
	if err != nil {
		return err
	}
	if published, err := s.loaded.Terms(me); err == nil && equality.Semantic.DeepEqual(published.Spec, spec) {
		return nil
	}
	doc, err := protocol.TermsDocument(spec)
	if err != nil {
		return err
	}
	s.stage(ctx, gitpeerv1alpha1.ProviderRole, "", protocol.Message{Action: vocabulary.ActionPublishTerms, Subject: fmt.Sprintf("Publish the terms of %s", me), Provider: me},
		nil, gitsync.Put(protocol.TermsPath(me), doc))
	return nil
}
