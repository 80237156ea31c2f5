package reconciler

import (
	"errors"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	corev1 "k8s.io/api/core/v1"

	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/gitsync"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/test/rawgit"
)

// TestGuardHistoryRefusesRevertingMerge: the provider drained consumer-1
// (its last processed commit); a merge whose first parent is the Tenant
// before the drain and whose tree is that commit's stalls the agent, with no
// spec.verify, until the head is acknowledged; a plain commit does not.
func TestGuardHistoryRefusesRevertingMerge(t *testing.T) {
	g := rawgit.New(t)
	treeOf := func(tenant string) plumbing.Hash {
		dir := g.Tree(rawgit.File("tenant.yaml", g.Blob([]byte(tenant))))
		return g.Tree(rawgit.Dir("provider-a", g.Tree(rawgit.Dir("consumer-1", dir))))
	}
	active := g.Commit(treeOf("active"))
	drained := g.Commit(treeOf("drained"), active)
	plain := g.Commit(treeOf("drained again"), drained)
	revert := g.Commit(treeOf("active"), active, drained)
	repo, err := gitsync.OpenLocal(g.Dir, gitsync.Config{MaxFileSize: protocol.MaxFileSize, Limits: protocol.Limits})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = repo.Close() })

	sink := &eventSink{}
	s := recordingSession(t, sink)
	s.obj.Spec = gitpeerv1alpha1.PeeringRepositorySpec{ClusterID: "provider-a", Provider: &gitpeerv1alpha1.ProviderSpec{Enabled: true}}
	s.obj.Status.LastProcessedCommit = drained.String()
	s.repo = repo

	s.head = plain
	if err := s.branchIO().guardHistory(); err != nil {
		t.Fatalf("a plain commit: %v", err)
	}
	s.head = revert
	for _, ack := range []string{"", drained.String()} { // none, or another commit's
		s.obj.Annotations = map[string]string{gitpeerv1alpha1.AcknowledgeRewriteAnnotation: ack}
		err := s.branchIO().guardHistory()
		var stall *Stalling
		if !errors.As(err, &stall) || stall.Reason != gitpeerv1alpha1.MergeRevertsReason {
			t.Fatalf("acknowledged %q: %v, want a %s stall", ack, err, gitpeerv1alpha1.MergeRevertsReason)
		}
		for _, want := range []string{revert.String(), "keeps provider-a as in its parent " + active.String(), gitpeerv1alpha1.AcknowledgeRewriteAnnotation + "=" + revert.String()} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("message %q does not name %s", err, want)
			}
		}
	}
	s.obj.Annotations[gitpeerv1alpha1.AcknowledgeRewriteAnnotation] = revert.String()
	if err := s.branchIO().guardHistory(); err != nil {
		t.Fatalf("acknowledged: %v", err)
	}
	e := sink.wait(t, 1)[0]
	if e.Type != corev1.EventTypeNormal || e.Reason != gitpeerv1alpha1.MergeRevertsReason || !strings.Contains(e.Note, "acknowledged at "+revert.String()) {
		t.Errorf("event %s %s %q, want the acknowledgement", e.Type, e.Reason, e.Note)
	}
}
