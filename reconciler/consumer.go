package reconciler

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"text/template"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/gitsync"
	"github.com/gitpeer/gitpeer/reconciler/check"
	"github.com/gitpeer/gitpeer/reconciler/consumer"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/reconciler/whoami"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// consume runs the consumer side of one peering directory <provider>/<me>:
// consumer.Decide picks the step from the branch and what the round observed.
func (s *session) consume(ctx context.Context, pe *protocol.Documents) outcome {
	ns := authv1beta1.TenantNamespaceName(authv1beta1.ClusterID(pe.Provider))
	observed, nsObj, err := s.observeConsumer(ctx, pe.Provider, ns)
	if err != nil {
		return outcome{err: err}
	}
	step := consumer.Decide(pe, observed)
	if step != consumer.DropIdentity {
		if o, stop := s.checkMode(ctx, pe.Provider, nsObj); stop {
			return o
		}
	}
	switch step {
	case consumer.ApplyIdentity:
		return s.applyIdentity(ctx, pe, ns)
	case consumer.KeepIdentity:
		return outcome{phase: gitpeerv1alpha1.PhaseFailed, message: fmt.Sprintf("%v; skipped: the current Identity is kept", pe.Invalid[vocabulary.IdentityFile])}
	case consumer.DropIdentity:
		return s.dropIdentity(ctx, pe, ns)
	case consumer.StayRevoked:
		return outcome{phase: gitpeerv1alpha1.PhaseRevoked, message: fmt.Sprintf(
			"identity revoked by provider %s at %s; not requesting again on its own: to peer again, set annotation %s=%s on this PeeringRepository (or commit a request with gitpeer request)",
			pe.Provider, nsObj.Annotations[vocabulary.RevokedAnnotation], gitpeerv1alpha1.RequestAgainAnnotation, pe.Provider)}
	case consumer.RequestAgain:
		if err := s.requestAgain(ctx, nsObj); err != nil {
			return outcome{err: err}
		}
		return s.request(ctx, pe)
	case consumer.Request:
		return s.request(ctx, pe)
	case consumer.WaitForNonce:
		return outcome{phase: gitpeerv1alpha1.PhaseRequested, message: "waiting for the provider's nonce"}
	}
	return s.proposeTenant(ctx, pe, ns)
}

// observeConsumer returns what the cluster holds for provider: whether its
// Identity exists and its tenant namespace (nil if none) with the revocation
// mark.
func (s *session) observeConsumer(ctx context.Context, provider, ns string) (consumer.Observed, *corev1.Namespace, error) {
	var o consumer.Observed
	name := authv1beta1.ControlPlaneIdentityName(authv1beta1.ClusterID(provider))
	err := s.r.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &authv1beta1.Identity{})
	if client.IgnoreNotFound(err) != nil {
		return o, nil, err
	}
	o.Identity = err == nil
	nsObj := &corev1.Namespace{}
	if err := s.r.Get(ctx, client.ObjectKey{Name: ns}, nsObj); err != nil {
		return o, nil, client.IgnoreNotFound(err)
	}
	_, o.Revoked = nsObj.Annotations[vocabulary.RevokedAnnotation]
	o.RequestAgain = s.obj.GetAnnotations()[gitpeerv1alpha1.RequestAgainAnnotation] == provider
	return o, nsObj, nil
}

