package reconciler

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// TestPublishLiqoIdentityRefusesAWS: when Liqo on EKS with IAM answers a
// Tenant with awsConfig, the provider commits nothing (it would put an IAM
// secret access key in Git) and the peering fails with LiqoAWSUnsupported, a
// Warning event saying so. The session has no client: nothing is read or written.
func TestPublishLiqoIdentityRefusesAWS(t *testing.T) {
	sink := &eventSink{}
	s := recordingSession(t, sink)
	tenant := &authv1beta1.Tenant{ObjectMeta: metav1.ObjectMeta{Namespace: "liqo-tenant-c1", Name: "c1"},
		Status: authv1beta1.TenantStatus{AuthParams: &authv1beta1.AuthParams{APIServer: "https://eks.example",
			AwsConfig: &authv1beta1.AwsConfig{AwsUserArn: "arn:aws:iam::1:user/liqo-c1", AwsAccessKeyID: "AKIA", AwsSecretAccessKey: "s3cr3t-value", AwsRegion: "eu-west-1", AwsClusterName: "p"}}}}
	pe := &protocol.Documents{Provider: "p", Consumer: "c1"}
	o := s.liqoProvider().publishLiqoIdentity(context.Background(), pe, tenant)
	if o.err != nil || o.phase != gitpeerv1alpha1.PhaseFailed || o.reason != vocabulary.ReasonLiqoAWSUnsupported || !strings.Contains(o.message, "Liqo on EKS with IAM") {
		t.Fatalf("outcome = %+v, want Failed, %s", o, vocabulary.ReasonLiqoAWSUnsupported)
	}
	if len(s.branch.staged) != 0 {
		t.Errorf("staged %d change(s) for Git", len(s.branch.staged))
	}
	if e := sink.wait(t, 1)[0]; e.Reason != vocabulary.ReasonLiqoAWSUnsupported || strings.Contains(e.Note, "s3cr3t-value") || strings.Contains(o.message, "s3cr3t-value") {
		t.Errorf("event %s: %s (the secret must appear nowhere)", e.Reason, e.Note)
	}
}
