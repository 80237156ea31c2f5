// Package consumer is the consumer's planner: from what a round observed of
// one peering with a provider (its documents on the branch and what the
// PeeringRepository holds for it in the cluster) it decides what to do, and
// it holds the consumer's trust rules. It reads nothing and writes nothing.
package consumer

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// Step is what the consumer does for one provider in a round.
type Step int

// Steps.
const (
	// ApplyIdentity: verify identity.yaml and turn it into a working kubeconfig.
	ApplyIdentity Step = iota
	// KeepIdentity: identity.yaml is invalid; the Identity in use is kept.
	KeepIdentity
	// DropIdentity: identity.yaml left the branch; the Identity, kubeconfig and pin go.
	DropIdentity
	// StayRevoked: the provider revoked the peering; no request until an admin asks again.
	StayRevoked
	// RequestAgain: an admin asked to peer again after a revocation: clear the mark, then request.
	RequestAgain
	// Request: commit request.yaml.
	Request
	// WaitForNonce: requested; the provider has not answered yet.
	WaitForNonce
	// ProposeTenant: sign the provider's nonce and propose tenant.yaml.
	ProposeTenant
)

var stepNames = [...]string{"ApplyIdentity", "KeepIdentity", "DropIdentity", "StayRevoked", "RequestAgain", "Request", "WaitForNonce", "ProposeTenant"}

func (s Step) String() string { return stepNames[s] }

// Observed is what a round observed in the cluster for one provider.
type Observed struct {
	// Identity: the Identity of the provider exists.
	Identity bool
	// Revoked: the tenant namespace records a revocation by the provider.
	Revoked bool
	// RequestAgain: the PeeringRepository's request-again annotation names the provider.
	RequestAgain bool
}

// Decide returns the step for the peering directory pe given what was observed.
func Decide(pe *protocol.Documents, o Observed) Step {
	switch {
	case pe.Identity != nil:
		return ApplyIdentity
	case pe.Invalid[vocabulary.IdentityFile] != nil:
		return KeepIdentity
	case o.Identity:
		return DropIdentity
	case pe.Request == nil && o.Revoked && !o.RequestAgain:
		return StayRevoked
	case pe.Request == nil && o.Revoked:
		return RequestAgain
	case pe.Request == nil:
		return Request
	case pe.Nonce == nil:
		return WaitForNonce
	}
	return ProposeTenant
}

