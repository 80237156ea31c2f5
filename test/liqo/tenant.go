package liqo

import (
	"bytes"
	"context"
	gocrypto "crypto"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"time"

	certv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	"github.com/gitpeer/gitpeer/crypto"
)

// Names the tenant controller uses (Liqo v1.2.0 A/tenant-controller).
const (
	// TenantFinalizer is added to every Tenant the controller reconciles.
	TenantFinalizer = "tenant.liqo.io/finalizer"
	// CertificateCacheSecret caches the issued certificate with the CSR it was issued for,
	// in the tenant namespace (pkg/identityManager: remoteCertificateSecret).
	CertificateCacheSecret = "liqo-remote-certificate"
	// CSRCacheField and CertificateCacheField are the keys of that Secret.
	CSRCacheField, CertificateCacheField = "csr", "certificate"
	// TenantCSRLabel marks the Kubernetes CSRs the controller creates (value "true").
	TenantCSRLabel = "liqo.io/remote-tenant-csr"
	// TenantCSRPrefix is the generateName of those CSRs.
	TenantCSRPrefix = "liqo-identity-"
	// TenantRoleBinding binds the remote-controlplane ClusterRole in the tenant namespace.
	TenantRoleBinding = authv1beta1.RoleBindingPrefix + authv1beta1.RemoteControlPlaneClusterRole
	// ClusterWideBindingPrefix prefixes the consumer ID in the ClusterRoleBinding's name.
	ClusterWideBindingPrefix = authv1beta1.RoleBindingPrefix + ClusterWideRole + "-"
)

// errNotMatchingCSR is pkg/identityManager's NotMatchingCSRError: the Tenant's CSR
// differs from the one a cached certificate was issued for. The Tenant stays stuck.
var errNotMatchingCSR = apierrors.NewBadRequest("the stored and the provided CSR do not match")

// TenantController is A/tenant-controller on the provider. On every reconcile,
// in Liqo's order: the two ClusterRoles by label (error when missing); the
// finalizer; Drained unbinds and returns; unless TolerateNoHandshake the
// handshake is checked against the single liqo-nonce for the cluster ID (a bad
// signature or CSR: an event, no status change, no requeue); the tenant
// namespace; the certificate (cached when the CSR is unchanged, a new approved
// Kubernetes CSR otherwise, renewed at 2/3 of its life; a changed CSR with a
// cached certificate fails); the bindings; then the whole status is replaced.
type TenantController struct {
	Client    client.Client
	Clientset kubernetes.Interface
	Recorder  record.EventRecorder
	Options   Options
	// CA is the API server CA of the controller's rest config (used without Options.CA).
	CA []byte
	// Now returns the current time; time.Now when nil.
	Now func() time.Time
}

// Reconcile reconciles one Tenant.
func (r *TenantController) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, err error) {
	if err := r.ensureSetup(ctx); err != nil {
		return ctrl.Result{}, err
	}
	tenant := &authv1beta1.Tenant{}
	if err := r.Client.Get(ctx, req.NamespacedName, tenant); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	consumer := string(tenant.Spec.ClusterID)
	if !tenant.DeletionTimestamp.IsZero() {
		if err := r.unbindClusterWide(ctx, consumer); err != nil {
			return ctrl.Result{}, err
		}
		controllerutil.RemoveFinalizer(tenant, TenantFinalizer)
		return ctrl.Result{}, r.Client.Update(ctx, tenant)
	}
	if !controllerutil.ContainsFinalizer(tenant, TenantFinalizer) {
		controllerutil.AddFinalizer(tenant, TenantFinalizer)
		return ctrl.Result{}, r.Client.Update(ctx, tenant)
	}
	if tenant.Spec.TenantCondition == authv1beta1.TenantConditionDrained {
		return ctrl.Result{}, r.unbind(ctx, tenant)
	}
	handshake := tenant.Spec.AuthzPolicy == nil || *tenant.Spec.AuthzPolicy != authv1beta1.TolerateNoHandshake
	if handshake {
		ok, err := r.verifyHandshake(ctx, tenant)
		if err != nil || !ok {
			return ctrl.Result{}, err
		}
	}
	ns, err := r.createNamespace(ctx, consumer)
	if err != nil {
		return ctrl.Result{}, err
	}
	tenant.Status.TenantNamespace = ns
	// The whole status is replaced by an Update at the end, whatever else wrote it.
	defer func() {
		if uerr := r.Client.Status().Update(ctx, tenant); uerr != nil {
			err = uerr
		}
	}()
	var requeue time.Duration
	if handshake {
		renew := false
		if tenant.Status.AuthParams != nil && len(tenant.Status.AuthParams.SignedCRT) > 0 {
			if renew, requeue, err = r.shouldRenew(tenant.Status.AuthParams.SignedCRT); err != nil {
				return ctrl.Result{}, err
			}
		}
		cert, err := r.ensureCertificate(ctx, tenant, ns, renew)
		if err != nil {
			r.Recorder.Event(tenant, corev1.EventTypeWarning, "AuthParamsFailed", err.Error())
			return ctrl.Result{}, err
		}
		tenant.Status.AuthParams = r.authParams(cert, tenant.Spec.ProxyURL)
		if err := r.bind(ctx, tenant, ns); err != nil {
			return ctrl.Result{}, err
		}
	}
	if err := r.bindClusterWide(ctx, consumer); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: requeue}, nil
}

