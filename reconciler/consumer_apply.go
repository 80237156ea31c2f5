package reconciler

import (
	"context"
	"fmt"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/gitsync"
	"github.com/gitpeer/gitpeer/reconciler/plan/consumer"
	"github.com/gitpeer/gitpeer/reconciler/whoami"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// applyConsumer carries out plan, the consumer's round for provider, one
// action after the other in the plan's order: the first that fails stops the
// rest and fails the peering. It decides nothing: the plan orders cluster
// records before what they protect, the review push before the mark that
// records it, and stages a direct-mode change for the round's one commit,
// whose events follow the push; the next round observes what it needs.
func (s consumerStep) applyConsumer(ctx context.Context, provider string, plan consumer.Plan) outcome {
	ns := authv1beta1.TenantNamespaceName(authv1beta1.ClusterID(provider))
	user := "" // the user this round's proof authenticated the kubeconfig as
	for _, a := range plan.Actions {
		var err error
		switch a := a.(type) {
		case consumer.EnsureNamespace:
			err = s.providerStep().ensureTenantNamespace(ctx, provider, ns)
		case consumer.RecordMode:
			err = s.patchTenantNamespace(ctx, ns, func(m *metav1.ObjectMeta) { metav1.SetMetaDataAnnotation(m, vocabulary.ModeAnnotation, a.Mode) })
		case consumer.ConsumeAnnotation:
			err = s.consumeAnnotation(ctx, a.Key)
		case consumer.ClearRevoked:
			err = s.patchTenantNamespace(ctx, ns, func(m *metav1.ObjectMeta) { delete(m.Annotations, vocabulary.RevokedAnnotation) })
		case consumer.MarkRevoked:
			err = s.patchTenantNamespace(ctx, ns, func(m *metav1.ObjectMeta) {
				metav1.SetMetaDataAnnotation(m, vocabulary.RevokedAnnotation, a.At.UTC().Format(time.RFC3339))
			})
		case consumer.ForgetProvider:
			err = s.forgetProvider(ctx, provider, ns)
		case consumer.PushReview:
			var pushed bool
			if pushed, err = s.pushReview(ctx, a); pushed {
				s.consumerEvents(a.Pushed)
			}
		case consumer.Stage:
			s.branchIO().queue(gitStep{key: resultKey(gitpeerv1alpha1.ConsumerRole, provider), msg: a.Message, announce: a.Pushed}, []gitsync.FileChange{a.Change})
		case consumer.MarkProposed:
			err = s.putSignedNonce(ctx, provider, ns, map[string][]byte{authv1beta1.NonceSecretField: []byte(a.Nonce), authv1beta1.SignedNonceSecretField: a.Signature})
		case consumer.PutNonce:
			err = s.putSignedNonce(ctx, provider, ns, map[string][]byte{authv1beta1.NonceSecretField: []byte(a.Nonce)})
		case consumer.MarkLiqoProposed:
			err = s.markLiqoProposed(ctx, ns, a)
		case consumer.Prove:
			got, proofErr := whoami.Kubeconfig(ctx, a.Kubeconfig)
			if proofErr != nil || got != a.User {
				return consumerOutcome(a.Drift.Mark(consumer.Outcome{Phase: gitpeerv1alpha1.PhaseFailed, Message: a.Failed(got, proofErr)}))
			}
			user = got
		case consumer.RememberProven:
			s.r.proven.set(provenKey{repo: client.ObjectKeyFromObject(s.obj), provider: provider}, a.Digest)
		case consumer.PinProvider:
			err = s.patchTenantNamespace(ctx, ns, func(m *metav1.ObjectMeta) {
				metav1.SetMetaDataAnnotation(m, vocabulary.PinnedProviderAnnotation, a.Pin)
				delete(m.Annotations, vocabulary.PinnedCAAnnotation)
			})
		case consumer.WriteIdentity:
			var op controllerutil.OperationResult
			if op, err = s.writeIdentity(ctx, ns, a); err == nil && op != controllerutil.OperationResultNone {
				s.consumerEvents([]consumer.Event{{Reason: consumer.PeeringReady, About: provider, Message: a.Written(string(op), user)}})
			}
		case consumer.PutIdentity:
			_, err = s.putIdentity(ctx, ns, provider, a.Identity, a.ParamsDigest)
		case consumer.NoteCertificate:
			s.roundReport().noteCertificate(gitpeerv1alpha1.ConsumerRole, provider, certRecord{expiry: a.Expiry})
		case consumer.RecheckAt:
			s.roundReport().noteRenewal(a.At)
		case consumer.Event:
			s.consumerEvents([]consumer.Event{a})
		case consumer.Log:
			log.FromContext(ctx).Info(a.Message, a.KeysAndValues...)
		default:
			err = fmt.Errorf("consumer action %T has no applier", a)
		}
		if err != nil {
			return outcome{err: err}
		}
	}
	return consumerOutcome(plan.Outcome)
}

// consumerOutcome is the peering's outcome for the planner's o.
func consumerOutcome(o consumer.Outcome) outcome {
	return outcome{phase: o.Phase, message: o.Message, reason: consumerReasons[o.Reason].reason, err: o.Err}
}

// consumerReasons are the event type and reason of each of the consumer planner's.
var consumerReasons = map[consumer.EventReason]struct{ eventType, reason string }{
	consumer.Requested:         {corev1.EventTypeNormal, gitpeerv1alpha1.RequestedReason},
	consumer.DirectMode:        {corev1.EventTypeWarning, gitpeerv1alpha1.DirectModeReason},
	consumer.TenantProposed:    {corev1.EventTypeNormal, gitpeerv1alpha1.TenantProposedReason},
	consumer.PeeringReady:      {corev1.EventTypeNormal, gitpeerv1alpha1.PeeringReadyReason},
	consumer.Revoked:           {corev1.EventTypeNormal, gitpeerv1alpha1.RevokedReason},
	consumer.Rejected:          {corev1.EventTypeWarning, gitpeerv1alpha1.RejectedReason},
	consumer.TrustedOnFirstUse: {corev1.EventTypeWarning, gitpeerv1alpha1.TrustedOnFirstUseReason},
	consumer.ModeChanged:       {corev1.EventTypeWarning, vocabulary.ReasonModeChanged},
	consumer.ModeSwitched:      {corev1.EventTypeNormal, vocabulary.ReasonModeSwitched},
	consumer.AuthParamsDrifted: {corev1.EventTypeWarning, vocabulary.ReasonAuthParamsDrifted},
}

// consumerEvents records events on the PeeringRepository.
func (s consumerStep) consumerEvents(events []consumer.Event) {
	for _, e := range events {
		r := consumerReasons[e.Reason]
		s.r.eventAbout(s.obj, r.eventType, r.reason, e.About, "%s", e.Message)
	}
}

// pushReview pushes a.Change to the review branch, the agent's own, written
// by this peering alone. It reports whether it made a commit (false: the
// change was there).
func (s consumerStep) pushReview(ctx context.Context, a consumer.PushReview) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.obj.GetTimeout())
	defer cancel()
	var pushed bool
	_, err := observeGit("write", func() (plumbing.Hash, error) {
		res, err := s.repo.WriteReview(ctx, a.Branch, a.Message, []gitsync.FileChange{a.Change})
		pushed = res.Pushed
		return res.Commit, err
	})
	return pushed, err
}

