package reconciler

import (
	"context"
	"crypto/x509"
	"fmt"
	"strings"
	"sync"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/reconciler/provider"
	"github.com/gitpeer/gitpeer/reconciler/whoami"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// issued is a certificate the signer issued and the agent verified.
type issued struct {
	pem  []byte
	cert *x509.Certificate
	note string // foreign CSRs ignored on the way, for the peering's message
}

// Bounds of the round's CSR work.
const (
	// csrListPage is how many CSRs one page of the round's CSR list holds.
	csrListPage = 500
	// csrWorkers is how many CSR creations and approvals run at once.
	csrWorkers = 16
)

// issuance is a round's CSR work: the CSRs labelled for the consumers whose
// steps sign (expect), read from the API server once, at the round's first
// signing, and the CSRs the round's signings create or approve once every
// peering was planned (requestCertificates).
type issuance struct {
	mu       sync.Mutex // the peerings of a round sign at once (provideAll)
	signers  map[string]bool
	listed   bool
	csrs     map[string][]*certificatesv1.CertificateSigningRequest // by consumer label
	requests []csrRequest
}

// expect names the consumers whose steps sign in this round: the round's CSR
// list keeps theirs alone.
func (is *issuance) expect(consumers []string) {
	is.mu.Lock()
	defer is.mu.Unlock()
	is.signers = map[string]bool{}
	for _, c := range consumers {
		is.signers[c] = true
	}
}

// queue adds rq to the CSRs the round creates or approves.
func (is *issuance) queue(rq csrRequest) {
	is.mu.Lock()
	defer is.mu.Unlock()
	is.requests = append(is.requests, rq)
}

// take returns the CSRs queued and forgets the round's CSRs.
func (is *issuance) take() []csrRequest {
	is.mu.Lock()
	defer is.mu.Unlock()
	requests := is.requests
	is.signers, is.listed, is.csrs, is.requests = nil, false, nil, nil
	return requests
}

// csrRequest is a CSR of the agent's own that a signing creates (csr has no
// name yet) or approves.
type csrRequest struct {
	key string // the peering's result key (resultKey)
	csr *certificatesv1.CertificateSigningRequest
}

// labelledCSRs returns the CSRs labelled for consumer, read uncached: a CSR
// created in an earlier round must be seen, or a second one would be made.
// Every CSR labelled for a consumer is read once per round, page by page,
// keeping only those of the consumers whose steps sign (expect): a round
// holds the CSRs of the peerings it issues or renews, not of every peering.
// The peerings that need them while they are read wait for them. A signing
// the round did not expect (a renewal that fell due while the round ran)
// reads its consumer's CSRs alone.
func (s *session) labelledCSRs(ctx context.Context, consumer string) ([]*certificatesv1.CertificateSigningRequest, error) {
	is := &s.issuance
	is.mu.Lock()
	defer is.mu.Unlock()
	if !is.signers[consumer] {
		csrs, err := s.listCSRs(ctx, client.MatchingLabels{vocabulary.ConsumerLabel: consumer}, func(c string) bool { return c == consumer })
		return csrs[consumer], err
	}
	if !is.listed {
		csrs, err := s.listCSRs(ctx, client.HasLabels{vocabulary.ConsumerLabel}, func(c string) bool { return is.signers[c] })
		if err != nil {
			return nil, err
		}
		is.listed, is.csrs = true, csrs
	}
	return is.csrs[consumer], nil
}

// listCSRs reads the CSRs selector selects from the API server, csrListPage
// at a time, and keeps, by consumer label, those of the consumers keep
// accepts, trimmed (trimCSR).
func (s *session) listCSRs(ctx context.Context, selector client.ListOption, keep func(consumer string) bool) (map[string][]*certificatesv1.CertificateSigningRequest, error) {
	csrs := map[string][]*certificatesv1.CertificateSigningRequest{}
	for next := ""; ; {
		var page certificatesv1.CertificateSigningRequestList
		if err := s.r.apiReader().List(ctx, &page, selector, client.Limit(csrListPage), client.Continue(next)); err != nil {
			return nil, err
		}
		for i := range page.Items {
			if c := page.Items[i].Labels[vocabulary.ConsumerLabel]; keep(c) {
				csr := page.Items[i] // a copy: a pointer into the page would keep all of it
				trimCSR(&csr)
				csrs[c] = append(csrs[c], &csr)
			}
		}
		if next = page.Continue; next == "" {
			return csrs, nil
		}
	}
}

// trimCSR drops from a listed CSR what the round never reads, kept for the
// whole round at thousands of CSRs: its managed fields and its requester's
// groups, extra attributes and UID (only the user name is compared). An
// approval sent back without them changes nothing: the API server keeps a
// CSR's spec on an approval update.
func trimCSR(csr *certificatesv1.CertificateSigningRequest) {
	csr.ManagedFields = nil
	csr.Spec.Groups, csr.Spec.Extra, csr.Spec.UID = nil, nil, ""
}

// sign gets sg's certificate (owner and lifetime: this PeeringRepository's) from the cluster's signer through a CSR of the
// agent's own, and verifies it is for the Tenant's key and subject. It only
// ever approves a CSR its own user requested with exactly sg's properties,
// found by those properties (so a create whose response was lost is found
// again, never doubled); it creates one only when there is none. CSRs
// labelled for the consumer that others requested are reported and left
// alone. The creation or approval is queued for requestCertificates, which
// runs those of every peering of the round at once; the round does not wait
// for the signer: the CSR's update reconciles again (watchOwnCSRs). stop is
// set when the caller must not go on: waiting (then the outcome is waiting),
// refused, or an error.
func (s *session) sign(ctx context.Context, sg provider.Signing, waiting outcome) (got *issued, stop *outcome) {
	sg.Owner, sg.TTL = string(s.obj.UID), s.obj.Spec.Provider.GetCertificateTTL()
	me, err := s.r.agentUser(ctx)
	if err != nil {
		return nil, &outcome{err: fmt.Errorf("learning the agent's own user name: %w", err)}
	}
	labelled, err := s.labelledCSRs(ctx, sg.Consumer)
	if err != nil {
		return nil, &outcome{err: err}
	}
	plan := provider.PlanSigning(labelled, me, sg)
	var foreign []string
	for _, csr := range plan.Foreign {
		foreign = append(foreign, csr.Name)
		s.r.eventAbout(s.obj, corev1.EventTypeWarning, vocabulary.ReasonForeignCSR, csr.Name,
			"CSR %s is labelled for consumer %s but was requested by %q, not by the agent (%q): not approved, left alone", csr.Name, sg.Consumer, csr.Spec.Username, me)
	}
	note := ""
	if len(foreign) > 0 {
		note = fmt.Sprintf("ignored CSR(s) not requested by the agent: %s", strings.Join(foreign, ", "))
	}
	key, csr := resultKey(gitpeerv1alpha1.ProviderRole, sg.Consumer), plan.CSR
	switch plan.Step {
	case provider.CreateCSR:
		s.issuance.queue(csrRequest{key: key, csr: provider.NewCSR(sg)})
		waiting.message = joinNote(waiting.message+" (CSR requested)", note)
		return nil, &waiting
	case provider.CSRRefused:
		msg := fmt.Sprintf("CSR %s for %s was %s; the agent requests no other while it exists: delete it to retry", csr.Name, sg.Consumer, plan.Why)
		s.r.eventAbout(s.obj, corev1.EventTypeWarning, vocabulary.ReasonCSRFailed, csr.Name, "%s", msg)
		return nil, &outcome{phase: gitpeerv1alpha1.PhaseFailed, message: joinNote(msg, note)}
	case provider.ApproveCSR, provider.WaitForCertificate:
		if plan.Step == provider.ApproveCSR {
			s.issuance.queue(csrRequest{key: key, csr: csr})
		}
		waiting.message = joinNote(fmt.Sprintf("%s (CSR %s)", waiting.message, csr.Name), note)
		return nil, &waiting
	case provider.CertificateRejected:
		msg := fmt.Sprintf("certificate of CSR %s not stored nor committed: %s", csr.Name, plan.Why)
		s.r.eventAbout(s.obj, corev1.EventTypeWarning, vocabulary.ReasonCertificateRejected, csr.Name, "%s", msg)
		return nil, &outcome{phase: gitpeerv1alpha1.PhaseFailed, message: joinNote(msg, note)}
	}
	return &issued{pem: csr.Status.Certificate, cert: plan.Certificate, note: note}, nil
}

// requestCertificates creates and approves the CSRs the round's signings
// queued, csrWorkers at a time, and fails the peerings whose CSR could not be
// created or approved (the round is retried for them). The certificates are
// collected in a later round, woken by the CSR watch.
func (s *session) requestCertificates(ctx context.Context, results []result) {
	requests := s.issuance.take()
	errs := make([]error, len(requests))
	forEachAtOnce(len(requests), csrWorkers, func(i int) { errs[i] = s.requestCSR(ctx, requests[i].csr) })
	failed := map[string]error{}
	for i, rq := range requests {
		if errs[i] != nil {
			failed[rq.key] = errs[i]
		}
	}
	failPeerings(results, failed)
}

// requestCSR creates csr unless it has a name, and approves it.
func (s *session) requestCSR(ctx context.Context, csr *certificatesv1.CertificateSigningRequest) error {
	if csr.Name == "" {
		if err := s.r.Create(ctx, csr); err != nil {
			return fmt.Errorf("creating the CSR: %w", err)
		}
	}
	if err := s.approve(ctx, csr); err != nil {
		return fmt.Errorf("approving CSR %s: %w", csr.Name, err)
	}
	return nil
}

// approve approves csr, which must be one of the agent's own (provider.OwnCSR). The
// update carries csr's resourceVersion, so a CSR deleted and recreated under
// the same name in between is never approved.
func (s *session) approve(ctx context.Context, csr *certificatesv1.CertificateSigningRequest) error {
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue,
		Reason: vocabulary.CSRApprovedReason, Message: "Tenant merged on the branch and verified by gitpeer",
	})
	return s.r.SubResource("approval").Update(ctx, csr)
}