// SetupWithManager watches Tenants and the namespaces they own.
func (r *TenantController) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).Named("liqo-tenant").
		For(&authv1beta1.Tenant{}).
		Owns(&corev1.Namespace{}).
		Complete(r)
}

// ensureSetup looks the two ClusterRoles up by label: a chart that lost the
// label breaks every reconcile.
func (r *TenantController) ensureSetup(ctx context.Context) error {
	for _, label := range []string{RemoteControlPlaneRoleLabel, ClusterWideRoleLabel} {
		var roles rbacv1.ClusterRoleList
		if err := r.Client.List(ctx, &roles, client.MatchingLabels{ClusterIDConfigMapLabel: label}); err != nil {
			return err
		}
		if len(roles.Items) == 0 {
			return fmt.Errorf("no ClusterRole labelled %s=%s", ClusterIDConfigMapLabel, label)
		}
	}
	return nil
}

// verifyHandshake checks the Tenant against the single nonce Secret labelled
// for its cluster ID, in any namespace. A missing nonce is an error (requeue); a
// bad signature or CSR is an event and false (no requeue, no status change).
func (r *TenantController) verifyHandshake(ctx context.Context, tenant *authv1beta1.Tenant) (bool, error) {
	var secrets corev1.SecretList
	if err := r.Client.List(ctx, &secrets, client.MatchingLabels{
		authv1beta1.NonceSecretLabel: authv1beta1.TrueValue, authv1beta1.RemoteClusterIDLabel: string(tenant.Spec.ClusterID),
	}); err != nil {
		return false, err
	}
	if len(secrets.Items) != 1 || len(secrets.Items[0].Data[authv1beta1.NonceSecretField]) == 0 {
		err := fmt.Errorf("expected one nonce secret for cluster %s with a nonce, found %d", tenant.Spec.ClusterID, len(secrets.Items))
		r.Recorder.Event(tenant, corev1.EventTypeWarning, "NonceNotFound", err.Error())
		return false, err
	}
	nonce := string(secrets.Items[0].Data[authv1beta1.NonceSecretField])
	pub, err := crypto.ParsePublicKey(tenant.Spec.PublicKey)
	if err != nil {
		return false, fmt.Errorf("failed to parse public key in Tenant resource %q: %w", tenant.Name, err)
	}
	if err := crypto.VerifyNonceSignature(pub, nonce, tenant.Spec.Signature); err != nil {
		r.Recorder.Event(tenant, corev1.EventTypeWarning, "SignatureVerificationFailed", err.Error())
		return false, nil
	}
	if err := checkControlPlaneCSR(tenant.Spec.CSR, string(tenant.Spec.ClusterID), pub); err != nil {
		r.Recorder.Event(tenant, corev1.EventTypeWarning, "InvalidCSR", err.Error())
		return false, nil
	}
	return true, nil
}