// patchTenantNamespace changes the metadata of the tenant namespace ns, if it exists.
func (s consumerStep) patchTenantNamespace(ctx context.Context, ns string, change func(*metav1.ObjectMeta)) error {
	nsObj := &corev1.Namespace{}
	if err := s.r.Get(ctx, client.ObjectKey{Name: ns}, nsObj); err != nil {
		return client.IgnoreNotFound(err)
	}
	patch := client.MergeFrom(nsObj.DeepCopy())
	change(&nsObj.ObjectMeta)
	return s.r.Patch(ctx, nsObj, patch)
}

// putSignedNonce writes the liqo-signed-nonce Secret of provider with data,
// dropping the proposed mark of an earlier nonce.
func (s consumerStep) putSignedNonce(ctx context.Context, provider, ns string, data map[string][]byte) error {
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: authv1beta1.SignedNonceSecretName}}
	_, err := controllerutil.CreateOrUpdate(ctx, s.r.Client, secret, func() error {
		metav1.SetMetaDataLabel(&secret.ObjectMeta, authv1beta1.SignedNonceSecretLabel, authv1beta1.TrueValue)
		metav1.SetMetaDataLabel(&secret.ObjectMeta, authv1beta1.RemoteClusterIDLabel, provider)
		metav1.SetMetaDataLabel(&secret.ObjectMeta, vocabulary.ManagedByLabel, vocabulary.ManagedBy)
		delete(secret.Annotations, vocabulary.ProposedAnnotation)
		secret.Data = data
		return nil
	})
	return err
}

