package reconciler

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/reconciler/plan/provider"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// A provider's step for one peering, once planProvide decided it, is three
// stages with plain data between them: observeProvider reads (a
// provider.Snapshot), the step's planner in package provider decides (a
// provider.Plan), applyProvider writes. In Liqo mode the steps that issue
// and keep a certificate have their own planners (provider.PlanLiqoIssue,
// provider.PlanLiqoMaintain) and reads (observeLiqo).

// decision is a peering's step observed and planned, not yet applied; done
// when the step ended before a plan (its opening settled or stopped it, or a
// read failed).
type decision struct {
	plan       provider.Plan
	revocation *provider.RevocationSnapshot
	done       *outcome
}

// decide applies the actions that open p's step, then observes and plans
// the step unless planning settled it.
func (s providerStep) decide(ctx context.Context, p providing) decision {
	if len(p.opening) > 0 {
		if o, _, stopped := s.applyProvider(ctx, p.pe, p.ns, p.tenant, provider.Plan{Actions: p.opening}); stopped {
			return decision{done: &o}
		}
	}
	if p.done != nil {
		return decision{done: p.done}
	}
	now := s.r.Now()
	snap, err := s.observeProvider(ctx, p, now)
	if err != nil {
		return decision{done: &outcome{err: err}}
	}
	plan, err := planStep(p.step, snap, now)
	if err != nil {
		return decision{done: &outcome{err: err}}
	}
	return decision{plan: plan, revocation: snap.Revocation}
}

// planStep is the planner of step, from snap.
func planStep(step provider.Step, snap provider.Snapshot, now time.Time) (provider.Plan, error) {
	switch {
	case step == provider.FailClosed:
		return provider.PlanFailClosed(snap), nil
	case step == provider.SkipInvalid:
		return provider.PlanSkip(snap), nil
	case step == provider.Revoke:
		return provider.PlanRevoke(snap, now), nil
	case step == provider.OfferNonce:
		return provider.PlanOffer(snap), nil
	case step == provider.Issue && snap.Liqo:
		return provider.PlanLiqoIssue(snap, now), nil
	case step == provider.Issue:
		return provider.PlanIssue(snap, now), nil
	case step == provider.Maintain && snap.Liqo:
		return provider.PlanLiqoMaintain(snap, now), nil
	case step == provider.Maintain:
		return provider.PlanMaintain(snap, now), nil
	}
	return provider.Plan{}, fmt.Errorf("step %s has no planner", step)
}

// apply applies d, p's step as decide left it.
func (s providerStep) apply(ctx context.Context, p providing, d decision) outcome {
	if d.done != nil {
		return *d.done
	}
	o, _, _ := s.applyProvider(ctx, p.pe, p.ns, p.tenant, d.plan)
	if d.revocation != nil {
		s.liqoProvider().keepWatched(*d.revocation, o.err)
	}
	return o
}

// stageRecordActions stages the records d's plan writes (its key pin and
// certificates: stageRecords) and takes those actions out of the plan,
// which flushRecords makes durable before apply runs the rest.
func (s providerStep) stageRecordActions(ctx context.Context, consumer string, d *decision) {
	if d.done != nil {
		return
	}
	rest := d.plan.Actions[:0:0]
	for _, a := range d.plan.Actions {
		var err error
		switch a := a.(type) {
		case provider.RecordKeyPin:
			err = s.stageRecords(ctx, consumer, keyPinned(a.Pin))
		case provider.RecordSerial:
			err = s.stageRecords(ctx, consumer, certificatesIssued(a.Certificate))
		default:
			rest = append(rest, a)
			continue
		}
		if err != nil {
			d.done = &outcome{err: err}
			return
		}
	}
	d.plan.Actions = rest
}