// createNamespace returns the tenant namespace found by labels, creating
// liqo-tenant-<consumer> with Liqo's labels (incl. Pod Security privileged) when absent.
func (r *TenantController) createNamespace(ctx context.Context, consumer string) (string, error) {
	ns, err := tenantNamespace(ctx, r.Client, consumer)
	if err != nil || ns != nil {
		if ns != nil {
			return ns.Name, nil
		}
		return "", err
	}
	created := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: authv1beta1.TenantNamespacePrefix + consumer,
		Labels: map[string]string{
			authv1beta1.RemoteClusterIDLabel: consumer, authv1beta1.TenantNamespaceLabel: authv1beta1.TrueValue,
			"pod-security.kubernetes.io/audit": "privileged", "pod-security.kubernetes.io/enforce": "privileged",
			"pod-security.kubernetes.io/warn": "privileged",
		},
	}}
	if err := r.Client.Create(ctx, created); err != nil {
		return "", err
	}
	return created.Name, nil
}

// shouldRenew is Liqo's 2/3 rule; the requeue is 110% of the time left to it.
func (r *TenantController) shouldRenew(certPEM []byte) (bool, time.Duration, error) {
	cert, err := crypto.ParseCertificatePEM(certPEM)
	if err != nil {
		return false, 0, err
	}
	at := cert.NotAfter.Add(-cert.NotAfter.Sub(cert.NotBefore) / 3)
	if left := at.Sub(r.now()); left > 0 {
		return false, left * 11 / 10, nil
	}
	return true, 0, nil
}

// ensureCertificate is pkg/identityManager EnsureCertificate: on renewal a new
// CSR is approved; otherwise the cached certificate is used when its CSR equals
// the Tenant's, a missing cache issues, and a changed CSR fails.
func (r *TenantController) ensureCertificate(ctx context.Context, tenant *authv1beta1.Tenant, ns string, renew bool) ([]byte, error) {
	if !renew {
		var cache corev1.Secret
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: CertificateCacheSecret}, &cache)
		switch {
		case err == nil && !bytes.Equal(cache.Data[CSRCacheField], tenant.Spec.CSR):
			return nil, errNotMatchingCSR
		case err == nil && len(cache.Data[CertificateCacheField]) > 0:
			return cache.Data[CertificateCacheField], nil
		case err != nil && !apierrors.IsNotFound(err):
			return nil, err
		}
	}
	cert, err := r.approve(ctx, tenant.Spec.CSR)
	if err != nil {
		return nil, err
	}
	cache := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: CertificateCacheSecret, Namespace: ns}}
	_, err = controllerutil.CreateOrUpdate(ctx, r.Client, cache, func() error {
		cache.Data = map[string][]byte{CSRCacheField: tenant.Spec.CSR, CertificateCacheField: cert}
		return nil
	})
	return cert, err
}

// approve creates a Kubernetes CSR as Liqo does (generateName liqo-identity-,
// labelled, kube-apiserver-client signer, no expirationSeconds), approves it and
// waits up to 30 s for the certificate.
func (r *TenantController) approve(ctx context.Context, request []byte) ([]byte, error) {
	csr := &certv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: TenantCSRPrefix, Labels: map[string]string{TenantCSRLabel: "true"}},
		Spec: certv1.CertificateSigningRequestSpec{
			Groups: []string{"system:authenticated"}, SignerName: certv1.KubeAPIServerClientSignerName, Request: request,
			Usages: []certv1.KeyUsage{certv1.UsageDigitalSignature, certv1.UsageKeyEncipherment, certv1.UsageClientAuth},
		},
	}
	csrs := r.Clientset.CertificatesV1().CertificateSigningRequests()
	csr, err := csrs.Create(ctx, csr, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	csr.Status.Conditions = append(csr.Status.Conditions, certv1.CertificateSigningRequestCondition{
		Type: certv1.CertificateApproved, Status: corev1.ConditionTrue,
		Reason: "IdentityManagerApproval", Message: "This CSR was approved by Liqo Identity Manager",
	})
	if _, err := csrs.UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{}); err != nil {
		return nil, err
	}
	var cert []byte
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := csrs.Get(ctx, csr.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		cert = got.Status.Certificate
		return len(cert) > 0, nil
	})
	if err != nil {
		return nil, errors.Join(errors.New("waiting for the certificate"), err)
	}
	return cert, nil
}

