package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
)

// DefaultResync is how often a HookReconciler re-reads a webhook Secret when
// HookReconciler.Resync is zero: a rotated token takes effect within it.
const DefaultResync = time.Minute

// hook is what the receiver needs to authenticate and act on a request for one
// PeeringRepository.
type hook struct {
	forge  Forge
	token  []byte
	branch string
}

// Hooks is the receiver's in-memory view of the PeeringRepositories that opted
// in to webhooks: type, token and branch of each. The receiver authenticates
// against it alone, so a request without the right credential costs no
// API-server read. A HookReconciler keeps it current; the zero value is empty
// and ready to use.
type Hooks struct {
	mu    sync.RWMutex
	hooks map[client.ObjectKey]hook
}

func (h *Hooks) get(key client.ObjectKey) (hook, bool) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	e, ok := h.hooks[key]
	return e, ok
}

func (h *Hooks) set(key client.ObjectKey, e hook) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.hooks == nil {
		h.hooks = map[client.ObjectKey]hook{}
	}
	h.hooks[key] = e
}

func (h *Hooks) remove(key client.ObjectKey) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.hooks, key)
}

// HookReconciler fills Hooks from the PeeringRepositories and their webhook
// Secrets. It runs on every replica (no leader election), like the receiver.
type HookReconciler struct {
	// Client reads PeeringRepositories; give it the manager's cached client.
	Client client.Reader
	// SecretReader reads the webhook Secrets. Give it an uncached reader
	// (mgr.GetAPIReader()) so the agent does not cache Secrets for this.
	SecretReader client.Reader
	// Hooks is the index the receiver reads.
	Hooks *Hooks
	// Resync is how often a webhook Secret is read again; zero means DefaultResync.
	Resync time.Duration
}

// SetupWithManager adds the controller to mgr. opts are passed on, with
// NeedLeaderElection set to false.
func (r *HookReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	opts.NeedLeaderElection = ptr.To(false)
	return ctrl.NewControllerManagedBy(mgr).
		Named("webhook-hooks").
		For(&gitpeerv1alpha1.PeeringRepository{}, builder.WithPredicates(
			predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		WithOptions(opts).
		Complete(r)
}

// Reconcile updates the hook of one PeeringRepository: set when it opted in
// with a readable token, removed otherwise. A misconfiguration is logged and
// looked at again after Resync (the Secret may be created later).
func (r *HookReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := logr.FromContextOrDiscard(ctx)
	obj := &gitpeerv1alpha1.PeeringRepository{}
	if err := r.Client.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			r.Hooks.remove(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	secretName := obj.GetAnnotations()[gitpeerv1alpha1.WebhookSecretAnnotation]
	if secretName == "" {
		r.Hooks.remove(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	e, err := r.load(ctx, obj, secretName)
	if apierrors.IsNotFound(err) || errors.Is(err, errMisconfigured) {
		r.Hooks.remove(req.NamespacedName)
		log.Info("webhook requests will be refused", "secret", secretName, "reason", err.Error())
		return ctrl.Result{RequeueAfter: r.resync()}, nil
	}
	if err != nil {
		return ctrl.Result{}, err // keep the last good hook while the API server is unavailable
	}
	r.Hooks.set(req.NamespacedName, e)
	return ctrl.Result{RequeueAfter: r.resync()}, nil
}

// errMisconfigured wraps the reasons a PeeringRepository that opted in has no
// hook, besides its Secret not existing.
var errMisconfigured = errors.New("webhook misconfigured")

// load reads the hook of obj, whose webhook Secret is secretName.
func (r *HookReconciler) load(ctx context.Context, obj *gitpeerv1alpha1.PeeringRepository, secretName string) (hook, error) {
	forge, ok := parseForge(obj.GetAnnotations()[gitpeerv1alpha1.WebhookTypeAnnotation])
	if !ok {
		return hook{}, fmt.Errorf("%w: unknown %s %q", errMisconfigured, gitpeerv1alpha1.WebhookTypeAnnotation, obj.GetAnnotations()[gitpeerv1alpha1.WebhookTypeAnnotation])
	}
	secret := &corev1.Secret{}
	if err := r.SecretReader.Get(ctx, client.ObjectKey{Namespace: obj.Namespace, Name: secretName}, secret); err != nil {
		return hook{}, err
	}
	token := bytes.TrimSpace(secret.Data[TokenKey])
	if len(token) == 0 {
		return hook{}, fmt.Errorf("%w: Secret %s has no %q key", errMisconfigured, secretName, TokenKey)
	}
	return hook{forge: forge, token: token, branch: obj.GetBranch()}, nil
}

func (r *HookReconciler) resync() time.Duration {
	if r.Resync > 0 {
		return r.Resync
	}
	return DefaultResync
}