// observeProvider makes the reads of p's step beyond planProvide's (the
// tenant namespace and the Tenant), at now: for a request to answer, the
// nonce Secret, unless a quiet round finds nonce.yaml on the branch or there
// is no tenant namespace to hold it; for an issuance, what verifying the
// Tenant reads (observeTenant) and what issuing does (observeIssued); for an
// issued peering, what keeping it does; in Liqo mode, observeLiqo's; for a
// directory failing closed, the bindings to remove.
func (s providerStep) observeProvider(ctx context.Context, p providing, now time.Time) (provider.Snapshot, error) {
	snap := provider.Snapshot{Docs: p.pe, Liqo: s.liqoMode(), Quiet: s.quiet(), Namespace: p.namespace, Tenant: p.tenant}
	if snap.Liqo && (p.step == provider.Issue || p.step == provider.Maintain) {
		return s.liqoProvider().observeLiqo(ctx, p, snap)
	}
	var err error
	// read: the step reads the nonce Secret, or knows it absent.
	read := false
	switch p.step {
	case provider.FailClosed:
		if p.tenant != nil {
			err = s.observeBindings(ctx, p, &snap)
		}
	case provider.OfferNonce:
		if read = p.pe.Nonce == nil || !snap.Quiet; read && p.namespace {
			snap.Nonce, err = s.observeNonce(ctx, p.ns)
		}
	case provider.Issue:
		if snap, err = s.observeTenant(ctx, p.pe, p.ns, p.tenant); err == nil {
			read, err = true, s.observeIssued(ctx, p, &snap, true)
		}
	case provider.Maintain:
		_, due := provider.DueCertificate(p.tenant, now)
		read, err = true, s.observeIssued(ctx, p, &snap, due)
	case provider.Revoke:
		var rev provider.RevocationSnapshot
		rev, err = s.liqoProvider().observeRevocation(ctx, p.pe.Consumer)
		snap.Revocation = &rev
	}
	// A new nonce Secret, or a rotation of the used nonce (standalone), holds a fresh nonce.
	if read && err == nil && !snap.Liqo && (snap.Nonce == nil || p.step != provider.OfferNonce) {
		snap.FreshNonce = crypto.GenerateNonce()
	}
	return snap, err
}

// observeIssued makes the reads of issuing a certificate to p's consumer,
// or keeping it: the RoleBindings owned in its tenant namespace; when signs,
// the CSRs labelled for it (read once per round for every peering that
// signs: labelledCSRs) and the agent's user; when one of them holds a
// certificate, the CA to store with it; and the nonce, when the round is
// not quiet or a certificate may be committed.
func (s providerStep) observeIssued(ctx context.Context, p providing, snap *provider.Snapshot, signs bool) error {
	var err error
	snap.Owner, snap.TTL, snap.APIServer = string(s.obj.UID), s.obj.Spec.Provider.GetCertificateTTL(), s.apiServer()
	if err = s.observeBindings(ctx, p, snap); err != nil {
		return err
	}
	issued := false
	if signs {
		if snap.Agent, err = s.r.agentUser(ctx); err != nil {
			return fmt.Errorf("learning the agent's own user name: %w", err)
		}
		if snap.CSRs, err = s.labelledCSRs(ctx, p.pe.Consumer); err != nil {
			return err
		}
		for _, csr := range snap.CSRs {
			issued = issued || len(csr.Status.Certificate) > 0
		}
		if issued {
			if snap.CA, err = s.providerCA(ctx); err != nil {
				return err
			}
		}
	}
	if snap.Nonce == nil && (!snap.Quiet || issued) {
		snap.Nonce, err = s.observeNonce(ctx, p.ns)
	}
	return err
}

// observeBindings reads the RoleBindings owned in p's tenant namespace and
// the ClusterRole the consumer is bound to.
func (s providerStep) observeBindings(ctx context.Context, p providing, snap *provider.Snapshot) error {
	var err error
	snap.ClusterRole = s.obj.Spec.Provider.GetClusterRoleName()
	snap.Bindings, err = s.ownedBindings(ctx, p.ns)
	return err
}

