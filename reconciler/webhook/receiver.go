// Package webhook receives push notifications from Git hosts and turns them into
// an immediate reconcile of the matching PeeringRepository, so a handshake step
// does not wait for the poll interval. Polling stays the fallback: a lost or
// refused webhook only delays the agent until its next poll.
//
// A PeeringRepository opts in with two annotations:
//
//	gitpeer.io/webhook-secret: <name of a Secret in its namespace, key "token">
//	gitpeer.io/webhook-type:   github | gitlab | gitea | generic   (default generic)
//
// and the Git host is pointed at POST /hook/<namespace>/<name>.
//
// A request is authenticated against Hooks, an in-memory index a HookReconciler
// fills from the PeeringRepositories and their Secrets, before anything else
// happens: an unauthenticated request costs no API-server request, and every
// refusal (unknown repository, not opted in, missing or wrong credential) gets
// the same answer. Requests are rate-limited per source.
package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/go-logr/logr"
	"golang.org/x/time/rate"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/lru"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
)

const (
	// TokenKey is the Secret key holding the token (GitLab, generic) or HMAC key
	// (GitHub, Gitea/Forgejo).
	TokenKey = "token"
	// PathPrefix is the path the receiver serves: PathPrefix + "<namespace>/<name>".
	PathPrefix = "/hook/"
	// DefaultMaxBodyBytes caps a payload when Receiver.MaxBodyBytes is zero.
	DefaultMaxBodyBytes = 1 << 20
)

// Receiver is the http.Handler of the webhook endpoint.
type Receiver struct {
	// Client patches the reconcile-request annotation of an authenticated
	// request's PeeringRepository: the receiver's only API-server request.
	Client client.Client
	// Hooks authenticates requests; a HookReconciler keeps it current.
	Hooks *Hooks
	// Namespace, when set, is the only namespace served (the agent's --watch-namespace).
	Namespace string
	// MaxBodyBytes caps the payload; zero means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// Rate and Burst limit the requests of each source; zero means DefaultRate
	// and DefaultBurst, rate.Inf no limit.
	Rate  rate.Limit
	Burst int
	// TrustedProxies are the addresses (for instance the Ingress controller's)
	// whose X-Forwarded-For header names the source of a request. Without
	// them, the source is the TCP peer.
	TrustedProxies []netip.Prefix
	// Log receives one line per refused or accepted request.
	Log logr.Logger
	// Now returns the current time, for the reconcile-request annotation and
	// the rate limits; nil means time.Now.
	Now func() time.Time
}

// Handler returns a mux serving the receiver on PathPrefix + "{namespace}/{name}",
// rate-limited per source. Each call has its own rate limits.
func (r *Receiver) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle(PathPrefix+"{namespace}/{name}", r)
	l := &sourceLimiter{limit: r.Rate, burst: r.Burst, trusted: r.TrustedProxies, now: r.now, sources: lru.New(maxSources)}
	if l.limit == 0 {
		l.limit = DefaultRate
	}
	if l.burst == 0 {
		l.burst = DefaultBurst
	}
	return l.wrap(mux)
}

// ServeHTTP authenticates a webhook and, for a push to the repository's branch,
// requests a reconcile. Responses: 202 triggered, 200 ignored (other event or
// branch), 400 malformed, 401 refused (unknown repository, not opted in,
// missing or wrong credential: one answer for all), 405 not POST, 413 too
// large, 429 too many requests from this source, 503 API server unavailable.
func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		reply(w, http.StatusMethodNotAllowed, "method not allowed")
		return
	}
	key := client.ObjectKey{Namespace: req.PathValue("namespace"), Name: req.PathValue("name")}
	log := r.Log.WithValues("peeringrepository", key.String(), "remote", req.RemoteAddr)
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, r.maxBody()))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			reply(w, http.StatusRequestEntityTooLarge, "payload too large")
			return
		}
		reply(w, http.StatusBadRequest, "unreadable body")
		return
	}
	h, err := r.authenticate(key, req.Header, body)
	if err != nil {
		log.Info("webhook refused", "reason", err.Error())
		refuse(w)
		return
	}
	r.trigger(w, req, key, h, body, log)
}

