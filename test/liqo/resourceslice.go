package liqo

import (
	gocrypto "crypto"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"

	"github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	"github.com/gitpeer/gitpeer/crypto"
)

// ErrInvalidSliceCSR is the InvalidCSR failure of a ResourceSlice whose CSR is
// not the consumer's Liqo's for that slice: another subject, or a key that is
// not the key of the consumer's Tenant.
var ErrInvalidSliceCSR = errors.New("InvalidCSR: the ResourceSlice CSR is not the consumer's for this slice")

// ResourceSliceCSR is the CSR the consumer's Liqo makes for its ResourceSlice
// slice with its key: CN <slice>-<first 6 bytes of sha256(consumer) in hex>,
// O <consumer> (Liqo v1.2.0 A/csr.go GenerateCSRForResourceSlice).
func ResourceSliceCSR(key gocrypto.Signer, slice, consumer string) ([]byte, error) {
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: sliceCommonName(slice, consumer), Organization: []string{consumer}},
	}, key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}), nil
}

func sliceCommonName(slice, consumer string) string {
	sum := sha256.Sum256([]byte(consumer))
	return fmt.Sprintf("%s-%x", slice, sum[:6])
}

// CheckResourceSliceCSR is the provider's check of the CSR of ResourceSlice
// slice in A/remoteresourceslice-controller (A/csr.go CheckCSRForResourceSlice):
// one PEM block, CN <slice>-<hash of the consumer>, first O the consumer, and
// the key Tenant.spec.publicKey, which the consumer's Liqo signs with (*its*
// authentication-keys). A Tenant carrying another key fails every slice: no
// virtual node.
func CheckResourceSliceCSR(tenant *v1beta1.Tenant, slice string, csrPEM []byte) error {
	block, rest := pem.Decode(csrPEM)
	if block == nil || len(rest) != 0 {
		return fmt.Errorf("%w: not one PEM block", ErrInvalidSliceCSR)
	}
	csr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidSliceCSR, err)
	}
	consumer := string(tenant.Spec.ClusterID)
	if csr.Subject.CommonName != sliceCommonName(slice, consumer) {
		return fmt.Errorf("%w: common name %q", ErrInvalidSliceCSR, csr.Subject.CommonName)
	}
	if len(csr.Subject.Organization) == 0 || csr.Subject.Organization[0] != consumer {
		return fmt.Errorf("%w: organization %q", ErrInvalidSliceCSR, csr.Subject.Organization)
	}
	want, err := crypto.ParsePublicKey(tenant.Spec.PublicKey)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidSliceCSR, err)
	}
	if !samePublicKey(csr.PublicKey, want) {
		return fmt.Errorf("%w: not the Tenant's public key", ErrInvalidSliceCSR)
	}
	return nil
}