// markLiqoProposed sets vocabulary.ProposedAnnotation on the liqo-signed-nonce
// Secret, which must still hold the nonce tenant.yaml was signed for.
func (s consumerStep) markLiqoProposed(ctx context.Context, ns string, a consumer.MarkLiqoProposed) error {
	secret := &corev1.Secret{}
	if err := s.r.Get(ctx, client.ObjectKey{Namespace: ns, Name: authv1beta1.SignedNonceSecretName}, secret); err != nil {
		return err
	}
	if string(secret.Data[authv1beta1.NonceSecretField]) != a.Nonce {
		return fmt.Errorf("secret %s/%s no longer holds the nonce tenant.yaml was signed for", ns, secret.Name)
	}
	// An update, not a patch: the agent's role has no patch on Secrets.
	metav1.SetMetaDataAnnotation(&secret.ObjectMeta, vocabulary.ProposedAnnotation, a.Where)
	return s.r.Update(ctx, secret)
}

// putIdentity creates or updates the Identity id in ns, labelled as the
// consumer's for provider; a paramsDigest is recorded in
// vocabulary.IdentityParamsAnnotation (Liqo mode).
func (s consumerStep) putIdentity(ctx context.Context, ns, provider string, id *authv1beta1.Identity, paramsDigest string) (*authv1beta1.Identity, error) {
	identity := &authv1beta1.Identity{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: id.Name}}
	_, err := controllerutil.CreateOrUpdate(ctx, s.r.Client, identity, func() error {
		s.labelConsumerObject(&identity.ObjectMeta, provider)
		if paramsDigest != "" {
			metav1.SetMetaDataAnnotation(&identity.ObjectMeta, vocabulary.IdentityParamsAnnotation, paramsDigest)
		}
		identity.Spec = id.Spec
		return nil
	})
	return identity, err
}

// writeIdentity applies the Identity of a and its kubeconfig Secret, and
// returns what happened to the Secret.
func (s consumerStep) writeIdentity(ctx context.Context, ns string, a consumer.WriteIdentity) (controllerutil.OperationResult, error) {
	identity, err := s.putIdentity(ctx, ns, a.Provider, a.Identity, "")
	if err != nil {
		return controllerutil.OperationResultNone, err
	}
	secretName := authv1beta1.KubeconfigSecretName(a.Identity.Name)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: secretName}}
	op, err := controllerutil.CreateOrUpdate(ctx, s.r.Client, secret, func() error {
		s.labelConsumerObject(&secret.ObjectMeta, a.Provider)
		metav1.SetMetaDataLabel(&secret.ObjectMeta, authv1beta1.IdentityTypeLabel, string(a.Identity.Spec.Type))
		metav1.SetMetaDataAnnotation(&secret.ObjectMeta, authv1beta1.RemoteTenantNamespaceAnnotation, ptr.Deref(a.Identity.Spec.Namespace, ""))
		secret.Data = map[string][]byte{authv1beta1.KubeconfigSecretField: a.Kubeconfig}
		return controllerutil.SetControllerReference(identity, secret, s.r.Scheme())
	})
	if err != nil {
		return op, err
	}
	if identity.Status.KubeconfigSecretRef == nil || identity.Status.KubeconfigSecretRef.Name != secretName {
		patch := client.MergeFrom(identity.DeepCopy())
		identity.Status.KubeconfigSecretRef = &corev1.LocalObjectReference{Name: secretName}
		if err := s.r.Status().Patch(ctx, identity, patch); err != nil {
			return op, err
		}
	}
	return op, nil
}

// labelConsumerObject sets the labels of an object the consumer creates for provider.
func (s consumerStep) labelConsumerObject(meta *metav1.ObjectMeta, provider string) {
	metav1.SetMetaDataLabel(meta, authv1beta1.RemoteClusterIDLabel, provider)
	metav1.SetMetaDataLabel(meta, vocabulary.ManagedByLabel, vocabulary.ManagedBy)
	metav1.SetMetaDataLabel(meta, vocabulary.OwnerLabel, string(s.obj.UID))
}
