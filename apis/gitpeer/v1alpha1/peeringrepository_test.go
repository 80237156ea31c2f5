package v1alpha1_test

import (
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
)

// The PeeringRepository status records handled reconcile requests the Flux way.
var _ meta.StatusWithHandledReconcileRequest = gitpeerv1alpha1.PeeringRepositoryStatus{}

const sample = `
apiVersion: gitpeer.io/v1alpha1
kind: PeeringRepository
metadata:
  name: peering
  namespace: gitpeer-system
spec:
  url: ssh://git@git.example.com/org/peering.git
  branch: main
  path: clusters
  interval: 30s
  timeout: 20s
  secretRef:
    name: git-credentials
  clusterID: cl-provider
  provider:
    enabled: true
    apiServer: https://203.0.113.10:6443
    caSecretRef:
      name: api-ca
    certificateTTL: 24h
    clusterRoleName: liqo-remote-controlplane
    deleteNamespaceOnRevoke: true
  consumer:
    providers: [cl-other]
    reviewBranchTemplate: review/{{.ProviderID}}/{{.ConsumerID}}
    direct: false
  verify:
    mode: Relevant
    secretRef:
      name: trusted-keys
  commit:
    author:
      name: gitpeer cl-provider
      email: gitpeer@example.com
    signingKey:
      secretRef:
        name: signing-key
status:
  observedGeneration: 3
  lastProcessedCommit: 0123456789abcdef0123456789abcdef01234567
  lastHandledReconcileAt: "2025-01-01T00:00:00Z"
  conditions:
  - type: Ready
    status: "True"
    reason: Succeeded
    message: 2 peerings
    lastTransitionTime: "2025-01-01T00:00:00Z"
  peerings:
  - peerID: cl-consumer
    role: Provider
    phase: Issued
    since: "2025-01-01T00:00:00Z"
    message: certificate serial 1234 expires 2025-01-02T00:00:00Z
`

func TestSampleDecodesStrictly(t *testing.T) {
	var pr gitpeerv1alpha1.PeeringRepository
	if err := yaml.UnmarshalStrict([]byte(sample), &pr); err != nil {
		t.Fatal(err)
	}
	if pr.GetBranch() != "main" || pr.GetTimeout() != 20*time.Second || pr.GetRequeueAfter() != 30*time.Second {
		t.Errorf("branch %q timeout %v interval %v", pr.GetBranch(), pr.GetTimeout(), pr.GetRequeueAfter())
	}
	if !pr.IsProvider() || !pr.IsConsumer() {
		t.Error("roles not enabled")
	}
	if pr.Spec.Provider.GetCertificateTTL() != 24*time.Hour {
		t.Errorf("ttl %v", pr.Spec.Provider.GetCertificateTTL())
	}
	if pr.Status.GetLastHandledReconcileRequest() != "2025-01-01T00:00:00Z" {
		t.Errorf("lastHandledReconcileAt %q", pr.Status.LastHandledReconcileAt)
	}
	if !apimeta.IsStatusConditionTrue(pr.Status.Conditions, meta.ReadyCondition) || len(pr.Status.Peerings) != 1 || pr.Status.Peerings[0].Phase != gitpeerv1alpha1.PhaseIssued {
		t.Errorf("status %+v", pr.Status)
	}

	cp := pr.DeepCopy()
	apimeta.SetStatusCondition(&cp.Status.Conditions, metav1.Condition{Type: meta.StalledCondition, Status: metav1.ConditionTrue, Reason: gitpeerv1alpha1.HistoryRewrittenReason})
	if !apimeta.IsStatusConditionTrue(cp.Status.Conditions, meta.StalledCondition) || apimeta.IsStatusConditionTrue(pr.Status.Conditions, meta.StalledCondition) {
		t.Error("DeepCopy shares conditions")
	}
}

func TestDefaults(t *testing.T) {
	pr := &gitpeerv1alpha1.PeeringRepository{}
	if pr.GetBranch() != "main" || pr.GetTimeout() != time.Minute || pr.GetRequeueAfter() != time.Minute {
		t.Errorf("branch %q timeout %v interval %v", pr.GetBranch(), pr.GetTimeout(), pr.GetRequeueAfter())
	}
	if pr.IsProvider() || pr.IsConsumer() {
		t.Error("roles enabled by default")
	}
	var p *gitpeerv1alpha1.ProviderSpec
	if p.GetCertificateTTL() != 24*time.Hour || p.GetClusterRoleName() != "liqo-remote-controlplane" {
		t.Errorf("provider defaults %v %q", p.GetCertificateTTL(), p.GetClusterRoleName())
	}
	if p.GetDeletionPolicy() != gitpeerv1alpha1.DeletionRevoke || p.GetMaxPendingRequests() != 100 {
		t.Errorf("provider defaults %v %d", p.GetDeletionPolicy(), p.GetMaxPendingRequests())
	}
	var c *gitpeerv1alpha1.ConsumerSpec
	if c.GetReviewBranchTemplate() != "gitpeer/{{.ProviderID}}/{{.ConsumerID}}" {
		t.Errorf("review branch template %q", c.GetReviewBranchTemplate())
	}
	var v *gitpeerv1alpha1.VerifySpec
	if v.GetMode() != gitpeerv1alpha1.VerifyRelevant {
		t.Errorf("verify mode %q", v.GetMode())
	}
	var cm *gitpeerv1alpha1.CommitSpec
	if n, e := cm.GetAuthor(); n != "gitpeer" || e != "gitpeer@localhost" {
		t.Errorf("author %q <%s>", n, e)
	}
}

func TestScheme(t *testing.T) {
	s := runtime.NewScheme()
	if err := gitpeerv1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"PeeringRepository", "PeeringRepositoryList"} {
		if !s.Recognizes(gitpeerv1alpha1.GroupVersion.WithKind(kind)) {
			t.Errorf("%s not registered", kind)
		}
	}
}
