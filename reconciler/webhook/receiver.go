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
package webhook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
)

const (
	// SecretAnnotation names the Secret (same namespace) holding the webhook token.
	SecretAnnotation = "gitpeer.io/webhook-secret"
	// TypeAnnotation is the webhook sender: github, gitlab, gitea or generic.
	TypeAnnotation = "gitpeer.io/webhook-type"
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
	// Client reads PeeringRepositories (the manager's cached client is fine)
	// and patches their reconcile-request annotation.
	Client client.Client
	// SecretReader reads the webhook Secrets. Give it an uncached reader
	// (mgr.GetAPIReader()) so the agent does not cache Secrets for this.
	SecretReader client.Reader
	// Namespace, when set, is the only namespace served (the agent's --watch-namespace).
	Namespace string
	// MaxBodyBytes caps the payload; zero means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// Log receives one line per refused or accepted request.
	Log logr.Logger
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
}

// Handler returns a mux serving the receiver on PathPrefix + "{namespace}/{name}".
func (r *Receiver) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle(PathPrefix+"{namespace}/{name}", r)
	return mux
}

// ServeHTTP authenticates a webhook and, for a push to the repository's branch,
// requests a reconcile. Responses: 202 triggered, 200 ignored (other event or
// branch), 400 malformed, 401 no credential, 403 wrong credential, 404 unknown
// or not opted in, 405 not POST, 413 too large, 503 API server unavailable.
func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		reply(w, http.StatusMethodNotAllowed, "method not allowed")
		return
	}
	key := client.ObjectKey{Namespace: req.PathValue("namespace"), Name: req.PathValue("name")}
	log := r.Log.WithValues("peeringrepository", key.String(), "remote", req.RemoteAddr)
	if !r.servable(key) {
		reply(w, http.StatusNotFound, "not found")
		return
	}
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
	obj, typ, token, status := r.lookup(req, key, log)
	if status != 0 {
		reply(w, status, http.StatusText(status))
		return
	}
	if err := typ.verify(req.Header, body, token); err != nil {
		log.Info("webhook refused", "type", typ, "reason", err.Error())
		if errors.Is(err, errUnauthenticated) {
			reply(w, http.StatusUnauthorized, err.Error())
		} else {
			reply(w, http.StatusForbidden, err.Error())
		}
		return
	}
	r.trigger(w, req, obj, typ, body, log)
}

// trigger handles an authenticated request: it checks the event and the ref,
// then sets the reconcile-request annotation.
func (r *Receiver) trigger(w http.ResponseWriter, req *http.Request, obj *gitpeerv1alpha1.PeeringRepository, typ Type, body []byte, log logr.Logger) {
	if event, push := typ.isPush(req.Header); !push {
		reply(w, http.StatusOK, fmt.Sprintf("ignored: event %q is not a push", event))
		return
	}
	ref, err := pushedRef(typ, body)
	if err != nil {
		reply(w, http.StatusBadRequest, "malformed payload")
		return
	}
	// A generic request without a ref means "the branch moved".
	if want := "refs/heads/" + obj.GetBranch(); ref != want && (ref != "" || typ != Generic) {
		reply(w, http.StatusOK, fmt.Sprintf("ignored: push to %q, not %q", ref, want))
		return
	}
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	patch := client.MergeFrom(obj.DeepCopy())
	annotations := obj.GetAnnotations() // not nil: it holds SecretAnnotation
	annotations[meta.ReconcileRequestAnnotation] = now().Format(time.RFC3339Nano)
	obj.SetAnnotations(annotations)
	if err := r.Client.Patch(req.Context(), obj, patch); err != nil {
		log.Error(err, "webhook could not request a reconcile")
		reply(w, http.StatusServiceUnavailable, http.StatusText(http.StatusServiceUnavailable))
		return
	}
	log.Info("webhook requested a reconcile", "type", typ, "ref", ref)
	reply(w, http.StatusAccepted, "reconcile requested")
}

// servable reports whether key may name a PeeringRepository this receiver serves.
func (r *Receiver) servable(key client.ObjectKey) bool {
	if r.Namespace != "" && key.Namespace != r.Namespace {
		return false
	}
	return len(validation.IsDNS1123Label(key.Namespace)) == 0 && len(validation.IsDNS1123Subdomain(key.Name)) == 0
}

// lookup returns the PeeringRepository, its webhook type and token, or the
// status to answer with. Unknown repositories and repositories that did not
// opt in (or whose Secret is missing) all answer 404, so the answer says no
// more than that the path is not a webhook.
func (r *Receiver) lookup(req *http.Request, key client.ObjectKey, log logr.Logger) (*gitpeerv1alpha1.PeeringRepository, Type, []byte, int) {
	ctx := req.Context()
	obj := &gitpeerv1alpha1.PeeringRepository{}
	if err := r.Client.Get(ctx, key, obj); err != nil {
		return nil, "", nil, apiStatus(err, log)
	}
	secretName := obj.GetAnnotations()[SecretAnnotation]
	if secretName == "" {
		return nil, "", nil, http.StatusNotFound
	}
	typ, ok := parseType(obj.GetAnnotations()[TypeAnnotation])
	if !ok {
		log.Info("webhook misconfigured: unknown type", "annotation", TypeAnnotation, "value", obj.GetAnnotations()[TypeAnnotation])
		return nil, "", nil, http.StatusNotFound
	}
	secret := &corev1.Secret{}
	if err := r.SecretReader.Get(ctx, client.ObjectKey{Namespace: key.Namespace, Name: secretName}, secret); err != nil {
		if apierrors.IsNotFound(err) {
			log.Info("webhook misconfigured: Secret not found", "secret", secretName)
		}
		return nil, "", nil, apiStatus(err, log)
	}
	token := bytes.TrimSpace(secret.Data[TokenKey])
	if len(token) == 0 {
		log.Info("webhook misconfigured: Secret has no token", "secret", secretName, "key", TokenKey)
		return nil, "", nil, http.StatusNotFound
	}
	return obj, typ, token, 0
}

// apiStatus maps an API read error to a response status.
func apiStatus(err error, log logr.Logger) int {
	if apierrors.IsNotFound(err) {
		return http.StatusNotFound
	}
	log.Error(err, "webhook could not read from the API server")
	return http.StatusServiceUnavailable
}

// pushedRef returns the "ref" of a push payload; an empty generic body has none.
func pushedRef(typ Type, body []byte) (string, error) {
	if typ == Generic && len(bytes.TrimSpace(body)) == 0 {
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

func reply(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, msg+"\n")
}