// authenticate returns the hook of key if the request carries its credential.
// Unknown keys cost the same work as known ones: the credential is checked
// against a decoy token.
func (r *Receiver) authenticate(key client.ObjectKey, header http.Header, body []byte) (hook, error) {
	h, ok := r.Hooks.get(key)
	if !ok || !r.servable(key) {
		for _, t := range []Forge{GitHub, Gitea, GitLab, Generic} {
			_ = t.authenticate(header, body, decoyToken)
		}
		return hook{}, errUnknown
	}
	return h, h.forge.authenticate(header, body, h.token)
}

// trigger handles an authenticated request: it checks the event and the ref,
// then sets the reconcile-request annotation.
func (r *Receiver) trigger(w http.ResponseWriter, req *http.Request, key client.ObjectKey, h hook, body []byte, log logr.Logger) {
	forge := h.forge
	if event, push := forge.isPush(req.Header); !push {
		reply(w, http.StatusOK, fmt.Sprintf("ignored: event %q is not a push", event))
		return
	}
	ref, err := pushedRef(forge, body)
	if err != nil {
		reply(w, http.StatusBadRequest, "malformed payload")
		return
	}
	// A generic request without a ref means "the branch moved".
	if want := "refs/heads/" + h.branch; ref != want && (ref != "" || forge != Generic) {
		reply(w, http.StatusOK, fmt.Sprintf("ignored: push to %q, not %q", ref, want))
		return
	}
	if err := r.requestReconcile(req.Context(), key); err != nil {
		if apierrors.IsNotFound(err) { // deleted since Hooks last saw it
			refuse(w)
			return
		}
		log.Error(err, "webhook could not request a reconcile")
		reply(w, http.StatusServiceUnavailable, http.StatusText(http.StatusServiceUnavailable))
		return
	}
	log.Info("webhook requested a reconcile", "forge", forge, "ref", ref)
	reply(w, http.StatusAccepted, "reconcile requested")
}

// servable reports whether key may name a PeeringRepository this receiver serves.
func (r *Receiver) servable(key client.ObjectKey) bool {
	if r.Namespace != "" && key.Namespace != r.Namespace {
		return false
	}
	return len(validation.IsDNS1123Label(key.Namespace)) == 0 && len(validation.IsDNS1123Subdomain(key.Name)) == 0
}

// requestReconcile sets the reconcile-request annotation of key's
// PeeringRepository with a merge patch: no read needed.
func (r *Receiver) requestReconcile(ctx context.Context, key client.ObjectKey) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		meta.ReconcileRequestAnnotation: r.now().Format(time.RFC3339Nano),
	}}})
	if err != nil {
		return err
	}
	obj := &gitpeerv1alpha1.PeeringRepository{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	return r.Client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch))
}

// pushedRef returns the "ref" of a push payload; an empty generic body has none.
func pushedRef(forge Forge, body []byte) (string, error) {
	if forge == Generic && len(bytes.TrimSpace(body)) == 0 {
		return "", nil
	}
	var payload struct {
		Ref string `json:"ref"`
	}
	if err := json.Unmarshal(body, &payload); err != nil {
		return "", err
	}
	return payload.Ref, nil
}

func (r *Receiver) maxBody() int64 {
	if r.MaxBodyBytes > 0 {
		return r.MaxBodyBytes
	}
	return DefaultMaxBodyBytes
}

func (r *Receiver) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// refuse is the one answer to every request that is not authenticated.
func refuse(w http.ResponseWriter) {
	reply(w, http.StatusUnauthorized, http.StatusText(http.StatusUnauthorized))
}

func reply(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, msg+"\n")
}
