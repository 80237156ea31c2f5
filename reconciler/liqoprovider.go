package reconciler

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/gitsync"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/reconciler/provider"
)

// The provider in Liqo mode: gitpeer moves the files and gates approval, and
// Liqo's tenant controller does the crypto. The nonce is created as `liqoctl
// create nonce` creates it and filled by Liqo's nonce creator; it is never
// changed while a Tenant exists (Liqo verifies the handshake against it on
// every reconcile), only deleted at revocation. A merged Tenant is verified
// with the same rules as in standalone mode (provider.CheckTenant),
// before it is applied; gitpeer then creates no CSR and no RoleBinding: Liqo
// issues, binds and renews. identity.yaml is what `liqoctl generate identity`
// makes of the Tenant's status, committed once per change of that status
// after its certificate is checked and its serial recorded.

// LiqoCertificateCacheSecret is the Secret in a tenant namespace where Liqo's
// tenant controller caches the certificate it issued with the CSR it was
// issued for (provider.LiqoCertificateCache). Revocation deletes it, or a new
// peering of the consumer would be stuck on a CSR that does not match the cache.
const LiqoCertificateCacheSecret = provider.LiqoCertificateCache

// createLiqoNonce creates the consumer's nonce Secret as `liqoctl create
// nonce` does: labels only, for Liqo's nonce creator to fill data.nonce. It
// carries this PeeringRepository's labels too, so that revocation deletes it.
func (s *session) createLiqoNonce(ctx context.Context, consumer, ns string) error {
	return client.IgnoreAlreadyExists(s.r.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{
		Namespace: ns, Name: authv1beta1.NonceSecretName,
		Labels: map[string]string{
			authv1beta1.NonceSecretLabel: authv1beta1.TrueValue, authv1beta1.RemoteClusterIDLabel: consumer,
			ManagedByLabel: managedBy, OwnerLabel: string(s.obj.UID),
		},
	}}))
}

// issueLiqo verifies and applies the merged Tenant in place of current
// (applyTenant, which fails closed on a refused one) for Liqo's tenant
// controller to issue, and publishes the certificate once it has.
func (s *session) issueLiqo(ctx context.Context, pe *protocol.Documents, ns string, current *authv1beta1.Tenant) outcome {
	tenant, _, note, stop := s.applyTenant(ctx, pe, ns, current)
	if stop != nil {
		return *stop
	}
	if tenant.Status.AuthParams == nil {
		return outcome{phase: gitpeerv1alpha1.PhaseNonceIssued, message: joinNote("Tenant verified and applied; waiting for Liqo's tenant controller to issue its certificate", note)}
	}
	o := s.publishLiqoIdentity(ctx, pe, tenant)
	o.message = joinNote(o.message, note)
	return o
}