// request commits request.yaml with the cluster's public key: to the review branch, where it
// reaches the branch only when someone merges it (the pull request the agent opens with
// spec.consumer.pullRequest, or one a person opens), so the consumer needs no push right to the
// branch; in direct mode, straight to the branch.
func (s *session) request(ctx context.Context, pe *protocol.Documents) outcome {
	doc, err := protocol.RequestDocument(pe.Provider, pe.Consumer, s.key.Public())
	if err != nil {
		return outcome{err: err}
	}
	msg := protocol.Message{
		Subject: fmt.Sprintf("Request peering of %s with %s", pe.Consumer, pe.Provider),
		Action:  vocabulary.ActionRequest, Provider: pe.Provider, Consumer: pe.Consumer,
	}
	change := gitsync.Put(protocol.Path{Provider: pe.Provider, Consumer: pe.Consumer, Kind: vocabulary.RequestFile}.String(), doc)
	requested := func(where string) {
		s.r.eventAbout(s.obj, corev1.EventTypeNormal, gitpeerv1alpha1.RequestedReason, pe.Provider, "request.yaml for provider %s pushed to %s", pe.Provider, where)
	}
	if s.obj.Spec.Consumer.Direct {
		s.stage(ctx, gitpeerv1alpha1.ConsumerRole, pe.Provider, msg, func(_ context.Context, pushed bool) error {
			if pushed {
				requested("the branch")
				s.warnDirect(pe.Provider, "request.yaml")
			}
			return nil
		}, change)
		return outcome{phase: gitpeerv1alpha1.PhaseRequested, message: "request.yaml committed to the branch (" + directMode + "); waiting for the provider's nonce"}
	}
	branch, err := s.reviewBranch(pe)
	if err != nil {
		return outcome{err: err}
	}
	pushed, err := s.pushReview(ctx, branch, msg, change)
	if err != nil {
		return outcome{err: err}
	}
	if pushed {
		requested("branch " + branch)
	}
	return outcome{phase: gitpeerv1alpha1.PhaseRequested, message: fmt.Sprintf(
		"request.yaml proposed on branch %s; waiting for someone to merge it into %s, then for the provider's nonce", branch, s.obj.GetBranch())}
}

// pushReview pushes change to the review branch, the agent's own, written by this peering alone:
// its one write of the round. It reports whether it made a commit (false: the change was there).
func (s *session) pushReview(ctx context.Context, branch string, msg protocol.Message, change gitsync.FileChange) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.obj.GetTimeout())
	defer cancel()
	var pushed bool
	_, err := observeGit("write", func() (plumbing.Hash, error) {
		res, err := s.repo.WriteReview(ctx, branch, msg, []gitsync.FileChange{change})
		pushed = res.Pushed
		return res.Commit, err
	})
	return pushed, err
}

// directMode names spec.consumer.direct for what it is in the messages of its peerings, and
// directModeWarning says what it gives away.
const (
	directMode        = "direct mode, for single-admin labs only"
	directModeWarning = "spec.consumer.direct is on: this cluster commits request.yaml and tenant.yaml straight to the branch, so its push is the approval and its credentials can push the protected branch; use it only in single-admin labs"
)

// warnDirect records a Warning: in direct mode the consumer committed file for provider straight
// to the branch, approved by no one but itself.
func (s *session) warnDirect(provider, file string) {
	s.r.eventAbout(s.obj, corev1.EventTypeWarning, gitpeerv1alpha1.DirectModeReason, provider, "%s for provider %s committed straight to the branch: %s", file, provider, directModeWarning)
}

// proposeTenant signs the provider's nonce, builds the CSR and pushes
// tenant.yaml for review (or to the branch in direct mode), once per nonce.
func (s *session) proposeTenant(ctx context.Context, pe *protocol.Documents, ns string) outcome {
	nonce := pe.Nonce.Spec.Nonce
	branch, err := s.reviewBranch(pe)
	if err != nil {
		return outcome{err: err}
	}
	where := "branch " + branch
	if branch == "" {
		where = "the branch (" + directMode + ")"
	}
	if s.liqo.Active {
		return s.proposeLiqoTenant(ctx, pe, ns, branch, where)
	}
	tenant, err := protocol.NewTenant(pe.Consumer, s.key, nonce)
	if err != nil {
		return outcome{err: err}
	}
	signature := tenant.Spec.Signature
	if pe.Tenant != nil && bytes.Equal(pe.Tenant.Spec.Signature, signature) {
		return outcome{phase: gitpeerv1alpha1.PhaseAwaitingApproval, message: "tenant.yaml merged; waiting for identity.yaml"}
	}
	waiting := outcome{phase: gitpeerv1alpha1.PhaseAwaitingApproval, message: "tenant.yaml proposed on " + where + "; waiting for approval"}
	if s.quiet() {
		return waiting // the last round, at this commit, proposed it
	}
	// The signed-nonce Secret is written after the push: if it holds this nonce, the Tenant was proposed.
	proposed := &corev1.Secret{}
	if err := s.r.Get(ctx, client.ObjectKey{Namespace: ns, Name: authv1beta1.SignedNonceSecretName}, proposed); err == nil &&
		string(proposed.Data[authv1beta1.NonceSecretField]) == nonce {
		return waiting
	}
	mark := func(ctx context.Context, _ bool) error {
		return s.markProposed(ctx, pe.Provider, ns, nonce, signature, where)
	}
	if err := s.pushTenant(ctx, pe, tenant, branch, mark); err != nil {
		return outcome{err: err}
	}
	return waiting
}