// observeNonce reads the consumer's nonce in its liqo-nonce Secret in ns; nil when there is none.
func (s providerStep) observeNonce(ctx context.Context, ns string) (*string, error) {
	secret, err := s.consumerStep().secretIfExists(ctx, ns, authv1beta1.NonceSecretName)
	if secret == nil {
		return nil, err
	}
	nonce := string(secret.Data[authv1beta1.NonceSecretField])
	return &nonce, nil
}

// observeTenant makes the reads of verifying the Tenant merged in pe: the
// provider's nonce for the consumer (its Secret, never created here), its
// records and its override annotations.
func (s providerStep) observeTenant(ctx context.Context, pe *protocol.Documents, ns string, current *authv1beta1.Tenant) (provider.Snapshot, error) {
	annotations := s.obj.GetAnnotations()
	snap := provider.Snapshot{Docs: pe, Liqo: s.liqoMode(), Quiet: s.quiet(), Tenant: current,
		Rekey:         annotations[gitpeerv1alpha1.RekeyAnnotationPrefix+pe.Consumer],
		Revival:       annotations[gitpeerv1alpha1.RevivalAnnotationPrefix+pe.Consumer],
		AllowProxyURL: s.obj.Spec.Provider.AllowProxyURL,
	}
	var err error
	if snap.Nonce, err = s.observeNonce(ctx, ns); err != nil {
		return snap, err
	}
	snap.Records, err = s.records(ctx, pe.Consumer)
	return snap, err
}

// applyProvider applies plan, a step for the peering pe whose tenant
// namespace is ns and applied Tenant current (nil if none), in its order.
// The first action that fails stops it (stopped), with the peering's
// outcome; otherwise the outcome is the plan's, and tenant the Tenant an
// ApplyTenant wrote. Git changes are staged for the round's one commit,
// with the events to record once they are on the branch.
func (s providerStep) applyProvider(ctx context.Context, pe *protocol.Documents, ns string, current *authv1beta1.Tenant, plan provider.Plan) (o outcome, tenant *authv1beta1.Tenant, stopped bool) {
	consumer := pe.Consumer
	tenant = current
	for _, a := range plan.Actions {
		var err error
		switch a := a.(type) {
		case provider.EnsureNamespace:
			if err := s.ensureTenantNamespace(ctx, consumer, ns); err != nil {
				return s.owning().skipForeign(pe, err), nil, true
			}
		case provider.AdoptNamespace, provider.AdoptLiqoNamespace:
			err = s.owning().adoptObserved(ctx, consumer, ns, a)
		case provider.PutNonceSecret:
			err = s.putNonce(ctx, consumer, ns, a)
		case provider.CreateLiqoNonce:
			err = s.liqoProvider().createLiqoNonce(ctx, consumer, ns)
		case provider.RecordLiqoCertificates, provider.MarkRevoked, provider.DeleteReplicated, provider.DeleteOwned, provider.DeleteLiqoCaches, provider.DeleteSliceCaches:
			err = s.liqoProvider().applyRevocation(ctx, consumer, ns, a)
		case provider.Stage:
			s.branchIO().stage(gitpeerv1alpha1.ProviderRole, consumer, a.Message, a.Routine, a.Changes...)
		case provider.RecordSliceCertificates:
			err = s.liqoProvider().recordSliceCertificates(ctx, consumer, ns)
		case provider.RecordWatchedSlices:
			err = s.liqoProvider().recordWatchedSlices(ctx, consumer)
		case provider.RecordKeyPin:
			err = s.recordKeyPin(ctx, consumer, a.Pin)
		case provider.CheckStrayTenant:
			if stray := s.liqoProvider().strayLiqoTenant(ctx, consumer, ns); stray != nil {
				return *stray, nil, true
			}
		case provider.DropStaleLiqoCache:
			err = s.liqoProvider().dropStaleLiqoCache(ctx, pe, ns)
		case provider.ApplyTenant:
			tenant, err = s.putTenant(ctx, consumer, ns, a)
		case provider.RemoveAnnotation:
			err = s.removeAnnotation(ctx, a.Key)
		case provider.RecordMode:
			err = s.consumerStep().patchTenantNamespace(ctx, ns, func(m *metav1.ObjectMeta) { metav1.SetMetaDataAnnotation(m, vocabulary.ModeAnnotation, a.Mode) })
		case provider.Log:
			log.FromContext(ctx).Info(a.Message, a.KeysAndValues...)
		case provider.Event:
			s.r.emit(s.obj, a)
		case provider.SetTenantCondition:
			patch := client.MergeFrom(tenant.DeepCopy())
			tenant.Spec.TenantCondition = a.Condition
			err = s.r.Patch(ctx, tenant, patch)
		case provider.Bind:
			err = s.applyBindings(ctx, consumer, ns, a.Bindings)
		case provider.QueueCSR:
			s.issuance.queue(csrRequest{key: resultKey(gitpeerv1alpha1.ProviderRole, consumer), csr: a.CSR})
		case provider.RecordSerial:
			err = s.recordIssued(ctx, consumer, a.Certificate)
		case provider.StoreIssued:
			patch := client.MergeFrom(tenant.DeepCopy())
			tenant.Status.TenantNamespace, tenant.Status.AuthParams = ns, &a.AuthParams
			err = s.r.Status().Patch(ctx, tenant, patch)
		case provider.NoteCertificate, provider.NoteRenewal, provider.NoteOverdue:
			s.note(consumer, a)
		default:
			err = fmt.Errorf("provider action %T has no applier", a)
		}
		if err != nil {
			return outcome{err: err}, nil, true
		}
	}
	return providerOutcome(plan.Outcome), tenant, false
}

