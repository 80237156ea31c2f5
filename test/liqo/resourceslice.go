package liqo

import (
	gocrypto "crypto"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
)

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
