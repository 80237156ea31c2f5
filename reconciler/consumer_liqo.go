package reconciler

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/reconciler/consumer"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/reconciler/whoami"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// The consumer in Liqo mode (docs/DESIGN.md "Consumer in Liqo mode"): Liqo's
// nonce signer signs the provider's nonce and Liqo's identity controller
// writes the kubeconfig, both with Liqo's key (the session's key in Liqo
// mode); gitpeer moves the files, applies the Identity and proves Liqo's
// kubeconfig.

// liqoRecheck is how soon a round comes back while it waits for one of
// Liqo's controllers (the agent does not watch their objects).
const liqoRecheck = 2 * time.Second

// waitForLiqo makes the round come back in liqoRecheck and returns o.
func (s *session) waitForLiqo(o outcome) outcome {
	s.noteRenewal(s.r.Now().Add(liqoRecheck))
	return o
}

// proposeLiqoTenant has Liqo's nonce signer sign the provider's nonce
// through the liqo-signed-nonce Secret, as `liqoctl generate tenant` does,
// then pushes tenant.yaml with that signature, once per nonce.
func (s *session) proposeLiqoTenant(ctx context.Context, pe *protocol.Documents, ns, branch, where string) outcome {
	nonce := pe.Nonce.Spec.Nonce
	if pe.Tenant != nil && crypto.VerifyNonceSignature(s.key.Public(), nonce, pe.Tenant.Spec.Signature) == nil {
		return outcome{phase: gitpeerv1alpha1.PhaseAwaitingApproval, message: "tenant.yaml merged; waiting for identity.yaml"}
	}
	secret := &corev1.Secret{}
	if err := s.r.Get(ctx, client.ObjectKey{Namespace: ns, Name: authv1beta1.SignedNonceSecretName}, secret); client.IgnoreNotFound(err) != nil {
		return outcome{err: err}
	} else if err != nil {
		secret = nil
	}
	signing := outcome{phase: gitpeerv1alpha1.PhaseRequested, message: "waiting for Liqo's nonce signer to sign the provider's nonce (Secret " + authv1beta1.SignedNonceSecretName + ")"}
	waiting := outcome{phase: gitpeerv1alpha1.PhaseAwaitingApproval, message: "tenant.yaml proposed on " + where + "; waiting for approval"}
	step, signature := consumer.PlanSignedNonce(secret, nonce, s.key.Public())
	switch step {
	case consumer.WriteNonce:
		if err := s.writeNonce(ctx, pe.Provider, ns, nonce); err != nil {
			return outcome{err: err}
		}
		return s.waitForLiqo(signing)
	case consumer.WaitForSignature:
		return s.waitForLiqo(signing)
	case consumer.AlreadyProposed:
		return waiting
	}
	// As liqoctl builds it: Liqo's PEM public key, CSR CN = cluster ID, O = liqo.io, Liqo's signature.
	tenant, err := protocol.NewTenant(pe.Consumer, s.key, nonce)
	if err != nil {
		return outcome{err: err}
	}
	tenant.Spec.Signature = signature
	mark := func(ctx context.Context, _ bool) error { return s.markLiqoProposed(ctx, pe.Provider, ns, nonce, where) }
	if err := s.pushTenant(ctx, pe, tenant, branch, mark); err != nil {
		return outcome{err: err}
	}
	return waiting
}

// writeNonce writes the liqo-signed-nonce Secret {nonce} for provider, as
// `liqoctl generate tenant` does, dropping the signature and the proposed
// mark of an earlier nonce.
func (s *session) writeNonce(ctx context.Context, provider, ns, nonce string) error {
	if err := s.ensureTenantNamespace(ctx, provider, ns); err != nil {
		return err
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: authv1beta1.SignedNonceSecretName}}
	_, err := controllerutil.CreateOrUpdate(ctx, s.r.Client, secret, func() error {
		metav1.SetMetaDataLabel(&secret.ObjectMeta, authv1beta1.SignedNonceSecretLabel, authv1beta1.TrueValue)
		metav1.SetMetaDataLabel(&secret.ObjectMeta, authv1beta1.RemoteClusterIDLabel, provider)
		metav1.SetMetaDataLabel(&secret.ObjectMeta, vocabulary.ManagedByLabel, vocabulary.ManagedBy)
		delete(secret.Annotations, vocabulary.ProposedAnnotation)
		secret.Data = map[string][]byte{authv1beta1.NonceSecretField: []byte(nonce)}
		return nil
	})
	return err
}