// emit records e, an event the provider's planners state, on obj.
func (r *PeeringRepositoryReconciler) emit(obj *gitpeerv1alpha1.PeeringRepository, e provider.Event) {
	eventType := corev1.EventTypeNormal
	if e.Warning {
		eventType = corev1.EventTypeWarning
	}
	r.eventAbout(obj, eventType, e.Reason, e.About, "%s", e.Message)
}

// note applies a, one of the provider's notes for the round's requeue,
// memory, metrics and condition about consumer.
func (s providerStep) note(consumer string, a provider.Action) {
	switch a := a.(type) {
	case provider.NoteCertificate:
		s.roundReport().noteCertificate(gitpeerv1alpha1.ProviderRole, consumer, certRecord{expiry: a.Expiry, renews: a.Renews, overdue: a.Overdue})
	case provider.NoteRenewal:
		s.roundReport().noteRenewalOf(consumer, a.At)
	case provider.NoteOverdue:
		s.roundReport().noteOverdue(consumer, a.Message, a.Item)
	}
}

// providerOutcome is the peering's outcome for the planner's o.
func providerOutcome(o provider.Outcome) outcome {
	return outcome{phase: o.Phase, message: o.Message, reason: o.Reason, err: o.Err}
}

// putTenant creates or updates the consumer's Tenant in ns as a says,
// labelled as this PeeringRepository's.
func (s providerStep) putTenant(ctx context.Context, consumer, ns string, a provider.ApplyTenant) (*authv1beta1.Tenant, error) {
	tenant := &authv1beta1.Tenant{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: consumer}}
	_, err := controllerutil.CreateOrUpdate(ctx, s.r.Client, tenant, func() error {
		metav1.SetMetaDataLabel(&tenant.ObjectMeta, authv1beta1.RemoteClusterIDLabel, consumer)
		metav1.SetMetaDataLabel(&tenant.ObjectMeta, vocabulary.ManagedByLabel, vocabulary.ManagedBy)
		metav1.SetMetaDataLabel(&tenant.ObjectMeta, vocabulary.OwnerLabel, string(s.obj.UID))
		recordOverrides(tenant, a.Used, a.Applied)
		tenant.Spec = a.Spec
		return nil
	})
	return tenant, err
}
