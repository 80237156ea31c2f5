package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"

	"code.gitea.io/sdk/gitea"
	"github.com/google/go-github/v88/github"
)

// Forge is the Git host (forge) that sends a webhook: it decides how a request
// is authenticated and which header names its event. (The Liqo roles are
// "provider" and "consumer"; a Git host is never called a provider.)
type Forge string

// The supported forges. Gitea covers Forgejo, which signs the same way.
const (
	// GitHub signs the body with HMAC-SHA256 in X-Hub-Signature-256 ("sha256=<hex>").
	GitHub Forge = "github"
	// GitLab sends the token itself in X-Gitlab-Token.
	GitLab Forge = "gitlab"
	// Gitea (and Forgejo) sign the body with HMAC-SHA256 in X-Gitea-Signature
	// (X-Forgejo-Signature), as bare hex.
	Gitea Forge = "gitea"
	// Generic expects "Authorization: Bearer <token>"; a JSON body with a ref is
	// optional.
	Generic Forge = "generic"
)

// The reasons a request is refused, for the log only: the answer is the same.
var (
	errUnauthenticated = errors.New("missing signature or token")
	errForbidden       = errors.New("invalid signature or token")
	errUnknown         = errors.New("not a webhook: unknown repository, not opted in, or misconfigured")
)

// decoyToken stands in for the token of an unknown repository, so that
// refusing it costs the same work as refusing a wrong credential.
var decoyToken = []byte("gitpeer-webhook-decoy-token")

// parseForge returns the Forge named by an annotation value; empty means Generic.
func parseForge(s string) (Forge, bool) {
	switch t := Forge(strings.ToLower(strings.TrimSpace(s))); t {
	case "":
		return Generic, true
	case GitHub, GitLab, Gitea, Generic:
		return t, true
	default:
		return "", false
	}
}

// authenticate checks a request from this forge against token.
func (t Forge) authenticate(h http.Header, body, token []byte) error {
	switch t {
	case GitHub:
		// Only the SHA-256 header: go-github would also take a "sha1=" value.
		sig := h.Get(github.SHA256SignatureHeader)
		if !strings.HasPrefix(sig, "sha256=") {
			return errUnauthenticated
		}
		if github.ValidateSignature(sig, body, token) != nil {
			return errForbidden
		}
		return nil
	case GitLab:
		return checkToken(h.Get("X-Gitlab-Token"), token)
	case Gitea:
		sig := h.Get("X-Gitea-Signature")
		if sig == "" {
			sig = h.Get("X-Forgejo-Signature")
		}
		if sig == "" {
			return errUnauthenticated
		}
		if ok, err := gitea.VerifyWebhookSignature(string(token), sig, body); err != nil || !ok {
			return errForbidden
		}
		return nil
	default:
		bearer, ok := strings.CutPrefix(h.Get("Authorization"), "Bearer ")
		if !ok {
			return errUnauthenticated
		}
		return checkToken(bearer, token)
	}
}

// isPush reports the event a request announces and whether it is a push.
// Generic requests are always pushes.
func (t Forge) isPush(h http.Header) (event string, push bool) {
	switch t {
	case GitHub:
		event = h.Get("X-GitHub-Event")
		return event, event == "push"
	case GitLab:
		event = h.Get("X-Gitlab-Event")
		return event, event == "Push Hook"
	case Gitea:
		event = h.Get("X-Gitea-Event")
		if event == "" {
			event = h.Get("X-Forgejo-Event")
		}
		return event, event == "push"
	default:
		return "push", true
	}
}

// checkToken compares a presented token with the expected one in constant time.
// GitLab's client has no helper for its X-Gitlab-Token: it is a plain shared
// secret, so the standard library's constant-time compare is all it takes.
func checkToken(got string, token []byte) error {
	if got == "" {
		return errUnauthenticated
	}
	if subtle.ConstantTimeCompare([]byte(got), token) != 1 {
		return errForbidden
	}
	return nil
}

// Signature returns the hex HMAC-SHA256 of body under token: the value of
// X-Gitea-Signature, and of X-Hub-Signature-256 after "sha256=". Senders such
// as CI jobs and tests use it to sign their payloads.
func Signature(token, body []byte) string {
	h := hmac.New(sha256.New, token)
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}
