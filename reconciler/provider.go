package reconciler

import (
	"context"
	"crypto/x509"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/gitsync"
	"github.com/gitpeer/gitpeer/reconciler/plan/provider"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// providerStep is one peering's provider step: planProvide (planning.go)
// observes and plans it, observeProvider and applyProvider (provider_apply.go) run it
// as observe → plan (reconciler/plan/provider) → apply, with the standalone
// cluster writes it needs (tenant namespace, nonce, Tenant, bindings) and the
// provider's terms.
type providerStep struct{ *session }

func (s *session) providerStep() providerStep { return providerStep{s} }

// providing is one peering directory <me>/<consumer> of a provider's round,
// planned: its tenant namespace and Tenant (nil when there is none), and the
// step to take, or the outcome when planning settled it already (done).
type providing struct {
	pe     *protocol.Documents
	ns     string
	tenant *authv1beta1.Tenant
	// namespace: the tenant namespace exists (and is the PeeringRepository's, or the peering is done).
	namespace bool
	// opening are the actions that open the step, or report it when done (provider.Planned).
	opening []provider.Action
	step    provider.Step
	done    *outcome
	// signs: the step signs a certificate (an issuance or a renewal, not in
	// Liqo mode); provideAll takes such steps last, with the round's CSR list.
	signs bool
	// heldBack: the round's limit held the peering back (done says so); the next round takes it.
	heldBack bool
}

// provide takes the step planned for a peering (planProvide): the actions
// that open it, then the step itself unless planning settled it (decide,
// apply). The peerings of a round run it at once (provideAll).
func (s providerStep) provide(ctx context.Context, p providing) outcome {
	return s.apply(ctx, p, s.decide(ctx, p))
}

// issuedOutcome is the outcome of an issued peering holding cert, by the
// Tenant's condition (provider.Standing).
func issuedOutcome(tenant *authv1beta1.Tenant, cert *x509.Certificate) outcome {
	phase, message := provider.Standing(tenant.Spec.TenantCondition, cert)
	return outcome{phase: phase, message: message}
}

// issuedConsumers lists the consumers holding a Tenant issued by this
// PeeringRepository. It reads their names from the informer's store, by the
// owner index: every round asks, and copying thousands of cached Tenants to
// read their names would cost more than the round.
func (s providerStep) issuedConsumers() ([]string, error) {
	objs, err := s.r.tenants.ByIndex(ownerIndex, string(s.obj.UID))
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(objs))
	for _, obj := range objs {
		o, ok := obj.(client.Object)
		if !ok {
			return nil, fmt.Errorf("cached Tenant is a %T", obj)
		}
		out = append(out, o.GetName())
	}
	return out, nil
}

// ensureTenantNamespace makes sure liqo-tenant-<peer> exists with Liqo's
// labels (Pod Security privileged included) and belongs to this PeeringRepository: it creates it, adopts a legacy
// one or one Liqo created (tenantNamespace) and refuses any other.
func (s providerStep) ensureTenantNamespace(ctx context.Context, peer, ns string) error {
	obj, err := s.owning().tenantNamespace(ctx, peer, ns)
	if err != nil || obj != nil {
		return err
	}
	labels := authv1beta1.TenantNamespaceLabels(authv1beta1.ClusterID(peer))
	labels[vocabulary.ManagedByLabel], labels[vocabulary.OwnerLabel] = vocabulary.ManagedBy, string(s.obj.UID)
	return s.r.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: labels,
		Annotations: map[string]string{vocabulary.ModeAnnotation: s.modeName()}}})
}

// putNonce stores a.Nonce in the consumer's liqo-nonce Secret, created if
// absent. When the step found none it tries a create first: Secrets are not
// cached, and reading it first would cost each new request a read that
// finds nothing.
func (s providerStep) putNonce(ctx context.Context, consumer, ns string, a provider.PutNonceSecret) error {
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: authv1beta1.NonceSecretName}}
	set := func() {
		metav1.SetMetaDataLabel(&secret.ObjectMeta, authv1beta1.NonceSecretLabel, authv1beta1.TrueValue)
		metav1.SetMetaDataLabel(&secret.ObjectMeta, authv1beta1.RemoteClusterIDLabel, consumer)
		metav1.SetMetaDataLabel(&secret.ObjectMeta, vocabulary.ManagedByLabel, vocabulary.ManagedBy)
		metav1.SetMetaDataLabel(&secret.ObjectMeta, vocabulary.OwnerLabel, string(s.obj.UID))
		secret.Data = map[string][]byte{authv1beta1.NonceSecretField: []byte(a.Nonce)}
	}
	if !a.Exists {
		set()
		if err := s.r.Create(ctx, secret); !apierrors.IsAlreadyExists(err) {
			return err
		}
		secret = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: authv1beta1.NonceSecretName}}
	}
	_, err := controllerutil.CreateOrUpdate(ctx, s.r.Client, secret, func() error { set(); return nil })
	return err
}

