package consumer

import (
	"bytes"
	gocrypto "crypto"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/tools/clientcmd"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	"github.com/gitpeer/gitpeer/crypto"
)

// The consumer in Liqo mode: Liqo's nonce signer signs the provider's nonce
// and Liqo's identity controller writes the kubeconfig (liqotech/liqo v1.2.0,
// pkg/liqo-controller-manager/authentication/noncesigner-controller and
// identity-controller); the consumer moves the files, applies the Identity and
// proves Liqo's kubeconfig.

// ProposedAnnotation on the liqo-signed-nonce Secret, in Liqo mode, records
// that tenant.yaml for the Secret's nonce was pushed (there the Secret holds
// the nonce before the push, for Liqo's nonce signer).
const ProposedAnnotation = "gitpeer.io/proposed"

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
	if _, ok := secret.Annotations[ProposedAnnotation]; ok {
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

// PlanIdentity compares the spec of the Identity in the cluster (nil when
// absent) with identity.yaml's, whose certificate was checked. A certificate
// replaces the cluster's only if it is newer: a later NotBefore, or the same
// NotBefore and a larger serial. An unreadable certificate in the cluster is
// replaced.
func PlanIdentity(current *authv1beta1.IdentitySpec, incoming *authv1beta1.IdentitySpec) (IdentityChange, error) {
	switch {
	case current == nil:
		return CreateIdentity, nil
	case apiequality.Semantic.DeepEqual(*current, *incoming):
		return IdentityUnchanged, nil
	case bytes.Equal(current.AuthParams.SignedCRT, incoming.AuthParams.SignedCRT):
		return UpdateIdentity, nil
	}
	in, err := crypto.ParseCertificatePEM(incoming.AuthParams.SignedCRT)
	if err != nil {
		return 0, fmt.Errorf("identity.yaml certificate: %w", err)
	}
	cur, err := crypto.ParseCertificatePEM(current.AuthParams.SignedCRT)
	if err != nil {
		return UpdateIdentity, nil //nolint:nilerr // a broken certificate in the cluster is replaced
	}
	if in.NotBefore.After(cur.NotBefore) || (in.NotBefore.Equal(cur.NotBefore) && in.SerialNumber.Cmp(cur.SerialNumber) > 0) {
		return UpdateIdentity, nil
	}
	return KeepRenewed, nil
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