// pushTenant pushes tenant.yaml to the review branch (or stages it for the
// branch in direct mode, branch "") and runs mark once it is pushed.
func (s *session) pushTenant(ctx context.Context, pe *protocol.Documents, tenant *authv1beta1.Tenant, branch string, mark func(context.Context, bool) error) error {
	doc, err := yaml.Marshal(tenant)
	if err != nil {
		return err
	}
	msg := protocol.Message{
		Subject: fmt.Sprintf("Propose Tenant of %s for %s", pe.Consumer, pe.Provider),
		Body:    "Merging this change approves the peering: the provider's agent then verifies the Tenant and issues an identity.",
		Action:  vocabulary.ActionProposeTenant, Provider: pe.Provider, Consumer: pe.Consumer,
	}
	change := gitsync.Put(protocol.Path{Provider: pe.Provider, Consumer: pe.Consumer, Kind: vocabulary.TenantFile}.String(), doc)
	if branch == "" {
		s.stage(ctx, gitpeerv1alpha1.ConsumerRole, pe.Provider, msg, func(ctx context.Context, pushed bool) error {
			if pushed {
				s.warnDirect(pe.Provider, "tenant.yaml")
			}
			return mark(ctx, pushed)
		}, change)
		return nil
	}
	if _, err := s.pushReview(ctx, branch, msg, change); err != nil {
		return err
	}
	return mark(ctx, true)
}

// markProposed records, once tenant.yaml is pushed, that the Tenant for
// nonce was proposed: the signed-nonce Secret holds the nonce and its signature.
func (s *session) markProposed(ctx context.Context, provider, ns, nonce string, signature []byte, where string) error {
	if err := s.ensureTenantNamespace(ctx, provider, ns); err != nil {
		return err
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: authv1beta1.SignedNonceSecretName}}
	if _, err := controllerutil.CreateOrUpdate(ctx, s.r.Client, secret, func() error {
		metav1.SetMetaDataLabel(&secret.ObjectMeta, authv1beta1.SignedNonceSecretLabel, authv1beta1.TrueValue)
		metav1.SetMetaDataLabel(&secret.ObjectMeta, authv1beta1.RemoteClusterIDLabel, provider)
		metav1.SetMetaDataLabel(&secret.ObjectMeta, vocabulary.ManagedByLabel, vocabulary.ManagedBy)
		secret.Data = map[string][]byte{authv1beta1.NonceSecretField: []byte(nonce), authv1beta1.SignedNonceSecretField: signature}
		return nil
	}); err != nil {
		return err
	}
	s.r.eventAbout(s.obj, corev1.EventTypeNormal, gitpeerv1alpha1.TenantProposedReason, provider, "tenant.yaml for provider %s pushed to %s", provider, where)
	return nil
}

// reviewBranch renders the review-branch template; "" in direct mode.
func (s *session) reviewBranch(pe *protocol.Documents) (string, error) {
	if s.obj.Spec.Consumer.Direct {
		return "", nil
	}
	tmpl, err := template.New("branch").Option("missingkey=error").Parse(s.obj.Spec.Consumer.GetReviewBranchTemplate())
	if err != nil {
		return "", fmt.Errorf("reviewBranchTemplate: %w", err)
	}
	var b strings.Builder
	if err := tmpl.Execute(&b, map[string]string{"ProviderID": pe.Provider, "ConsumerID": pe.Consumer}); err != nil {
		return "", fmt.Errorf("reviewBranchTemplate: %w", err)
	}
	return b.String(), nil
}

