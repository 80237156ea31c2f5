package reconciler

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/go-git/go-git/v5/plumbing"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/gitsync"
)

// branchIO is the round's Git side: the one read of the branch (sync: poll,
// history guard, commit signatures in signatures.go, the documents' load)
// and the one write (apply.go: the steps staged by the peerings, committed
// and pushed together by commitRound). It works on the session's repo, head
// and loaded documents, and keeps the round's own in its branchState.
type branchIO struct {
	*session
	*branchState
}

func (s *session) branchIO() branchIO { return branchIO{s, s.branch} }

// branchState is what the round's Git side keeps through the round.
type branchState struct {
	invalid []string // the files the load skipped, why (reject)
	// rewriteAcknowledged: this round accepted a rewritten history (sync); the provider's round is full.
	rewriteAcknowledged bool
	// mu guards staged: the peerings of a provider's round stage their writes at once (provideAll).
	mu     sync.Mutex
	staged []gitStep // this round's writes to the branch, committed together (commitRound)
}

// sync polls the branch, guards its history, verifies commit signatures and
// loads the peering documents that concern the local cluster.
func (s branchIO) sync(ctx context.Context) error {
	obj := s.obj
	pollCtx, cancel := context.WithTimeout(ctx, obj.GetTimeout())
	defer cancel()
	head, err := observeGit("poll", func() (plumbing.Hash, error) { return s.repo.Poll(pollCtx) })
	if err != nil {
		return err
	}
	s.head = head
	if err := s.guardHistory(); err != nil {
		return err
	}
	if err := s.verifySignatures(ctx); err != nil {
		return err
	}
	return s.load(ctx)
}

// guardHistory refuses a head that does not descend from the last processed
// commit, or that a merge since then reaches by bringing back, in a folder
// the agent reads (relevantDirs), what an older parent held where a newer
// one had changed it (gitsync.CheckMerges), whatever its signatures and
// whether or not spec.verify is set: no clean merge has that shape, and it
// would silently undo a drain or a deleted tenant.yaml. Both stall the agent
// until an admin sets AcknowledgeRewriteAnnotation to the head.
func (s branchIO) guardHistory() error {
	obj, head := s.obj, s.head
	last := plumbing.NewHash(obj.Status.LastProcessedCommit)
	if head == last {
		return nil
	}
	if !last.IsZero() {
		if _, err := s.repo.Changes(last, head); err != nil {
			if !errors.Is(err, gitsync.ErrHistoryRewritten) {
				return err
			}
			if err := s.unlessAcknowledged(gitpeerv1alpha1.HistoryRewrittenReason, fmt.Sprintf("branch %s was rewritten: %s does not descend from %s", obj.GetBranch(), head, last)); err != nil {
				return err
			}
			s.rewriteAcknowledged = true
		}
	}
	err := s.repo.CheckMerges(last, head, relevantDirs(obj))
	if !errors.Is(err, gitsync.ErrMergeReverts) {
		return err
	}
	return s.unlessAcknowledged(gitpeerv1alpha1.MergeRevertsReason, fmt.Sprintf("branch %s: %v", obj.GetBranch(), err))
}

// unlessAcknowledged stalls with reason on what, a history the agent must not
// act on unreviewed, unless AcknowledgeRewriteAnnotation names the head: then
// it records the acknowledgement (a Normal event) and lets the round go on.
func (s branchIO) unlessAcknowledged(reason, what string) error {
	ack := gitpeerv1alpha1.AcknowledgeRewriteAnnotation
	if s.obj.GetAnnotations()[ack] != s.head.String() {
		return &Stalling{Reason: reason, Err: fmt.Errorf("%s; review it and set annotation %s=%s", what, ack, s.head)}
	}
	s.r.event(s.obj, corev1.EventTypeNormal, reason, "%s; acknowledged at %s", what, s.head)
	return nil
}

// load decodes the documents of every peering directory the local cluster is
// part of, with protocol.Load as `gitpeer verify` does, reading only the
// directories that changed since the previous round. Invalid files are
// reported and skipped.
func (s branchIO) load(ctx context.Context) error {
	loaded, err := LoadChanged(s.loader, s.repo, s.head, s.obj)
	if err != nil {
		return err
	}
	s.loaded = loaded
	for _, rj := range s.loaded.Rejected {
		s.reject(ctx, rj.Path, rj.Err)
	}
	if len(s.invalid) > 0 {
		markFalse(s.obj, gitpeerv1alpha1.FilesValidCondition, gitpeerv1alpha1.InvalidDocumentReason, "%d file(s) skipped: %s", len(s.invalid), s.invalid[0])
	} else {
		markTrue(s.obj, gitpeerv1alpha1.FilesValidCondition, meta.SucceededReason, "all files valid")
	}
	return nil
}

// reject reports an invalid file (condition, event, log); it is skipped.
func (s branchIO) reject(ctx context.Context, path string, err error) {
	s.invalid = append(s.invalid, err.Error())
	log.FromContext(ctx).Info("skipping invalid file", "path", path, "reason", err.Error())
	s.r.eventAbout(s.obj, corev1.EventTypeWarning, gitpeerv1alpha1.InvalidDocumentReason, path, "%v", err)
}
