package reconciler

import (
	"context"
	"fmt"
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
	"github.com/gitpeer/gitpeer/reconciler/plan/provider"
	"github.com/gitpeer/gitpeer/reconciler/whoami"
	"github.com/gitpeer/gitpeer/vocabulary"
)

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
var joinNote = provider.JoinNote

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