// applyIdentity acts on identity.yaml only for a provider this cluster asked
// (its own tenant.yaml merged beside it), verifies it against the cluster's
// own key, the API server of the provider's terms and the anchor the admin
// configured (CA hashes or CA) or, only by opt-in, the provider's pin; proves
// the kubeconfig with a SelfSubjectReview when it is new or the branch moved,
// and only then pins the provider (trust on first use) and writes the
// Identity and its kubeconfig Secret. A rejected identity.yaml leaves
// everything in place.
func (s *session) applyIdentity(ctx context.Context, pe *protocol.Documents, ns string) outcome {
	id := pe.Identity
	checked := check.Identity(pe, check.Facts{Key: s.key.Public(), Now: s.r.Now()})
	if checked.Err != nil {
		return s.rejectIdentity(ctx, pe, checked.Err.Error())
	}
	cert := checked.Cert
	if err := s.ensureTenantNamespace(ctx, pe.Provider, ns); err != nil {
		return outcome{err: err}
	}
	nsObj := &corev1.Namespace{}
	if err := s.r.Get(ctx, client.ObjectKey{Name: ns}, nsObj); err != nil {
		return outcome{err: err}
	}
	pin, err := s.trust(ctx, pe, nsObj.Annotations)
	if err != nil {
		return s.rejectIdentity(ctx, pe, err.Error())
	}
	secretName := authv1beta1.KubeconfigSecretName(id.Name)
	s.noteCertificate(gitpeerv1alpha1.ConsumerRole, pe.Provider, certRecord{expiry: cert.NotAfter.Unix()})
	if s.liqo.Active {
		return s.applyLiqoIdentity(ctx, pe, nsObj, pin)
	}
	ready := outcome{phase: gitpeerv1alpha1.PhaseReady, message: fmt.Sprintf("kubeconfig Secret %s/%s works (certificate %s, expires %s)%s",
		ns, secretName, cert.SerialNumber.Text(16), cert.NotAfter.UTC().Format("2006-01-02T15:04:05Z"), firstUseNote(pin))}
	if s.quiet() {
		return ready // the last round, at this commit, proved and wrote this kubeconfig
	}
	// An empty CA builds a kubeconfig without certificate-authority-data: the system roots verify the server.
	kubeconfig, err := crypto.BuildKubeconfig(crypto.KubeconfigParams{
		ProviderClusterID: pe.Provider, IdentityName: id.Name, Namespace: ptr.Deref(id.Spec.Namespace, ""), APIServer: id.Spec.AuthParams.APIServer,
		ProxyURL: ptr.Deref(id.Spec.AuthParams.ProxyURL, ""), CA: id.Spec.AuthParams.CA, Certificate: id.Spec.AuthParams.SignedCRT, Key: s.key,
	})
	if err != nil {
		return outcome{err: err}
	}
	secret := &corev1.Secret{}
	if err := s.r.Get(ctx, client.ObjectKey{Namespace: ns, Name: secretName}, secret); client.IgnoreNotFound(err) != nil {
		return outcome{err: err}
	}
	user := ""
	if !bytes.Equal(secret.Data[authv1beta1.KubeconfigSecretField], kubeconfig) || s.obj.Status.LastProcessedCommit != s.head.String() {
		if user, err = whoami.Kubeconfig(ctx, kubeconfig); err != nil {
			return outcome{phase: gitpeerv1alpha1.PhaseFailed, message: fmt.Sprintf("kubeconfig for %s does not work yet, kept the current one: %v", pe.Provider, err)}
		}
		if user != pe.Consumer {
			return outcome{phase: gitpeerv1alpha1.PhaseFailed, message: fmt.Sprintf("provider %s authenticates this kubeconfig as %q, not %q; kept the current one", pe.Provider, user, pe.Consumer)}
		}
	}
	if err := s.recordProviderPin(ctx, pe.Provider, nsObj, pin); err != nil {
		return outcome{err: err}
	}
	op, err := s.writeIdentity(ctx, pe, ns, kubeconfig)
	if err != nil {
		return outcome{err: err}
	}
	if op != controllerutil.OperationResultNone {
		s.r.eventAbout(s.obj, corev1.EventTypeNormal, gitpeerv1alpha1.PeeringReadyReason, pe.Provider, "kubeconfig for provider %s %s (serial %s); it authenticates as %s", pe.Provider, op, cert.SerialNumber.Text(16), user)
	}
	return ready
}

