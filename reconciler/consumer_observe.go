package reconciler

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/reconciler/plan/consumer"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// consumerStep is the consumer's side of the round: its step for one
// provider (consume: observe, plan in reconciler/plan/consumer, apply in
// consumer_apply.go), the pull request that proposes it (pullrequest.go) and
// the providers' trust anchors (trust.go).
type consumerStep struct{ *session }

func (s *session) consumerStep() consumerStep { return consumerStep{s} }

// The consumer's round for one provider is three stages with plain data
// between them: observeConsumer reads (a consumer.Snapshot),
// consumer.PlanPeering decides (a consumer.Plan), applyConsumer writes
// (consumer_apply.go).

// consume runs the consumer's round for the peering directory pe: observe, plan, apply.
func (s consumerStep) consume(ctx context.Context, pe *protocol.Documents) outcome {
	snap, err := s.observeConsumer(ctx, pe)
	if err != nil {
		return outcome{err: err}
	}
	return s.applyConsumer(ctx, pe.Provider, consumer.PlanPeering(snap, s.r.Now()))
}

// observeConsumer makes every read of the consumer's round for pe: the
// PeeringRepository's settings, the tenant namespace, the Identity and the
// Secrets the documents on the branch call for, and what this process
// proved before. A quiet round reads no Secret of the peering in standalone
// mode.
func (s consumerStep) observeConsumer(ctx context.Context, pe *protocol.Documents) (consumer.Snapshot, error) {
	provider := pe.Provider
	ns := authv1beta1.TenantNamespaceName(authv1beta1.ClusterID(provider))
	annotations := s.obj.GetAnnotations()
	snap := consumer.Snapshot{
		Docs: pe, Key: s.key, Liqo: s.liqo.Active, Mode: s.modeName(), ModeSummary: s.liqo.String(),
		Spec: s.obj.Spec.Consumer, Branch: s.obj.GetBranch(),
		Quiet: s.quiet(), BranchMoved: s.obj.Status.LastProcessedCommit != s.head.String(),
		RequestAgain:   annotations[gitpeerv1alpha1.RequestAgainAnnotation] == provider,
		SwitchAccepted: annotations[gitpeerv1alpha1.SwitchModeAnnotationPrefix+provider],
	}
	name := authv1beta1.ControlPlaneIdentityName(authv1beta1.ClusterID(provider))
	if pe.Identity != nil {
		name = pe.Identity.Name
	}
	identity := &authv1beta1.Identity{}
	if found, err := s.getIfExists(ctx, ns, name, identity); err != nil {
		return snap, err
	} else if found {
		snap.Identity = identity
	}
	nsObj := &corev1.Namespace{}
	if found, err := s.getIfExists(ctx, "", ns, nsObj); err != nil {
		return snap, err
	} else if found {
		revokedAt, revoked := nsObj.Annotations[vocabulary.RevokedAnnotation]
		snap.Namespace = &consumer.Namespace{Mode: nsObj.Annotations[vocabulary.ModeAnnotation], Revoked: revoked, RevokedAt: revokedAt, Annotations: nsObj.Annotations}
	}
	var err error
	switch {
	case pe.Identity != nil:
		snap.Anchor, snap.AnchorErr = s.anchor(ctx, provider)
		switch {
		case !s.liqo.Active && !snap.Quiet:
			secret := &corev1.Secret{}
			if _, err = s.getIfExists(ctx, ns, authv1beta1.KubeconfigSecretName(pe.Identity.Name), secret); err == nil {
				snap.Kubeconfig = secret.Data[authv1beta1.KubeconfigSecretField]
			}
		case s.liqo.Active:
			snap.Proven = s.r.proven.get(provenKey{repo: client.ObjectKeyFromObject(s.obj), provider: provider})
			// Before Liqo sets the reference, the Secret of its default name
			// may be one a finalizer holds (consumer.LiqoSecretTerminating).
			secret := authv1beta1.KubeconfigSecretName(pe.Identity.Name)
			if snap.Identity != nil && snap.Identity.Status.KubeconfigSecretRef != nil {
				secret = snap.Identity.Status.KubeconfigSecretRef.Name
			}
			snap.LiqoKubeconfig, err = s.secretIfExists(ctx, ns, secret)
		}
	case pe.Nonce != nil && (s.liqo.Active || !snap.Quiet):
		snap.SignedNonce, err = s.secretIfExists(ctx, ns, authv1beta1.SignedNonceSecretName)
	}
	return snap, err
}

// getIfExists reads ns/name into obj and reports whether it exists.
func (s consumerStep) getIfExists(ctx context.Context, ns, name string, obj client.Object) (bool, error) {
	err := s.r.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj)
	return err == nil, client.IgnoreNotFound(err)
}

// secretIfExists returns the Secret ns/name, nil when absent.
func (s consumerStep) secretIfExists(ctx context.Context, ns, name string) (*corev1.Secret, error) {
	secret := &corev1.Secret{}
	if found, err := s.getIfExists(ctx, ns, name, secret); !found {
		return nil, err
	}
	return secret, nil
}

// provenMemory remembers, across rounds, the SHA-256 of the kubeconfig last
// proven per PeeringRepository and provider: Liqo's identity controller may
// rewrite it at any time (renewal), and each new one is proven once. After a
// restart each is proven again.
type provenMemory struct {
	mu sync.Mutex
	m  map[provenKey]string
}

type provenKey struct {
	repo     types.NamespacedName
	provider string
}

func (p *provenMemory) get(k provenKey) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.m[k]
}

func (p *provenMemory) set(k provenKey, digest string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[provenKey]string{}
	}
	p.m[k] = digest
}
