package liqo

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"

	"github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	"github.com/gitpeer/gitpeer/crypto"
)

// ErrInvalidSliceCSR is the InvalidCSR failure of a ResourceSlice whose CSR key
// is not the key of the consumer's Tenant.
var ErrInvalidSliceCSR = errors.New("InvalidCSR: the ResourceSlice CSR key is not the Tenant's public key")

// CheckResourceSliceCSR is the provider's check in
// A/remoteresourceslice-controller: the key of a ResourceSlice CSR, which the
// consumer's Liqo signs with *its* authentication-keys, must be
// Tenant.spec.publicKey. A Tenant carrying another key fails every slice: no
// virtual node. (Liqo v1.2.0 A/remoteresourceslice-controller.)
func CheckResourceSliceCSR(tenant *v1beta1.Tenant, csrPEM []byte) error {
	block, _ := pem.Decode(csrPEM)
	if block == nil {
		return fmt.Errorf("%w: no PEM block", ErrInvalidSliceCSR)
	}
	csr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidSliceCSR, err)
	}
	want, err := crypto.ParsePublicKey(tenant.Spec.PublicKey)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidSliceCSR, err)
	}
	if !samePublicKey(csr.PublicKey, want) {
		return ErrInvalidSliceCSR
	}
	return nil
}
