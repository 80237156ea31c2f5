package provider

import (
	gocrypto "crypto"
	"crypto/x509"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
)

// In Liqo mode the provider moves files and gates approval, and Liqo's tenant
// controller does the crypto: gitpeer verifies the merged Tenant (CheckTenant:
// the same rules as standalone, authzPolicy and proxyURL included) before it applies it, and publishes the certificate
// Liqo put in the Tenant's status (CheckLiqoCertificate, IdentityAction).

// CheckLiqoCertificate checks the certificate Liqo's tenant controller put in
// a Tenant's status before gitpeer records or publishes it: one PEM
// certificate for key (the verified Tenant's key), valid at now, for client
// authentication, naming exactly the consumer (CN) in liqo.io (O). It does not
// check a chain: Liqo's authParams.ca is the API server's serving CA, never
// promised to be the signer of client certificates.
func CheckLiqoCertificate(certPEM []byte, key gocrypto.PublicKey, consumer string, now time.Time) (*x509.Certificate, error) {
	cert, err := crypto.CheckClientCertificate(certPEM, key, now)
	if err != nil {
		return nil, fmt.Errorf("certificate in the Tenant's status: %w", err)
	}
	if err := protocol.CheckSubject(cert, consumer); err != nil {
		return nil, err
	}
	return cert, nil
}

// IdentityAction says what the provider commits for the authParams Liqo put
// in a Tenant's status, given identity.yaml on the branch (nil if none): the
// first identity.yaml (protocol.ActionIssueIdentity), a new one for a
// changed status, as after Liqo's renewal (protocol.ActionRenewIdentity), or
// nothing ("") when the branch carries the status already: each change of the
// status is committed once.
func IdentityAction(status *authv1beta1.AuthParams, published *authv1beta1.Identity) string {
	switch {
	case status == nil:
		return ""
	case published == nil:
		return protocol.ActionIssueIdentity
	case equality.Semantic.DeepEqual(*status, published.Spec.AuthParams):
		return ""
	}
	return protocol.ActionRenewIdentity
}