// markLiqoProposed records, once tenant.yaml is pushed, that the Tenant for
// nonce was proposed: the annotation vocabulary.ProposedAnnotation on the
// liqo-signed-nonce Secret that holds nonce.
func (s *session) markLiqoProposed(ctx context.Context, provider, ns, nonce, where string) error {
	secret := &corev1.Secret{}
	if err := s.r.Get(ctx, client.ObjectKey{Namespace: ns, Name: authv1beta1.SignedNonceSecretName}, secret); err != nil {
		return err
	}
	if string(secret.Data[authv1beta1.NonceSecretField]) != nonce {
		return fmt.Errorf("secret %s/%s no longer holds the nonce tenant.yaml was signed for", ns, secret.Name)
	}
	// An update, not a patch: the agent's role has no patch on Secrets.
	metav1.SetMetaDataAnnotation(&secret.ObjectMeta, vocabulary.ProposedAnnotation, where)
	if err := s.r.Update(ctx, secret); err != nil {
		return err
	}
	s.r.eventAbout(s.obj, corev1.EventTypeNormal, gitpeerv1alpha1.TenantProposedReason, provider, "tenant.yaml for provider %s pushed to %s", provider, where)
	return nil
}

// applyLiqoIdentity ends applyIdentity in Liqo mode, once identity.yaml
// passed the consumer's checks: it holds the Identity to identity.yaml's
// parameters with the newer of its certificate and the one Liqo's renewer put
// there (consumer.PlanIdentity), reporting parameters that drifted, waits for
// Liqo's identity controller to write the kubeconfig Secret from them, proves
// that kubeconfig with a SelfSubjectReview (once per kubeconfig) and then pins
// the provider. It never writes the kubeconfig Secret.
func (s *session) applyLiqoIdentity(ctx context.Context, pe *protocol.Documents, nsObj *corev1.Namespace, pin string) outcome {
	identity, plan, err := s.liqoIdentity(ctx, pe, nsObj.Name)
	if err != nil {
		return outcome{err: err}
	}
	o := s.liqoKubeconfigWorks(ctx, pe, nsObj, pin, identity, plan.Change)
	if len(plan.Drifted) > 0 && o.err == nil {
		o.reason = vocabulary.ReasonAuthParamsDrifted
		o.message = joinNote(o.message, "restored "+strings.Join(plan.Drifted, ", ")+" from identity.yaml")
	}
	return o
}

// liqoKubeconfigWorks waits for the kubeconfig Liqo's identity controller
// writes for identity, proves it and pins the provider.
func (s *session) liqoKubeconfigWorks(ctx context.Context, pe *protocol.Documents, nsObj *corev1.Namespace, pin string, identity *authv1beta1.Identity, change consumer.IdentityChange) outcome {
	// Before Liqo sets the reference, the Secret of its default name may be
	// one a finalizer holds (consumer.LiqoSecretTerminating).
	secret, name := &corev1.Secret{}, authv1beta1.KubeconfigSecretName(identity.Name)
	if ref := identity.Status.KubeconfigSecretRef; ref != nil {
		name = ref.Name
	}
	if err := s.r.Get(ctx, client.ObjectKey{Namespace: nsObj.Name, Name: name}, secret); client.IgnoreNotFound(err) != nil {
		return outcome{err: err}
	} else if err != nil {
		secret = nil
	}
	kubeconfig, err := consumer.LiqoKubeconfig(identity, secret)
	if err != nil {
		return s.waitForLiqo(outcome{phase: gitpeerv1alpha1.PhaseIssued, message: err.Error()})
	}
	if failed, ok := s.proveLiqoKubeconfig(ctx, pe, kubeconfig); !ok {
		return failed
	}
	if err := s.recordProviderPin(ctx, pe.Provider, nsObj, pin); err != nil {
		return outcome{err: err}
	}
	cert, err := crypto.ParseCertificatePEM(identity.Spec.AuthParams.SignedCRT)
	if err != nil {
		return outcome{err: err}
	}
	if change == consumer.CreateIdentity || change == consumer.UpdateIdentity {
		s.r.eventAbout(s.obj, corev1.EventTypeNormal, gitpeerv1alpha1.PeeringReadyReason, pe.Provider, "Identity for provider %s applied (serial %s); Liqo's kubeconfig works", pe.Provider, cert.SerialNumber.Text(16))
	}
	kept := ""
	if change == consumer.KeepRenewed {
		kept = "; identity.yaml is older than the certificate Liqo renewed, kept"
	}
	return outcome{phase: gitpeerv1alpha1.PhaseReady, message: fmt.Sprintf("Liqo's kubeconfig Secret %s/%s works (certificate %s, expires %s)%s%s",
		nsObj.Name, secret.Name, cert.SerialNumber.Text(16), cert.NotAfter.UTC().Format("2006-01-02T15:04:05Z"), kept, firstUseNote(pin))}
}