// publishLiqoIdentity keeps an issued peering of Liqo mode true to the
// branch: the Tenant's condition is the branch's, and the certificate Liqo put
// in its status (issued or renewed) is checked, recorded, then committed as
// identity.yaml unless the branch carries it already.
func (s *session) publishLiqoIdentity(ctx context.Context, pe *protocol.Documents, tenant *authv1beta1.Tenant) outcome {
	if err := protocol.CheckNoAWSConfig(tenant.Status.AuthParams); err != nil {
		msg := fmt.Sprintf("Liqo answered Tenant %s with an IAM identity, not committed: %v", pe.Consumer, err)
		s.r.eventAbout(s.obj, corev1.EventTypeWarning, ReasonLiqoAWSUnsupported, pe.Consumer, "%s", msg)
		return outcome{phase: gitpeerv1alpha1.PhaseFailed, reason: ReasonLiqoAWSUnsupported, message: msg}
	}
	if err := s.syncTenantCondition(ctx, tenant, pe.Tenant.Spec.TenantCondition); err != nil {
		return outcome{err: err}
	}
	key, err := crypto.ParsePublicKey(tenant.Spec.PublicKey)
	if err != nil {
		return outcome{err: fmt.Errorf("applied Tenant of %s: %w", pe.Consumer, err)}
	}
	cert, err := provider.CheckLiqoCertificate(tenant.Status.AuthParams.SignedCRT, key, pe.Consumer, s.r.Now())
	if cerr := (*crypto.Error)(nil); errors.As(err, &cerr) && cerr.Rule == crypto.RuleCertificateKey {
		// The status still holds the certificate of the key the Tenant had
		// before an approved rekey (dropStaleLiqoCache): Liqo has not issued yet.
		return outcome{phase: gitpeerv1alpha1.PhaseNonceIssued, message: "Tenant applied with a new key; waiting for Liqo's tenant controller to issue its certificate"}
	}
	if err != nil {
		msg := fmt.Sprintf("certificate in the status of Tenant %s not committed: %v", pe.Consumer, err)
		s.r.eventAbout(s.obj, corev1.EventTypeWarning, ReasonCertificateRejected, pe.Consumer, "%s", msg)
		return outcome{phase: gitpeerv1alpha1.PhaseFailed, message: msg}
	}
	// Recorded before it is published: a revoked certificate must block a revival.
	if err := s.recordIssued(ctx, pe.Consumer, cert); err != nil {
		return outcome{err: err}
	}
	if err := s.recordSliceCertificates(ctx, pe.Consumer); err != nil {
		return outcome{err: err}
	}
	s.noteCertificate(gitpeerv1alpha1.ProviderRole, pe.Consumer, certRecord{expiry: cert.NotAfter.Unix()})
	if action := provider.IdentityAction(tenant.Status.AuthParams, pe.Identity); action != "" {
		doc, err := protocol.IdentityFromTenant(pe.Provider, tenant)
		if err != nil {
			return outcome{err: err}
		}
		reason := map[string]string{protocol.ActionIssueIdentity: ReasonIssued, protocol.ActionRenewIdentity: ReasonRenewed}[action]
		s.stageIdentity(ctx, pe, tenant, action, reason, cert, gitsync.Put(protocol.Path{Provider: pe.Provider, Consumer: pe.Consumer, Kind: protocol.Identity}.String(), doc))
	}
	o := issuedOutcome(tenant, cert)
	if advertised, published := tenant.Status.AuthParams.APIServer, s.apiServer(); provider.APIServerDiffers(advertised, published) {
		msg := fmt.Sprintf("Liqo advertises API server %q (its chart's apiServer.address, or its control-plane node) but this provider publishes %q (spec.provider.apiServer, or the agent's own API server) in terms.yaml: "+
			"consumers that check the terms refuse identity.yaml; set Liqo's apiServer.address and spec.provider.apiServer to the same address", advertised, published)
		s.r.eventAbout(s.obj, corev1.EventTypeWarning, ReasonLiqoAPIServerMismatch, pe.Consumer, "%s", msg)
		o.reason, o.message = ReasonLiqoAPIServerMismatch, joinNote(o.message, msg)
	}
	return o
}

// Reasons (events, status.peerings) of what Liqo answered a Tenant with.
const (
	// ReasonLiqoAWSUnsupported: Liqo on EKS with IAM answered with awsConfig, which gitpeer does not commit (protocol.ErrAWSConfig).
	ReasonLiqoAWSUnsupported = "LiqoAWSUnsupported"
	// ReasonLiqoAPIServerMismatch: the API server Liqo advertises is not the one the provider's terms publish.
	ReasonLiqoAPIServerMismatch = "LiqoAPIServerMismatch"
)

// revokeConsumer takes back everything issued or bound for consumer, in
// Liqo's order: every certificate is recorded (the one in the status of its
// Tenant, as Liqo may have renewed it since the last round, and Liqo's
// ResourceSlice certificates: those recorded as Liqo issued them, by slice,
// whether the slice still exists or not, and those in the status of the
// slices and in Liqo's caches) and marked revoked; the consumer is drained as
// Liqo's Drained drains it (its ResourceSlices and NamespaceMaps go, and with
// them Liqo's bindings of
// Group <consumer> in offloaded namespaces); then what this PeeringRepository
// created for it goes (deleteOwned: the Tenant, whose deletion makes Liqo
// unbind it), and last Liqo's certificate caches (the control plane's and
// those of every slice existing or recorded: Liqo never deletes a slice's
// cache when the slice goes), or a new peering would get a revoked
// certificate back from them. Without Liqo there is nothing to drain
// and no cache to delete.
func (s *session) revokeConsumer(ctx context.Context, consumer string) error {
	ns := authv1beta1.TenantNamespaceName(authv1beta1.ClusterID(consumer))
	drained, err := s.liqoDrained(ctx, consumer, ns)
	if err != nil {
		return err
	}
	var slices []string
	for _, obj := range drained {
		if obj.GetKind() == provider.LiqoDrainedKinds[0].Kind {
			slices = append(slices, obj.GetName())
		}
	}
	if err := s.recordTenantCertificate(ctx, consumer); err != nil {
		return err
	}
	if err := s.recordSliceCertificates(ctx, consumer); err != nil {
		return err
	}
	records, err := s.records(ctx, consumer)
	if err != nil {
		return err
	}
	caches := provider.RevokedCaches(slices, records.Certificates)
	if err := s.recordLiqoCertificates(ctx, consumer, ns, drained, caches); err != nil {
		return err
	}
	if err := s.recordRevoked(ctx, consumer); err != nil {
		return err
	}
	for i := range drained {
		uid := drained[i].GetUID()
		if err := s.r.Delete(ctx, &drained[i], client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("draining %s %s/%s: %w", drained[i].GetKind(), ns, drained[i].GetName(), err)
		}
	}
	if err := s.deleteOwned(ctx, consumer, s.obj.Spec.Provider.DeleteNamespaceOnRevoke); err != nil {
		return err
	}
	return s.deleteLiqoCaches(ctx, ns, caches...)
}