// writeIdentity applies the Identity of pe and its kubeconfig Secret, and
// returns what happened to the Secret.
func (s *session) writeIdentity(ctx context.Context, pe *protocol.Documents, ns string, kubeconfig []byte) (controllerutil.OperationResult, error) {
	id := pe.Identity
	secretName := authv1beta1.KubeconfigSecretName(id.Name)
	identity := &authv1beta1.Identity{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: id.Name}}
	if _, err := controllerutil.CreateOrUpdate(ctx, s.r.Client, identity, func() error {
		s.labelConsumerObject(&identity.ObjectMeta, pe.Provider)
		identity.Spec = id.Spec
		return nil
	}); err != nil {
		return controllerutil.OperationResultNone, err
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: secretName}}
	op, err := controllerutil.CreateOrUpdate(ctx, s.r.Client, secret, func() error {
		s.labelConsumerObject(&secret.ObjectMeta, pe.Provider)
		metav1.SetMetaDataLabel(&secret.ObjectMeta, authv1beta1.IdentityTypeLabel, string(id.Spec.Type))
		metav1.SetMetaDataAnnotation(&secret.ObjectMeta, authv1beta1.RemoteTenantNamespaceAnnotation, ptr.Deref(id.Spec.Namespace, ""))
		secret.Data = map[string][]byte{authv1beta1.KubeconfigSecretField: kubeconfig}
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
func (s *session) labelConsumerObject(meta *metav1.ObjectMeta, provider string) {
	metav1.SetMetaDataLabel(meta, authv1beta1.RemoteClusterIDLabel, provider)
	metav1.SetMetaDataLabel(meta, vocabulary.ManagedByLabel, vocabulary.ManagedBy)
	metav1.SetMetaDataLabel(meta, vocabulary.OwnerLabel, string(s.obj.UID))
}

// dropIdentity deletes the Identity, its kubeconfig Secret, the signed nonce
// and the provider's pin once identity.yaml left the branch.
func (s *session) dropIdentity(ctx context.Context, pe *protocol.Documents, ns string) outcome {
	if err := s.forgetProvider(ctx, pe.Provider, ns); err != nil {
		return outcome{err: err}
	}
	s.noteCertificate(gitpeerv1alpha1.ConsumerRole, pe.Provider, certRecord{})
	if err := s.markRevoked(ctx, ns); err != nil {
		return outcome{err: err}
	}
	s.r.eventAbout(s.obj, corev1.EventTypeNormal, gitpeerv1alpha1.RevokedReason, pe.Provider, "identity.yaml for provider %s left the branch: Identity, kubeconfig and pin deleted", pe.Provider)
	return outcome{phase: gitpeerv1alpha1.PhaseRevoked, message: "identity.yaml removed: Identity, kubeconfig and pin deleted"}
}

// rejectIdentity reports identity.yaml refused (phase message, Warning, log);
// nothing is written.
func (s *session) rejectIdentity(ctx context.Context, pe *protocol.Documents, reason string) outcome {
	path := protocol.Path{Provider: pe.Provider, Consumer: pe.Consumer, Kind: vocabulary.IdentityFile}.String()
	msg := fmt.Sprintf("%s rejected: %s", path, reason)
	log.FromContext(ctx).Info("identity rejected", "path", path, "reason", reason)
	s.r.eventAbout(s.obj, corev1.EventTypeWarning, gitpeerv1alpha1.RejectedReason, path, "%s", msg)
	return outcome{phase: gitpeerv1alpha1.PhaseFailed, message: msg}
}

// markRevoked records on the tenant namespace that the identity was revoked.
func (s *session) markRevoked(ctx context.Context, ns string) error {
	nsObj := &corev1.Namespace{}
	if err := s.r.Get(ctx, client.ObjectKey{Name: ns}, nsObj); err != nil {
		return client.IgnoreNotFound(err)
	}
	patch := client.MergeFrom(nsObj.DeepCopy())
	metav1.SetMetaDataAnnotation(&nsObj.ObjectMeta, vocabulary.RevokedAnnotation, s.r.Now().UTC().Format(time.RFC3339))
	return s.r.Patch(ctx, nsObj, patch)
}

// requestAgain consumes the request-again annotation an admin set to peer
// again after a revocation, and the revocation mark of the tenant namespace.
func (s *session) requestAgain(ctx context.Context, nsObj *corev1.Namespace) error {
	patch := client.MergeFrom(nsObj.DeepCopy())
	delete(nsObj.Annotations, vocabulary.RevokedAnnotation)
	if err := s.r.Patch(ctx, nsObj, patch); err != nil {
		return err
	}
	return s.consumeAnnotation(ctx, gitpeerv1alpha1.RequestAgainAnnotation)
}