// liqoIdentity holds the Identity to identity.yaml as consumer.PlanIdentity
// decides, with a Warning when its pinned parameters drifted, and returns the
// Identity in the cluster and the plan.
func (s *session) liqoIdentity(ctx context.Context, pe *protocol.Documents, ns string) (*authv1beta1.Identity, consumer.IdentityPlan, error) {
	identity := &authv1beta1.Identity{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: pe.Identity.Name}}
	var current *authv1beta1.IdentitySpec
	if err := s.r.Get(ctx, client.ObjectKeyFromObject(identity), identity); client.IgnoreNotFound(err) != nil {
		return nil, consumer.IdentityPlan{}, err
	} else if err == nil {
		current = identity.Spec.DeepCopy()
	}
	plan, err := consumer.PlanIdentity(current, identity.Annotations[vocabulary.IdentityParamsAnnotation], &pe.Identity.Spec)
	if err != nil || !plan.Write {
		return identity, plan, err
	}
	if len(plan.Drifted) > 0 {
		s.r.eventAbout(s.obj, corev1.EventTypeWarning, vocabulary.ReasonAuthParamsDrifted, pe.Provider,
			"Identity %s/%s: %s changed outside identity.yaml (Liqo's renewal copies the provider's authParams, or another writer): restored from identity.yaml; a change of the provider's API server, CA or proxy takes effect once a reviewed identity.yaml carries it",
			ns, identity.Name, strings.Join(plan.Drifted, ", "))
	}
	_, err = controllerutil.CreateOrUpdate(ctx, s.r.Client, identity, func() error {
		s.labelConsumerObject(&identity.ObjectMeta, pe.Provider)
		metav1.SetMetaDataAnnotation(&identity.ObjectMeta, vocabulary.IdentityParamsAnnotation, plan.Digest)
		identity.Spec = plan.Spec
		return nil
	})
	return identity, plan, err
}

// proveLiqoKubeconfig proves with a SelfSubjectReview that kubeconfig
// authenticates to the provider as this cluster, unless this kubeconfig was
// proven before; when it does not, it returns the failed outcome and false.
func (s *session) proveLiqoKubeconfig(ctx context.Context, pe *protocol.Documents, kubeconfig []byte) (outcome, bool) {
	sum := sha256.Sum256(kubeconfig)
	digest := hex.EncodeToString(sum[:])
	key := provenKey{repo: client.ObjectKeyFromObject(s.obj), provider: pe.Provider}
	if s.r.proven.is(key, digest) {
		return outcome{}, true
	}
	user, err := whoami.Kubeconfig(ctx, kubeconfig)
	if err != nil {
		return outcome{phase: gitpeerv1alpha1.PhaseFailed, message: fmt.Sprintf("Liqo's kubeconfig for %s does not work yet: %v", pe.Provider, err)}, false
	}
	if user != pe.Consumer {
		return outcome{phase: gitpeerv1alpha1.PhaseFailed, message: fmt.Sprintf("provider %s authenticates Liqo's kubeconfig as %q, not %q", pe.Provider, user, pe.Consumer)}, false
	}
	s.r.proven.set(key, digest)
	return outcome{}, true
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

func (p *provenMemory) is(k provenKey, digest string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.m[k] == digest
}

func (p *provenMemory) set(k provenKey, digest string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[provenKey]string{}
	}
	p.m[k] = digest
}