// liqoDrained lists, in the tenant namespace ns, what Liqo's Drained deletes
// for consumer (provider.LiqoDrainedKinds, provider.LiqoDrainSelector): what
// Liqo's CRD replicator created there for it. It reads from the API server:
// no informer watches these kinds. A kind whose CRD is not installed (no
// Liqo) has nothing to drain.
func (s *session) liqoDrained(ctx context.Context, consumer, ns string) ([]unstructured.Unstructured, error) {
	var out []unstructured.Unstructured
	for _, gvk := range provider.LiqoDrainedKinds {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		err := s.r.apiReader().List(ctx, list, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: provider.LiqoDrainSelector(consumer)})
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("listing the %ss of %s: %w", gvk.Kind, consumer, err)
		}
		out = append(out, list.Items...)
	}
	return out, nil
}

// recordLiqoCertificates records the certificates Liqo issued for the
// ResourceSlices among drained (from their status) and those in its caches
// in ns. A certificate that does not parse is no certificate anyone could use.
func (s *session) recordLiqoCertificates(ctx context.Context, consumer, ns string, drained []unstructured.Unstructured, caches []string) error {
	var pems [][]byte
	for i := range drained {
		pem, err := provider.SliceCertificate(&drained[i])
		if err == nil && pem != nil {
			pems = append(pems, pem)
		}
	}
	for _, name := range caches {
		secret := &corev1.Secret{}
		if err := s.r.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, secret); err != nil {
			if client.IgnoreNotFound(err) != nil {
				return err
			}
			continue
		}
		pems = append(pems, secret.Data[provider.LiqoCacheCertificateKey])
	}
	var certs []*x509.Certificate
	for _, pem := range pems {
		if cert, err := crypto.ParseCertificatePEM(pem); err == nil {
			certs = append(certs, cert)
		}
	}
	return s.recordIssued(ctx, consumer, certs...)
}

// deleteLiqoCaches deletes Liqo's certificate caches names in the tenant namespace ns.
func (s *session) deleteLiqoCaches(ctx context.Context, ns string, names ...string) error {
	for _, name := range names {
		cache := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		if err := s.r.Delete(ctx, cache); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}

// dropStaleLiqoCache prepares an approved change of the CSR of an applied
// Tenant (a rekey, or a new CSR for the same key): the certificate in its
// status is recorded, and Liqo's certificate cache is deleted before the new
// spec is applied. Liqo's tenant controller refuses a CSR that differs from
// the cached one and leaves the Tenant stuck (liqotech/liqo v1.2.0:
// pkg/identityManager/certificateIdentityProvider.go, the liqo-remote-certificate cache).
func (s *session) dropStaleLiqoCache(ctx context.Context, pe *protocol.Documents, ns string) error {
	applied := &authv1beta1.Tenant{}
	if err := s.r.Get(ctx, client.ObjectKey{Namespace: ns, Name: pe.Consumer}, applied); err != nil {
		return client.IgnoreNotFound(err)
	}
	if !s.owns(applied) || bytes.Equal(applied.Spec.CSR, pe.Tenant.Spec.CSR) {
		return nil
	}
	if err := s.recordTenantCertificate(ctx, pe.Consumer); err != nil {
		return err
	}
	return s.deleteLiqoCaches(ctx, ns, provider.LiqoCertificateCache)
}

// recordTenantCertificate records the certificate in the status of the
// consumer's Tenant, if this PeeringRepository applied one.
func (s *session) recordTenantCertificate(ctx context.Context, consumer string) error {
	tenant := &authv1beta1.Tenant{}
	key := client.ObjectKey{Namespace: authv1beta1.TenantNamespaceName(authv1beta1.ClusterID(consumer)), Name: consumer}
	if err := s.r.Get(ctx, key, tenant); err != nil {
		return client.IgnoreNotFound(err)
	}
	if !s.owns(tenant) || tenant.Status.AuthParams == nil {
		return nil
	}
	cert, err := crypto.ParseCertificatePEM(tenant.Status.AuthParams.SignedCRT)
	if err != nil {
		return nil //nolint:nilerr // no certificate anyone could use
	}
	return s.recordIssued(ctx, consumer, cert)
}

// liqoMode reports whether the session runs in Liqo mode (spec.liqo, liqo.Detect).
func (s *session) liqoMode() bool { return s.liqo.Active }
