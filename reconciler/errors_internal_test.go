package reconciler

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"

	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/gitsync"
)

// TestTypedErrors checks that each failure gets its kind, its reason, a
// message saying what to do, the conditions and the requeue of that kind.
func TestTypedErrors(t *testing.T) {
	apiDown := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}
	cases := []struct {
		name      string
		err       error
		kind      string // stall, wait, retry
		reason    string
		hint      string
		requeueIn time.Duration
	}{
		{"auth", fmt.Errorf("ls-remote: %w: x", gitsync.ErrAuthFailed), "stall", gitpeerv1alpha1.AuthenticationFailedReason, "update the credentials in Secret git", time.Minute},
		{"host key", fmt.Errorf("ls-remote: %w", gitsync.ErrHostKeyMismatch), "stall", gitpeerv1alpha1.HostKeyMismatchReason, "known_hosts of Secret git", time.Minute},
		{"certificate", fmt.Errorf("ls-remote: %w", gitsync.ErrCertificateUntrusted), "stall", gitpeerv1alpha1.CertificateUntrustedReason, "as ca.crt to Secret git", time.Minute},
		{"repository", fmt.Errorf("ls-remote: %w", gitsync.ErrRepositoryNotFound), "stall", gitpeerv1alpha1.RepositoryNotFoundReason, "check spec.url ssh://git.example/r.git", time.Minute},
		{"branch", fmt.Errorf("%w: main", gitsync.ErrBranchNotFound), "stall", gitpeerv1alpha1.BranchNotFoundReason, "or fix spec.branch", time.Minute},
		{"rewritten raw", &gitsync.HistoryError{}, "stall", gitpeerv1alpha1.HistoryRewrittenReason, "set annotation gitpeer.io/acknowledge-rewrite to its new head", time.Minute},
		{"rewritten", &Stalling{Reason: gitpeerv1alpha1.HistoryRewrittenReason, Err: errors.New("branch main was rewritten")}, "stall", gitpeerv1alpha1.HistoryRewrittenReason, "rewritten", time.Minute},
		{"git down", fmt.Errorf("ls-remote: %w: %w", gitsync.ErrUnreachable, apiDown), "retry", gitpeerv1alpha1.GitServerUnreachableReason, "retrying with backoff; check that ssh://git.example/r.git is up", 0},
		{"push lost", &gitsync.PushError{Branch: "main", Attempts: 5, Last: errors.New("non-fast-forward")}, "retry", gitpeerv1alpha1.GitOperationFailedReason, "retrying with backoff", 0},
		{"api down", fmt.Errorf("git credentials: %w", apiDown), "retry", gitpeerv1alpha1.KubernetesAPIUnavailableReason, "retrying with backoff", 0},
		{"api unavailable", apierrors.NewServiceUnavailable("etcd"), "retry", gitpeerv1alpha1.KubernetesAPIUnavailableReason, "retrying with backoff", 0},
		{"status patch gave up", fmt.Errorf("writing the status: %w", wait.ErrorInterrupted(errors.New("connection refused"))), "retry", gitpeerv1alpha1.KubernetesAPIUnavailableReason, "retrying with backoff", 0},
		{"secret missing", fmt.Errorf("git credentials: %w", apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, "git")), "wait", gitpeerv1alpha1.SecretNotFoundReason, "create it", time.Minute},
		{"other", errors.New("disk full"), "retry", meta.ReconciliationFailedReason, "disk full", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := &gitpeerv1alpha1.PeeringRepository{Spec: gitpeerv1alpha1.PeeringRepositorySpec{
				URL: "ssh://git.example/r.git", SecretRef: &meta.LocalObjectReference{Name: "git"},
				Interval: &metav1.Duration{Duration: time.Minute},
			}}
			err := typedError(obj, tc.err)
			if got := reasonOf(err); got != tc.reason {
				t.Fatalf("reason %q, want %q (%v)", got, tc.reason, err)
			}
			if !errors.Is(err, tc.err) && !strings.Contains(err.Error(), tc.err.Error()) {
				t.Fatalf("%v lost the cause %v", err, tc.err)
			}
			if !strings.Contains(err.Error(), tc.hint) {
				t.Fatalf("message %q does not say %q", err, tc.hint)
			}
			res, returned := resultOf(obj, err)
			if res.RequeueAfter != tc.requeueIn || (returned != nil) != (tc.kind == "retry") {
				t.Fatalf("result %+v, %v: want requeue in %s, returned only for a retry", res, returned, tc.requeueIn)
			}
			(&PeeringRepositoryReconciler{}).summarize(obj, err)
			ready := getCondition(obj, meta.ReadyCondition)
			if ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason != tc.reason || ready.Message != err.Error() {
				t.Fatalf("Ready %+v", ready)
			}
			if isTrue(obj, meta.StalledCondition) != (tc.kind == "stall") || isTrue(obj, meta.ReconcilingCondition) == (tc.kind == "stall") {
				t.Fatalf("conditions %+v for a %s", obj.Status.Conditions, tc.kind)
			}
		})
	}
}

// TestSummarizeClearsStall: a round that succeeds after a stall clears Stalled.
func TestSummarizeClearsStall(t *testing.T) {
	obj := &gitpeerv1alpha1.PeeringRepository{}
	r := &PeeringRepositoryReconciler{}
	r.summarize(obj, &Stalling{Reason: gitpeerv1alpha1.HistoryRewrittenReason, Err: errors.New("rewritten")})
	if !isTrue(obj, meta.StalledCondition) {
		t.Fatal("not stalled")
	}
	r.summarize(obj, nil)
	if getCondition(obj, meta.StalledCondition) != nil || !isTrue(obj, meta.ReadyCondition) {
		t.Fatalf("conditions after success: %+v", obj.Status.Conditions)
	}
}
