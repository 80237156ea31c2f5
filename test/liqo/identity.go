package liqo

import (
	"context"
	gocrypto "crypto"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	"github.com/gitpeer/gitpeer/crypto"
)

// IdentityController is A/identity-controller on the consumer: on every event
// of an Identity or of the Secret it owns, it writes Secret
// kubeconfig-<identity> (key kubeconfig; labels liqo.io/remote-cluster-id and
// liqo.io/identity-type; annotation liqo.io/remote-tenant-namespace only when
// spec.namespace is set; owned by the Identity) built with *Liqo's* private key,
// and sets status.kubeconfigSecretRef. (Liqo v1.2.0 A/identity-controller.)
type IdentityController struct {
	Client client.Client
	Key    gocrypto.Signer
}

// Reconcile writes the kubeconfig of one Identity.
func (r *IdentityController) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	identity := &authv1beta1.Identity{}
	if err := r.Client.Get(ctx, req.NamespacedName, identity); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !identity.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	ns := ""
	if identity.Spec.Namespace != nil {
		ns = *identity.Spec.Namespace
	}
	proxy := ""
	if identity.Spec.AuthParams.ProxyURL != nil {
		proxy = *identity.Spec.AuthParams.ProxyURL
	}
	kubeconfig, err := crypto.BuildKubeconfig(crypto.KubeconfigParams{
		ProviderClusterID: string(identity.Spec.ClusterID), IdentityName: identity.Name, Namespace: ns,
		APIServer: identity.Spec.AuthParams.APIServer, ProxyURL: proxy, CA: identity.Spec.AuthParams.CA,
		Certificate: identity.Spec.AuthParams.SignedCRT, Key: r.Key,
	})
	if err != nil {
		return ctrl.Result{}, err
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{
		Name: authv1beta1.KubeconfigSecretPrefix + identity.Name, Namespace: identity.Namespace}}
	if _, err := controllerutil.CreateOrUpdate(ctx, r.Client, secret, func() error {
		if secret.Labels == nil {
			secret.Labels = map[string]string{}
		}
		secret.Labels[authv1beta1.RemoteClusterIDLabel] = string(identity.Spec.ClusterID)
		secret.Labels[authv1beta1.IdentityTypeLabel] = string(identity.Spec.Type)
		if ns != "" {
			metav1.SetMetaDataAnnotation(&secret.ObjectMeta, authv1beta1.RemoteTenantNamespaceAnnotation, ns)
		}
		secret.Data = map[string][]byte{authv1beta1.KubeconfigSecretField: kubeconfig}
		return controllerutil.SetControllerReference(identity, secret, r.Client.Scheme())
	}); err != nil {
		return ctrl.Result{}, err
	}
	if ref := identity.Status.KubeconfigSecretRef; ref == nil || ref.Name != secret.Name {
		identity.Status.KubeconfigSecretRef = &corev1.LocalObjectReference{Name: secret.Name}
		return ctrl.Result{}, r.Client.Status().Update(ctx, identity)
	}
	return ctrl.Result{}, nil
}

// SetupWithManager watches Identities and the Secrets they own.
func (r *IdentityController) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).Named("liqo-identity").
		For(&authv1beta1.Identity{}).
		Owns(&corev1.Secret{}).
		Complete(r)
}