// authParams forges the status: the CA override, else empty with a trusted CA,
// else the rest config's CA; the advertised API server; the Tenant's proxyURL.
func (r *TenantController) authParams(cert []byte, proxyURL *string) *authv1beta1.AuthParams {
	ca := r.Options.CA
	if len(ca) == 0 && !r.Options.TrustedCA {
		ca = r.CA
	}
	return &authv1beta1.AuthParams{CA: ca, SignedCRT: cert, APIServer: r.Options.APIServer, ProxyURL: proxyURL}
}

// bind creates the RoleBinding of the remote-controlplane ClusterRole to User
// <consumer> in the tenant namespace, owned by the Tenant (an existing one is kept).
func (r *TenantController) bind(ctx context.Context, tenant *authv1beta1.Tenant, ns string) error {
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: TenantRoleBinding, Namespace: ns,
			Labels: map[string]string{authv1beta1.RemoteClusterIDLabel: string(tenant.Spec.ClusterID)}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: authv1beta1.RemoteControlPlaneClusterRole},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: string(tenant.Spec.ClusterID)}},
	}
	if err := controllerutil.SetOwnerReference(tenant, rb, r.Client.Scheme()); err != nil {
		return err
	}
	return createIfAbsent(ctx, r.Client, rb)
}

// bindClusterWide binds the cluster-wide ClusterRole to Group <consumer>.
func (r *TenantController) bindClusterWide(ctx context.Context, consumer string) error {
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: ClusterWideBindingPrefix + consumer,
			Labels: map[string]string{authv1beta1.RemoteClusterIDLabel: consumer}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: ClusterWideRole},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: consumer}},
	}
	return createIfAbsent(ctx, r.Client, crb)
}

// unbind removes both bindings of a drained Tenant.
func (r *TenantController) unbind(ctx context.Context, tenant *authv1beta1.Tenant) error {
	if err := r.unbindClusterWide(ctx, string(tenant.Spec.ClusterID)); err != nil {
		return err
	}
	ns, err := tenantNamespace(ctx, r.Client, string(tenant.Spec.ClusterID))
	if err != nil || ns == nil {
		return err
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: TenantRoleBinding, Namespace: ns.Name}}
	return client.IgnoreNotFound(r.Client.Delete(ctx, rb))
}

func (r *TenantController) unbindClusterWide(ctx context.Context, consumer string) error {
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: ClusterWideBindingPrefix + consumer}}
	return client.IgnoreNotFound(r.Client.Delete(ctx, crb))
}

func (r *TenantController) now() time.Time {
	if r.Now == nil {
		return time.Now()
	}
	return r.Now()
}

// checkControlPlaneCSR is Liqo's CSR check for a control-plane Tenant, looser
// than gitpeer's: a PEM CSR with a valid signature, CN = cluster ID,
// Organization[0] = liqo.io and the Tenant's key; nothing else is checked.
func checkControlPlaneCSR(csrPEM []byte, clusterID string, key gocrypto.PublicKey) error {
	block, _ := pem.Decode(csrPEM)
	if block == nil {
		return errors.New("invalid CSR: no PEM block")
	}
	csr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return err
	}
	if err := csr.CheckSignature(); err != nil {
		return err
	}
	switch {
	case csr.Subject.CommonName != clusterID:
		return fmt.Errorf("invalid CSR: common name %q is not %q", csr.Subject.CommonName, clusterID)
	case len(csr.Subject.Organization) == 0 || csr.Subject.Organization[0] != authv1beta1.CertificateOrganization:
		return fmt.Errorf("invalid CSR: organization %v does not start with %s", csr.Subject.Organization, authv1beta1.CertificateOrganization)
	case !samePublicKey(csr.PublicKey, key):
		return errors.New("invalid CSR: public key is not the Tenant's")
	}
	return nil
}

// samePublicKey reports whether a and b are the same public key.
func samePublicKey(a, b gocrypto.PublicKey) bool {
	k, ok := a.(interface{ Equal(gocrypto.PublicKey) bool })
	return ok && k.Equal(b)
}
