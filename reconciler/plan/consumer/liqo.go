package consumer

import (
	"bytes"
	gocrypto "crypto"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// The consumer in Liqo mode: Liqo's nonce signer signs the provider's nonce
// and Liqo's identity controller writes the kubeconfig (liqotech/liqo v1.2.0,
// pkg/liqo-controller-manager/authentication/noncesigner-controller and
// identity-controller); the consumer moves the files, applies the Identity and
// proves Liqo's kubeconfig.

// NonceStep is where the signing of the provider's nonce stands in Liqo mode.
type NonceStep int

// Nonce steps.
const (
	// WriteNonce: the liqo-signed-nonce Secret is absent or holds another
	// nonce: write {nonce} as `liqoctl generate tenant` does.
	WriteNonce NonceStep = iota
	// WaitForSignature: Liqo's nonce signer has not (yet) written a signature
	// of the nonce by Liqo's key.
	WaitForSignature
	// ProposeSigned: signed; build tenant.yaml with the signature and push it.
	ProposeSigned
	// AlreadyProposed: tenant.yaml for this nonce was pushed.
	AlreadyProposed
)

var nonceStepNames = [...]string{"WriteNonce", "WaitForSignature", "ProposeSigned", "AlreadyProposed"}

func (s NonceStep) String() string { return nonceStepNames[s] }

// PlanSignedNonce returns the step for nonce given the liqo-signed-nonce
// Secret (nil when absent) and Liqo's public key; with ProposeSigned, the
// signature to put in tenant.yaml. A signature that does not verify (not yet
// rewritten by the signer, or by another key) is waited for, never used.
func PlanSignedNonce(secret *corev1.Secret, nonce string, key gocrypto.PublicKey) (NonceStep, []byte) {
	if secret == nil || string(secret.Data[authv1beta1.NonceSecretField]) != nonce {
		return WriteNonce, nil
	}
	if _, ok := secret.Annotations[vocabulary.ProposedAnnotation]; ok {
		return AlreadyProposed, nil
	}
	signature := secret.Data[authv1beta1.SignedNonceSecretField]
	if len(signature) == 0 || crypto.VerifyNonceSignature(key, nonce, signature) != nil {
		return WaitForSignature, nil
	}
	return ProposeSigned, signature
}

// IdentityChange is what the consumer in Liqo mode does with the Identity in
// the cluster when identity.yaml is valid.
type IdentityChange int

// Identity changes.
const (
	// CreateIdentity: there is no Identity yet.
	CreateIdentity IdentityChange = iota
	// UpdateIdentity: identity.yaml's certificate is newer than the
	// Identity's (or the same with other parameters).
	UpdateIdentity
	// IdentityUnchanged: the Identity already holds identity.yaml's spec.
	IdentityUnchanged
	// KeepRenewed: the Identity holds a newer certificate than identity.yaml
	// (Liqo's renewer moved it): never downgrade it.
	KeepRenewed
)

var identityChangeNames = [...]string{"CreateIdentity", "UpdateIdentity", "IdentityUnchanged", "KeepRenewed"}

func (c IdentityChange) String() string { return identityChangeNames[c] }

// IdentityPlan is what the consumer in Liqo mode writes to the Identity.
type IdentityPlan struct {
	// Change is what happens to the certificate.
	Change IdentityChange
	// Spec is the Identity.spec to hold: identity.yaml's, with the newer of
	// its certificate and the Identity's.
	Spec authv1beta1.IdentitySpec
	// Digest is ParamsDigest(Spec), for vocabulary.IdentityParamsAnnotation.
	Digest string
	// Write says the Identity (its spec or vocabulary.IdentityParamsAnnotation) must be written.
	Write bool
	// Drifted names the pinned fields of Identity.spec that someone else
	// changed away from identity.yaml since the consumer wrote them; they are
	// restored (Spec).
	Drifted []string
}

// pinnedFields are the fields of Identity.spec the consumer takes from the
// reviewed identity.yaml only: everything but the certificate. Liqo's local
// renewer copies the provider's whole authParams into Identity.spec when it
// renews (liqotech/liqo v1.2.0,
// pkg/liqo-controller-manager/authentication/localrenewer-controller), and the
// identity controller builds the kubeconfig from them: an API server, CA or
// proxy that arrived that way, outside Git, is never used.
var pinnedFields = []struct {
	name  string
	equal func(a, b *authv1beta1.IdentitySpec) bool
}{
	{"spec.clusterID", func(a, b *authv1beta1.IdentitySpec) bool { return a.ClusterID == b.ClusterID }},
	{"spec.type", func(a, b *authv1beta1.IdentitySpec) bool { return a.Type == b.Type }},
	{"spec.namespace", func(a, b *authv1beta1.IdentitySpec) bool { return ptr.Equal(a.Namespace, b.Namespace) }},
	{"spec.authParams.apiServer", func(a, b *authv1beta1.IdentitySpec) bool { return a.AuthParams.APIServer == b.AuthParams.APIServer }},
	{"spec.authParams.ca", func(a, b *authv1beta1.IdentitySpec) bool { return bytes.Equal(a.AuthParams.CA, b.AuthParams.CA) }},
	{"spec.authParams.proxyURL", func(a, b *authv1beta1.IdentitySpec) bool {
		return ptr.Equal(a.AuthParams.ProxyURL, b.AuthParams.ProxyURL)
	}},
	{"spec.authParams.awsConfig", func(a, b *authv1beta1.IdentitySpec) bool {
		return apiequality.Semantic.DeepEqual(a.AuthParams.AwsConfig, b.AuthParams.AwsConfig)
	}},
}

// ParamsDigest is the SHA-256, in hex, of spec without its certificate: the
// parameters the consumer pins.
func ParamsDigest(spec *authv1beta1.IdentitySpec) string {
	pinned := spec.DeepCopy()
	pinned.AuthParams.SignedCRT = nil
	data, err := json.Marshal(pinned)
	if err != nil {
		panic(err) // a struct of strings and byte slices always marshals
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// PlanIdentity plans the Identity for identity.yaml's spec (incoming, whose
// certificate was checked), given the spec of the Identity in the cluster
// (nil when absent) and its vocabulary.IdentityParamsAnnotation (applied). The certificate is
// identity.yaml's unless the cluster's is newer (a later NotBefore, or the
// same NotBefore and a larger serial: Liqo's renewer moved it on); an
// unreadable certificate in the cluster is replaced. Every other field is
// identity.yaml's, always: a pinned field that differs from it while the
// Identity's parameters are not the ones the consumer last wrote (applied)
// drifted.
func PlanIdentity(current *authv1beta1.IdentitySpec, applied string, incoming *authv1beta1.IdentitySpec) (IdentityPlan, error) {
	plan := IdentityPlan{Change: CreateIdentity, Spec: *incoming.DeepCopy(), Write: true}
	plan.Digest = ParamsDigest(&plan.Spec)
	if current == nil {
		return plan, nil
	}
	plan.Change = UpdateIdentity
	if !bytes.Equal(current.AuthParams.SignedCRT, incoming.AuthParams.SignedCRT) {
		in, err := crypto.ParseCertificatePEM(incoming.AuthParams.SignedCRT)
		if err != nil {
			return IdentityPlan{}, fmt.Errorf("identity.yaml certificate: %w", err)
		}
		// A broken certificate in the cluster is replaced.
		if cur, err := crypto.ParseCertificatePEM(current.AuthParams.SignedCRT); err == nil &&
			!in.NotBefore.After(cur.NotBefore) && (!in.NotBefore.Equal(cur.NotBefore) || in.SerialNumber.Cmp(cur.SerialNumber) <= 0) {
			plan.Change = KeepRenewed
			plan.Spec.AuthParams.SignedCRT = bytes.Clone(current.AuthParams.SignedCRT)
		}
	}
	if apiequality.Semantic.DeepEqual(*current, plan.Spec) {
		if plan.Change == UpdateIdentity {
			plan.Change = IdentityUnchanged
		}
		plan.Write = applied != plan.Digest
		return plan, nil
	}
	if applied != ParamsDigest(current) {
		for _, f := range pinnedFields {
			if !f.equal(current, &plan.Spec) {
				plan.Drifted = append(plan.Drifted, f.name)
			}
		}
	}
	return plan, nil
}

// LiqoKubeconfig returns the kubeconfig Liqo's identity controller wrote for
// identity, given the Secret status.kubeconfigSecretRef names, or its default
// name before Liqo set the reference (nil when absent), or why it is not
// there yet: a Secret being deleted (LiqoSecretTerminating), no reference, no
// Secret, or a kubeconfig built from another certificate than the one in
// Identity.spec.
func LiqoKubeconfig(identity *authv1beta1.Identity, secret *corev1.Secret) ([]byte, error) {
	ref := identity.Status.KubeconfigSecretRef
	switch {
	case secret != nil && secret.DeletionTimestamp != nil:
		return nil, LiqoSecretTerminating(secret)
	case ref == nil:
		return nil, fmt.Errorf("waiting for Liqo's identity controller to set status.kubeconfigSecretRef of Identity %s", identity.Name)
	case secret == nil || secret.Name != ref.Name:
		return nil, fmt.Errorf("waiting for Liqo's identity controller to write Secret %s", ref.Name)
	}
	kubeconfig := secret.Data[authv1beta1.KubeconfigSecretField]
	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("secret %s: kubeconfig: %w", secret.Name, err)
	}
	if len(cfg.AuthInfos) == 0 {
		return nil, fmt.Errorf("secret %s: kubeconfig has no user", secret.Name)
	}
	for _, user := range cfg.AuthInfos {
		if !bytes.Equal(user.ClientCertificateData, identity.Spec.AuthParams.SignedCRT) {
			return nil, fmt.Errorf("waiting for Liqo's identity controller to rewrite Secret %s with the certificate of Identity %s", secret.Name, identity.Name)
		}
	}
	// What the kubeconfig connects to and trusts must be the Identity's (the
	// pinned identity.yaml's), not what the Secret held before a restore.
	ap := identity.Spec.AuthParams
	if len(cfg.Clusters) == 0 {
		return nil, fmt.Errorf("secret %s: kubeconfig has no cluster", secret.Name)
	}
	for _, c := range cfg.Clusters {
		if c.Server != ap.APIServer || !bytes.Equal(c.CertificateAuthorityData, ap.CA) || c.CertificateAuthority != "" || c.ProxyURL != ptr.Deref(ap.ProxyURL, "") || c.InsecureSkipTLSVerify {
			return nil, fmt.Errorf("waiting for Liqo's identity controller to rewrite Secret %s with the API server, CA and proxy of Identity %s", secret.Name, identity.Name)
		}
	}
	return kubeconfig, nil
}

// ReplicatorFinalizer is the finalizer Liqo's CRD replicator puts on a
// control-plane kubeconfig Secret while it replicates to the provider with it
// (liqotech/liqo v1.2.0 internal/crdReplicator/crdReplicator-operator.go).
const ReplicatorFinalizer = "crdreplicator.liqo.io/operator"

// LiqoSecretTerminating says why a kubeconfig Secret being deleted holds up a
// peering: the Secret of a revoked or replaced Identity (it is owned by the
// Identity) stays while a finalizer holds it, and Liqo's identity controller
// cannot write the new Identity's kubeconfig until it is gone (the old one is
// still owned by the old Identity). gitpeer never removes another
// controller's finalizer: it names it, and what removes it.
func LiqoSecretTerminating(secret *corev1.Secret) error {
	msg := fmt.Sprintf("Liqo's kubeconfig Secret %s is being deleted, held by finalizers %v; Liqo's identity controller writes the new one once it is gone",
		secret.Name, secret.Finalizers)
	if slices.Contains(secret.Finalizers, ReplicatorFinalizer) {
		msg += "; " + ReplicatorFinalizer + " is removed by Liqo's CRD replicator (liqo-crd-replicator) once it stopped replicating to the provider: check that it runs"
	}
	return errors.New(msg)
}