// joinNote appends note, if any, to msg.
func joinNote(msg, note string) string {
	if note == "" {
		return msg
	}
	return msg + "; " + note
}

// agentUser is the user name the agent's own client authenticates as (what
// the API server records as a CSR's requester), learned once with a
// SelfSubjectReview.
func (r *PeeringRepositoryReconciler) agentUser(ctx context.Context) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.user != "" {
		return r.user, nil
	}
	user, err := whoami.User(ctx, r.Config)
	if err != nil {
		return "", err
	}
	if user == "" {
		return "", fmt.Errorf("the API server reports no user name for the agent")
	}
	r.user = user
	return user, nil
}

// watchOwnCSRs makes a change of a CSR the agent created (labelled for a
// consumer, with a PeeringRepository's owner label) reconcile that
// PeeringRepository: an approval or an issued certificate is acted on at
// once, without polling for it.
func (r *PeeringRepositoryReconciler) watchOwnCSRs(b *builder.Builder) *builder.Builder {
	labelled := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetLabels()[vocabulary.ConsumerLabel] != "" && o.GetLabels()[vocabulary.OwnerLabel] != ""
	})
	// Metadata only: the agent reads CSRs from the API server (labelledCSRs), the cache only wakes it.
	return b.Watches(&certificatesv1.CertificateSigningRequest{}, handler.EnqueueRequestsFromMapFunc(r.csrOwner), builder.WithPredicates(labelled), builder.OnlyMetadata)
}

// csrOwner maps a CSR to the PeeringRepository of its owner label, and marks
// the peering of its consumer changed.
func (r *PeeringRepositoryReconciler) csrOwner(ctx context.Context, csr client.Object) []reconcile.Request {
	r.rounds.noteChanged(consumersOf(csr)...) // the next round visits its peering
	var all gitpeerv1alpha1.PeeringRepositoryList
	if err := r.List(ctx, &all); err != nil {
		log.FromContext(ctx).Error(err, "mapping a CSR to its PeeringRepository", "csr", csr.GetName())
		return nil
	}
	for _, o := range all.Items {
		if string(o.UID) == csr.GetLabels()[vocabulary.OwnerLabel] {
			return []reconcile.Request{{NamespacedName: client.ObjectKeyFromObject(&o)}}
		}
	}
	return nil
}