// ProviderPin is what the consumer pins of a provider on first use: the
// SHA-256 of the length-prefixed API server URL and CA bundle. An empty CA
// (the API server has a publicly trusted certificate) pins the URL and the
// system roots that then verify it.
func ProviderPin(apiServer string, ca []byte) string {
	h := sha256.New()
	for _, part := range [][]byte{[]byte(apiServer), ca} {
		_ = binary.Write(h, binary.BigEndian, uint64(len(part)))
		h.Write(part)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// ErrPinMismatch marks an Identity whose API server or CA is not the pinned one.
var ErrPinMismatch = errors.New("pin mismatch")

// CheckPin checks apiServer and ca against the pin in the annotations of the
// consumer-side tenant namespace of provider and returns the pin to record.
// A legacy CA-only pin (vocabulary.PinnedCAAnnotation) must match the CA; the returned
// pin then replaces it.
func CheckPin(annotations map[string]string, provider, apiServer string, ca []byte) (string, error) {
	pin := ProviderPin(apiServer, ca)
	howTo := fmt.Sprintf("to trust it, remove the peering (identity.yaml, or %s from spec.consumer.providers) or the annotation %s of namespace %s",
		provider, vocabulary.PinnedProviderAnnotation, authv1beta1.TenantNamespaceName(authv1beta1.ClusterID(provider)))
	if pinned := annotations[vocabulary.PinnedProviderAnnotation]; pinned != "" {
		if pinned != pin {
			return "", fmt.Errorf("%w: API server %q with CA %s is not the API server and CA pinned for provider %s (%s); %s",
				ErrPinMismatch, apiServer, caDigest(ca), provider, short(pinned), howTo)
		}
		return pin, nil
	}
	if legacy := annotations[vocabulary.PinnedCAAnnotation]; legacy != "" {
		sum := sha256.Sum256(ca)
		if got := hex.EncodeToString(sum[:]); got != legacy {
			return "", fmt.Errorf("%w: CA %s is not the CA pinned for provider %s (%s); %s",
				ErrPinMismatch, short(got), provider, short(legacy), howTo)
		}
	}
	return pin, nil
}

// caDigest names a CA bundle in messages.
func caDigest(ca []byte) string {
	if len(ca) == 0 {
		return "(none: system roots)"
	}
	sum := sha256.Sum256(ca)
	return short(hex.EncodeToString(sum[:]))
}

func short(digest string) string { return digest[:min(16, len(digest))] }

// TrustedCAKey is the key of the CA bundle in a spec.consumer.trustedCAs Secret.
const TrustedCAKey = "ca.crt"

// TrustedCA is the CA bundle an admin configured for a provider
// (spec.consumer.trustedCAs), as read from its Secret.
type TrustedCA struct {
	// Secret names the Secret, for messages.
	Secret string
	// PEM is the Secret's TrustedCAKey.
	PEM []byte
}

// Anchor is what the admin configured a consumer to trust one provider's
// Identity by: the hashes of its CA (spec.consumer.trustedCAs caCertHashes),
// its CA bundle (a trustedCAs Secret), or, with neither, nothing unless
// spec.consumer.trustOnFirstUse is set.
type Anchor struct {
	// Hashes are the provider's CA hashes (crypto.CACertHash), or nil.
	Hashes []string
	// CA is the CA bundle of the provider's trustedCAs Secret, or nil.
	CA *TrustedCA
	// FirstUse: spec.consumer.trustOnFirstUse is set.
	FirstUse bool
}

// ErrNotAnchored marks an Identity of a provider the consumer has no anchor
// for, without trust on first use: whoever could push identity.yaml may have
// written it.
var ErrNotAnchored = errors.New("provider not anchored")

// CAHashHowTo tells an admin how to get the hash that anchors a provider.
const CAHashHowTo = "ask the provider's admin for the hash of its API server's CA, taken on the provider " +
	"(openssl x509 -in ca.crt -noout -pubkey | openssl pkey -pubin -outform DER | sha256sum, " +
	"or gitpeer ca-hash there; kubeadm's --discovery-token-ca-cert-hash is the same hash)"

// Trust checks the API server and CA of provider's Identity against the
// anchor: the CA hashes, or else the CA bundle; a provider with neither is
// refused (ErrNotAnchored) unless anchor.FirstUse, when the pin in the
// annotations of the consumer-side tenant namespace decides (CheckPin). It
// returns the first-use pin to record ("" when an anchor decides).
func Trust(annotations map[string]string, provider, apiServer string, ca []byte, anchor Anchor) (string, error) {
	switch {
	case len(anchor.Hashes) > 0:
		return "", CheckCACertHashes(provider, anchor.Hashes, ca)
	case anchor.CA != nil:
		return "", CheckTrustedCA(provider, *anchor.CA, ca)
	case anchor.FirstUse:
		return CheckPin(annotations, provider, apiServer, ca)
	}
	return "", fmt.Errorf("%w: spec.consumer.trustedCAs has no entry for provider %s and spec.consumer.trustOnFirstUse is off, "+
		"so nothing tells its Identity from one anyone who can push a review branch wrote (it offers %s); %s, "+
		"and add {provider: %s, caCertHashes: [\"sha256:<hex>\"]} to spec.consumer.trustedCAs",
		ErrNotAnchored, provider, offeredHashes(ca), CAHashHowTo, provider)
}

// CheckCACertHashes returns an error unless ca, an Identity's CA bundle, is
// made of certificates whose crypto.CACertHash is one of hashes, those the
// admin configured for provider. Every certificate must match, not just one
// as kubeadm asks: the bundle becomes the kubeconfig's CA, and any CA in it
// could vouch for an API server.
func CheckCACertHashes(provider string, hashes []string, ca []byte) error {
	if len(ca) == 0 {
		return fmt.Errorf("the Identity offers no CA (system roots), but spec.consumer.trustedCAs pins the CA hashes of provider %s", provider)
	}
	offered, err := crypto.CACertHashes(ca)
	if err != nil {
		return fmt.Errorf("identity CA: %w", err)
	}
	for i, got := range offered {
		if !slices.ContainsFunc(hashes, func(want string) bool { return crypto.SameCACertHash(got, want) }) {
			return fmt.Errorf("CA certificate %d of the Identity has hash %s, not one of the caCertHashes of provider %s in spec.consumer.trustedCAs",
				i+1, got, provider)
		}
	}
	return nil
}

// offeredHashes names the CA hashes of an Identity's CA bundle in a message.
func offeredHashes(ca []byte) string {
	if len(ca) == 0 {
		return "no CA: system roots"
	}
	hashes, err := crypto.CACertHashes(ca)
	if err != nil {
		return "an unreadable CA"
	}
	return "CA " + strings.Join(hashes, ", ") + ": compare it with the provider's, never copy it from here"
}

// CheckTrustedCA returns an error unless ca, an Identity's CA bundle, holds
// exactly the certificates of trusted, the one configured for provider.
func CheckTrustedCA(provider string, trusted TrustedCA, ca []byte) error {
	want, err := crypto.ParseCAPEM(trusted.PEM)
	if err != nil {
		return fmt.Errorf("trusted CA of provider %s: Secret %s, key %s: %w", provider, trusted.Secret, TrustedCAKey, err)
	}
	if len(ca) == 0 {
		return fmt.Errorf("the Identity offers no CA, but spec.consumer.trustedCAs configures Secret %s for provider %s", trusted.Secret, provider)
	}
	got, err := crypto.ParseCAPEM(ca)
	if err != nil {
		return fmt.Errorf("identity CA: %w", err)
	}
	if !got.Equal(want) {
		return fmt.Errorf("the Identity's CA is not the CA configured for provider %s in spec.consumer.trustedCAs (Secret %s)", provider, trusted.Secret)
	}
	return nil
}

// RecordPin reports whether the annotations of the consumer-side tenant
// namespace must change to record pin (Trust's; "" records nothing): the pin
// is not there yet, or a legacy CA pin is left to drop.
func RecordPin(annotations map[string]string, pin string) bool {
	return pin != "" && (annotations[vocabulary.PinnedProviderAnnotation] != pin || annotations[vocabulary.PinnedCAAnnotation] != "")
}

// Unlisted reports whether the consumer forgets what it holds for the
// provider of identity, an Identity the PeeringRepository created: the
// provider left providers (spec.consumer.providers). An Identity outside
// its provider's tenant namespace is not one the consumer made: left alone.
func Unlisted(providers []authv1beta1.ClusterID, identity *authv1beta1.Identity) bool {
	return !slices.Contains(providers, identity.Spec.ClusterID) &&
		identity.Namespace == authv1beta1.TenantNamespaceName(identity.Spec.ClusterID)
}