// ownedBindings names the RoleBindings this PeeringRepository owns in ns.
func (s providerStep) ownedBindings(ctx context.Context, ns string) ([]string, error) {
	var owned rbacv1.RoleBindingList
	if err := s.r.List(ctx, &owned, client.InNamespace(ns), s.owning().ownerLabels()); err != nil {
		return nil, err
	}
	names := make([]string, len(owned.Items))
	for i := range owned.Items {
		names[i] = owned.Items[i].Name
	}
	return names, nil
}

// applyBindings applies b in the consumer's tenant namespace ns: the
// consumer bound to the configured ClusterRole, and this PeeringRepository's
// other bindings there removed (to a previous clusterRoleName, or all of
// them when the Tenant is Drained).
func (s providerStep) applyBindings(ctx context.Context, consumer, ns string, b provider.Bindings) error {
	for _, name := range b.Delete {
		if err := s.r.Delete(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	if b.Bind == nil {
		return nil
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: b.Bind.Name}}
	_, err := controllerutil.CreateOrUpdate(ctx, s.r.Client, rb, func() error {
		metav1.SetMetaDataLabel(&rb.ObjectMeta, authv1beta1.RemoteClusterIDLabel, consumer)
		metav1.SetMetaDataLabel(&rb.ObjectMeta, vocabulary.ManagedByLabel, vocabulary.ManagedBy)
		metav1.SetMetaDataLabel(&rb.ObjectMeta, vocabulary.OwnerLabel, string(s.obj.UID))
		rb.RoleRef, rb.Subjects = b.Bind.RoleRef, b.Bind.Subjects
		return nil
	})
	return err
}

// providerCA is the CA consumers must trust: spec.provider.caSecretRef's
// ca.crt, or the CA of the agent's own connection to its API server.
func (s providerStep) providerCA(ctx context.Context) ([]byte, error) {
	if ref := s.obj.Spec.Provider.CASecretRef; ref != nil {
		secret, err := s.r.secret(ctx, s.obj.Namespace, ref.Name)
		if err != nil {
			return nil, err
		}
		return secret.Data["ca.crt"], nil
	}
	if len(s.r.Config.CAData) > 0 {
		return s.r.Config.CAData, nil
	}
	return os.ReadFile(s.r.Config.CAFile)
}

func (s providerStep) apiServer() string {
	if s.obj.Spec.Provider.APIServer != "" {
		return s.obj.Spec.Provider.APIServer
	}
	return s.r.Config.Host
}

// publishTerms stages the provider's terms.yaml for the round's commit (what merging a tenant.yaml
// grants: the tenant ClusterRole and its rules, the tenant namespace, the
// certificate lifetime and renewal, the API server) when the branch holds
// other terms, invalid ones or none. Consumers quote it in their pull
// requests; the offline checks compare proposals with it. A failure is
// reported (event, log) and blocks nothing.
func (s providerStep) publishTerms(ctx context.Context) {
	if err := s.writeTerms(ctx); err != nil {
		log.FromContext(ctx).Error(err, "publishing the provider's terms")
		s.r.event(s.obj, corev1.EventTypeWarning, vocabulary.ReasonTermsFailed, "publishing %s: %v", protocol.TermsPath(string(s.obj.Spec.ClusterID)), err)
	}
}

// writeTerms builds the terms from the provider's spec and the tenant
// ClusterRole it binds (termsSpec), and stages them for the round's commit
// unless the branch holds them already.
func (s providerStep) writeTerms(ctx context.Context) error {
	me := string(s.obj.Spec.ClusterID)
	spec, err := s.termsSpec(ctx)
	if err != nil {
		return err
	}
	if published, err := s.loaded.Terms(me); err == nil && equality.Semantic.DeepEqual(published.Spec, spec) {
		return nil
	}
	doc, err := protocol.TermsDocument(spec)
	if err != nil {
		return err
	}
	s.branchIO().stage(gitpeerv1alpha1.ProviderRole, "", protocol.Message{Action: vocabulary.ActionPublishTerms, Subject: fmt.Sprintf("Publish the terms of %s", me), Provider: me},
		nil, gitsync.Put(protocol.TermsPath(me), doc))
	return nil
}
