package reconciler

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"

	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/gitsync"
)

// The three kinds of round failures, after Flux's source-controller. Each
// carries the reason of its condition and event; the kind decides what comes
// next (see resultOf, markFailure and report).

// Stalling is a failure only a person can fix: credentials refused, a host key
// or certificate that does not match, a missing repository or branch, a
// rewritten history, an unsigned commit. Stalled and Ready are set False with
// the reason and a message saying what to do, one Warning event is recorded,
// and the round is not retried with backoff: the PeeringRepository is checked
// again at spec.interval, since the fix usually lies outside it.
type Stalling struct {
	Reason string
	Err    error
}

// Error returns the cause's message.
func (e *Stalling) Error() string { return e.Err.Error() }

// Unwrap returns the cause.
func (e *Stalling) Unwrap() error { return e.Err }

// Waiting is a round that cannot go on until something else happens (a Secret
// to be created); it is retried after RequeueAfter, without backoff, and
// reported with a Normal event.
type Waiting struct {
	Reason       string
	Err          error
	RequeueAfter time.Duration
}

// Error returns the cause's message.
func (e *Waiting) Error() string { return e.Err.Error() }

// Unwrap returns the cause.
func (e *Waiting) Unwrap() error { return e.Err }

// Generic is a transient failure (Git server unreachable, API server
// unavailable, a push that kept losing races): it is returned to
// controller-runtime, which retries with exponential backoff
// (ControllerOptions.MinRetryDelay..MaxRetryDelay), and reported with a
// Warning event.
type Generic struct {
	Reason string
	Err    error
}

// Error returns the cause's message.
func (e *Generic) Error() string { return e.Err.Error() }

// Unwrap returns the cause.
func (e *Generic) Unwrap() error { return e.Err }

// gitFailure is what the agent says about one gitsync error class.
type gitFailure struct {
	sentinel error
	reason   string
	stall    bool
	// hint says what to do, given the repository URL and the credentials' name.
	hint func(url, secret string) string
}

var gitFailures = []gitFailure{
	{gitsync.ErrAuthFailed, gitpeerv1alpha1.AuthenticationFailedReason, true, func(url, secret string) string {
		return fmt.Sprintf("update the credentials in %s or grant them access to %s", secret, url)
	}},
	{gitsync.ErrHostKeyMismatch, gitpeerv1alpha1.HostKeyMismatchReason, true, func(url, secret string) string {
		return fmt.Sprintf("check the SSH host key of %s out of band and put it in known_hosts of %s", url, secret)
	}},
	{gitsync.ErrCertificateUntrusted, gitpeerv1alpha1.CertificateUntrustedReason, true, func(url, secret string) string {
		return fmt.Sprintf("add the CA that signed the certificate of %s as ca.crt to %s", url, secret)
	}},
	{gitsync.ErrRepositoryNotFound, gitpeerv1alpha1.RepositoryNotFoundReason, true, func(url, secret string) string {
		return fmt.Sprintf("check spec.url %s, and that the credentials in %s may read it", url, secret)
	}},
	{gitsync.ErrBranchNotFound, gitpeerv1alpha1.BranchNotFoundReason, true, func(url, _ string) string {
		return fmt.Sprintf("push an initial commit to the branch in %s, or fix spec.branch", url)
	}},
	{gitsync.ErrHistoryRewritten, gitpeerv1alpha1.HistoryRewrittenReason, true, func(string, string) string {
		return "review the branch and set annotation " + gitpeerv1alpha1.AcknowledgeRewriteAnnotation + " to its new head"
	}},
	{gitsync.ErrUnreachable, gitpeerv1alpha1.GitServerUnreachableReason, false, func(url, _ string) string {
		return fmt.Sprintf("retrying with backoff; check that %s is up and reachable from the agent", url)
	}},
	{gitsync.ErrPushRejected, gitpeerv1alpha1.GitOperationFailedReason, false, func(string, string) string {
		return "retrying with backoff"
	}},
}

