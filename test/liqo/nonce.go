package liqo

import (
	"context"
	gocrypto "crypto"
	"crypto/rand"
	"encoding/base64"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	"github.com/gitpeer/gitpeer/crypto"
)

// NonceCreator is A/noncecreator-controller: it fills data.nonce (64 random
// bytes, standard base64) of a Secret labelled liqo.io/nonce, only when the key
// is absent and the Secret is in the tenant namespace of the cluster ID in its
// labels, retrying while there is no such namespace. Liqo never rotates a
// nonce. (Liqo v1.2.0 A/noncecreator-controller.)
type NonceCreator struct {
	Client   client.Client
	Recorder record.EventRecorder
}

// Reconcile fills one nonce Secret.
func (r *NonceCreator) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var secret corev1.Secret
	if err := r.Client.Get(ctx, req.NamespacedName, &secret); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if _, ok := secret.Data[authv1beta1.NonceSecretField]; ok {
		return ctrl.Result{}, nil
	}
	clusterID := secret.Labels[authv1beta1.RemoteClusterIDLabel]
	if clusterID == "" {
		r.Recorder.Event(&secret, corev1.EventTypeWarning, "MissingClusterID", "ClusterID not found in secret")
		return ctrl.Result{}, nil
	}
	// No tenant namespace (yet: the cache may lag its creation) is an error
	// retried with backoff, as Liqo's tenantNamespace.Manager.GetNamespace
	// returns NotFound (noncecreator_controller.go, namespaceManager.go).
	ns, err := tenantNamespace(ctx, r.Client, clusterID)
	if err == nil && ns == nil {
		err = apierrors.NewNotFound(corev1.Resource("namespaces"), clusterID)
	}
	if err != nil {
		r.Recorder.Event(&secret, corev1.EventTypeWarning, "TenantNamespaceNotFound", "Unable to get tenant namespace")
		return ctrl.Result{}, err
	}
	if secret.Namespace != ns.Name {
		r.Recorder.Event(&secret, corev1.EventTypeWarning, "WrongNamespace", "Secret not in tenant namespace")
		return ctrl.Result{}, nil
	}
	raw := make([]byte, 64)
	if _, err := rand.Read(raw); err != nil {
		return ctrl.Result{}, err
	}
	if secret.Data == nil {
		secret.Data = map[string][]byte{}
	}
	secret.Data[authv1beta1.NonceSecretField] = []byte(base64.StdEncoding.EncodeToString(raw))
	if err := r.Client.Update(ctx, &secret); err != nil {
		return ctrl.Result{}, err
	}
	r.Recorder.Event(&secret, corev1.EventTypeNormal, "NonceGenerated", "Nonce generated")
	return ctrl.Result{}, nil
}

// SetupWithManager watches the Secrets labelled liqo.io/nonce.
func (r *NonceCreator) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).Named("liqo-noncecreator").
		For(&corev1.Secret{}, builder.WithPredicates(hasLabel(authv1beta1.NonceSecretLabel))).
		Complete(r)
}

// NonceSigner is A/noncesigner-controller: it (re)writes data.signedNonce of a
// Secret labelled liqo.io/signed-nonce with Liqo's key whenever it differs from
// the signature of data.nonce. (Liqo v1.2.0 A/noncesigner-controller.)
type NonceSigner struct {
	Client client.Client
	Key    gocrypto.Signer
}

// Reconcile signs one nonce.
func (r *NonceSigner) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var secret corev1.Secret
	if err := r.Client.Get(ctx, req.NamespacedName, &secret); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	nonce, ok := secret.Data[authv1beta1.NonceSecretField]
	if !ok {
		return ctrl.Result{}, nil
	}
	sig, err := crypto.SignNonce(r.Key, string(nonce))
	if err != nil {
		return ctrl.Result{}, err
	}
	if string(secret.Data[authv1beta1.SignedNonceSecretField]) == string(sig) {
		return ctrl.Result{}, nil
	}
	secret.Data[authv1beta1.SignedNonceSecretField] = sig
	return ctrl.Result{}, r.Client.Update(ctx, &secret)
}

// SetupWithManager watches the Secrets labelled liqo.io/signed-nonce.
func (r *NonceSigner) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).Named("liqo-noncesigner").
		For(&corev1.Secret{}, builder.WithPredicates(hasLabel(authv1beta1.SignedNonceSecretLabel))).
		Complete(r)
}

func hasLabel(key string) predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool {
		_, ok := o.GetLabels()[key]
		return ok
	})
}

// tenantNamespace finds the tenant namespace of clusterID by its labels
// (pkg/tenantNamespace GetNamespace); nil when there is none.
func tenantNamespace(ctx context.Context, c client.Reader, clusterID string) (*corev1.Namespace, error) {
	var list corev1.NamespaceList
	if err := c.List(ctx, &list, client.MatchingLabels{authv1beta1.RemoteClusterIDLabel: clusterID},
		client.HasLabels{authv1beta1.TenantNamespaceLabel}); err != nil {
		return nil, err
	}
	switch len(list.Items) {
	case 0:
		return nil, nil
	case 1:
		return &list.Items[0], nil
	default:
		return nil, apierrors.NewConflict(corev1.Resource("namespaces"), clusterID, errMultipleNamespaces)
	}
}
