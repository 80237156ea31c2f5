package reconciler

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/reconciler/plan/consumer"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// anchor is what the admin configured to trust provider's Identity by
// (consumer.Anchor): spec.consumer.trustedCAs (CA hashes, or a Secret's CA
// bundle, read here) and spec.consumer.trustOnFirstUse.
func (s consumerStep) anchor(ctx context.Context, provider string) (consumer.Anchor, error) {
	anchor := consumer.Anchor{FirstUse: s.obj.Spec.Consumer.TrustOnFirstUse}
	if ref := s.obj.Spec.Consumer.TrustedCAFor(provider); ref != nil {
		anchor.Hashes = ref.CACertHashes
		if ref.SecretRef != nil {
			secret, err := s.r.secret(ctx, s.obj.Namespace, ref.SecretRef.Name)
			if err != nil {
				return anchor, fmt.Errorf("trusted CA of provider %s: %w", ref.Provider, err)
			}
			anchor.CA = &consumer.TrustedCA{Secret: ref.SecretRef.Name, PEM: secret.Data[consumer.TrustedCAKey]}
		}
	}
	return anchor, nil
}

// forgetProvider deletes what the consumer holds for provider in its tenant
// namespace ns: the Identity, its kubeconfig Secret, the signed-nonce Secret
// (Secrets only if the agent manages them) and the pin.
func (s consumerStep) forgetProvider(ctx context.Context, provider, ns string) error {
	name := authv1beta1.ControlPlaneIdentityName(authv1beta1.ClusterID(provider))
	if err := s.r.Delete(ctx, &authv1beta1.Identity{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}); client.IgnoreNotFound(err) != nil {
		return err
	}
	for _, secret := range []string{authv1beta1.KubeconfigSecretName(name), authv1beta1.SignedNonceSecretName} {
		if err := s.deleteManagedSecret(ctx, ns, secret); err != nil {
			return err
		}
	}
	nsObj := &corev1.Namespace{}
	if err := s.r.Get(ctx, client.ObjectKey{Name: ns}, nsObj); err != nil {
		return client.IgnoreNotFound(err)
	}
	if nsObj.Annotations[vocabulary.PinnedProviderAnnotation] == "" && nsObj.Annotations[vocabulary.PinnedCAAnnotation] == "" {
		return nil
	}
	patch := client.MergeFrom(nsObj.DeepCopy())
	delete(nsObj.Annotations, vocabulary.PinnedProviderAnnotation)
	delete(nsObj.Annotations, vocabulary.PinnedCAAnnotation)
	return s.r.Patch(ctx, nsObj, patch)
}

// deleteManagedSecret deletes ns/name if the agent manages it.
func (s consumerStep) deleteManagedSecret(ctx context.Context, ns, name string) error {
	secret := &corev1.Secret{}
	if err := s.r.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, secret); err != nil {
		return client.IgnoreNotFound(err)
	}
	if secret.Labels[vocabulary.ManagedByLabel] != vocabulary.ManagedBy {
		return nil
	}
	err := s.r.Delete(ctx, secret, client.Preconditions{UID: &secret.UID})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// forgetUnlistedProviders removes what this PeeringRepository created as a
// consumer for providers no longer in spec.consumer.providers.
func (s consumerStep) forgetUnlistedProviders(ctx context.Context) error {
	var providers []authv1beta1.ClusterID
	if s.obj.Spec.Consumer != nil {
		providers = s.obj.Spec.Consumer.Providers
	}
	var identities authv1beta1.IdentityList
	if err := s.r.List(ctx, &identities, client.MatchingLabels{vocabulary.ManagedByLabel: vocabulary.ManagedBy, vocabulary.OwnerLabel: string(s.obj.UID)}); err != nil {
		return err
	}
	var errs []error
	for i := range identities.Items {
		id := &identities.Items[i]
		if !consumer.Unlisted(providers, id) {
			continue
		}
		provider := string(id.Spec.ClusterID)
		if err := s.forgetProvider(ctx, provider, id.Namespace); err != nil {
			errs = append(errs, fmt.Errorf("provider %s: %w", provider, err))
			continue
		}
		s.roundReport().noteCertificate(gitpeerv1alpha1.ConsumerRole, provider, certRecord{})
		s.r.eventAbout(s.obj, corev1.EventTypeNormal, gitpeerv1alpha1.RevokedReason, provider,
			"provider %s left spec.consumer.providers: Identity, kubeconfig, signed nonce and pin deleted", provider)
	}
	return errors.Join(errs...)
}