// typedError returns err as a *Stalling, *Waiting or *Generic: typed errors
// are kept; gitsync's error classes, a missing Secret and an unavailable API
// server get their reason and a message saying what to do; anything else is
// Generic with reason ReconciliationFailed.
func typedError(obj *gitpeerv1alpha1.PeeringRepository, err error) error {
	var stall *Stalling
	var wait *Waiting
	var generic *Generic
	if errors.As(err, &stall) || errors.As(err, &wait) || errors.As(err, &generic) {
		return err
	}
	secret := "the Secret of spec.secretRef (none is set)"
	if obj.Spec.SecretRef != nil {
		secret = "Secret " + obj.Spec.SecretRef.Name
	}
	for _, f := range gitFailures {
		if !errors.Is(err, f.sentinel) {
			continue
		}
		err = fmt.Errorf("%w; %s", err, f.hint(obj.Spec.URL, secret))
		if f.stall {
			return &Stalling{Reason: f.reason, Err: err}
		}
		return &Generic{Reason: f.reason, Err: err}
	}
	switch {
	case apierrors.IsNotFound(err):
		return &Waiting{Reason: gitpeerv1alpha1.SecretNotFoundReason, RequeueAfter: obj.GetRequeueAfter(),
			Err: fmt.Errorf("%w; create it, it is looked for again every %s", err, obj.GetRequeueAfter())}
	case apiUnavailable(err):
		return &Generic{Reason: gitpeerv1alpha1.KubernetesAPIUnavailableReason, Err: fmt.Errorf("the Kubernetes API server is unavailable: %w; retrying with backoff", err)}
	}
	return &Generic{Reason: meta.ReconciliationFailedReason, Err: err}
}

// apiUnavailable reports whether err says the API server could not be reached
// or could not serve the request for now (or in time: a client-side retry
// that gave up, such as the status patcher's). gitsync's network errors are
// classified before: what is left comes from the API server.
func apiUnavailable(err error) bool {
	var netErr net.Error
	return apierrors.IsServiceUnavailable(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) ||
		apierrors.IsTooManyRequests(err) || apierrors.IsInternalError(err) ||
		errors.As(err, &netErr) || errors.Is(err, syscall.ECONNREFUSED) || wait.Interrupted(err)
}

// resultOf is what controller-runtime gets for a failed round: a stall is
// checked again at the interval, a wait after its delay, both without backoff;
// a generic error is returned, so it is retried with backoff.
func resultOf(obj *gitpeerv1alpha1.PeeringRepository, err error) (ctrl.Result, error) {
	var stall *Stalling
	var wait *Waiting
	switch {
	case errors.As(err, &stall):
		return ctrl.Result{RequeueAfter: obj.GetRequeueAfter()}, nil
	case errors.As(err, &wait):
		return ctrl.Result{RequeueAfter: wait.RequeueAfter}, nil
	}
	return ctrl.Result{}, err
}

// reasonOf returns the reason of a typed error.
func reasonOf(err error) string {
	var stall *Stalling
	var wait *Waiting
	var generic *Generic
	switch {
	case errors.As(err, &stall):
		return stall.Reason
	case errors.As(err, &wait):
		return wait.Reason
	case errors.As(err, &generic):
		return generic.Reason
	}
	return meta.ReconciliationFailedReason
}

// markFailure sets the conditions of a failed round: Stalled for a stall,
// Reconciling for a wait or a retry, and Ready False with the reason.
func markFailure(obj *gitpeerv1alpha1.PeeringRepository, err error) {
	reason := reasonOf(err)
	var stall *Stalling
	var wait *Waiting
	switch {
	case errors.As(err, &stall):
		deleteCondition(obj, meta.ReconcilingCondition)
		markStalled(obj, reason, "%s", err)
	case errors.As(err, &wait):
		markReconciling(obj, meta.ProgressingReason, "%s", err)
	default:
		markReconciling(obj, meta.ProgressingWithRetryReason, "%s", err)
	}
	markFalse(obj, meta.ReadyCondition, reason, "%s", err)
}

// stalls reports whether err is a *Stalling.
func stalls(err error) bool {
	var stall *Stalling
	return errors.As(err, &stall)
}

// report logs a failed round and records its event: a Warning for a stall
// (once: not again while the Stalled condition already says the same) and
// for a generic error, a Normal event for a wait. Generic errors are also
// logged by controller-runtime, which gets them.
func (r *PeeringRepositoryReconciler) report(ctx context.Context, obj *gitpeerv1alpha1.PeeringRepository, err error) {
	reason := reasonOf(err)
	var wait *Waiting
	switch {
	case stalls(err):
		log.FromContext(ctx).Info("stalled until a person acts", "reason", reason, "error", err.Error())
		if c := getCondition(obj, meta.StalledCondition); c != nil && c.Reason == reason && c.Message == err.Error() {
			return
		}
		r.event(obj, corev1.EventTypeWarning, reason, "%s", err)
	case errors.As(err, &wait):
		log.FromContext(ctx).Info("waiting", "reason", reason, "error", err.Error())
		r.event(obj, corev1.EventTypeNormal, reason, "%s", err)
	default:
		r.event(obj, corev1.EventTypeWarning, reason, "%s", err)
	}
}
