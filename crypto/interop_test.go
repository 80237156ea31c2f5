package crypto

import (
	"bytes"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"os"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// The artifacts of testdata/liqo-docs come from one run of liqoctl shown in
// Liqo's documentation (see testdata/README.md).

// liqoTenant is the part of an authentication.liqo.io/v1beta1 Tenant used here.
type liqoTenant struct {
	Spec struct {
		ClusterID string `json:"clusterID"`
		CSR       []byte `json:"csr"`
		PublicKey []byte `json:"publicKey"`
		Signature []byte `json:"signature"`
	} `json:"spec"`
}

// liqoIdentity is the part of an authentication.liqo.io/v1beta1 Identity used here.
type liqoIdentity struct {
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		ClusterID  string `json:"clusterID"`
		Namespace  string `json:"namespace"`
		AuthParams struct {
			APIServer string `json:"apiServer"`
			CA        []byte `json:"ca"`
			SignedCRT []byte `json:"signedCRT"`
		} `json:"authParams"`
	} `json:"spec"`
}

// docCN is the common name in the documentation's CSR and certificate; the
// documentation's Tenant says its consumer is "cl-consumer".
const docCN = "cl01"

func readDocs(t *testing.T) (nonce string, tenant liqoTenant, identity liqoIdentity) {
	t.Helper()
	raw, err := os.ReadFile("testdata/liqo-docs/nonce.txt")
	requireNoError(t, err)
	for name, into := range map[string]any{"tenant.yaml": &tenant, "identity.yaml": &identity} {
		data, err := os.ReadFile("testdata/liqo-docs/" + name)
		requireNoError(t, err)
		requireNoError(t, yaml.Unmarshal(data, into))
	}
	return string(raw), tenant, identity
}

func TestLiqoDocsNonce(t *testing.T) {
	nonce, _, _ := readDocs(t)
	if len(nonce) != NonceLength {
		t.Fatalf("documented nonce is %d characters", len(nonce))
	}
	requireNoError(t, ValidateNonce(nonce))
}

func TestLiqoDocsTenantSignature(t *testing.T) {
	nonce, tenant, _ := readDocs(t)
	if len(tenant.Spec.PublicKey) != ed25519.PublicKeySize {
		t.Fatalf("documented publicKey is %d bytes, not a raw Ed25519 key", len(tenant.Spec.PublicKey))
	}
	pub, err := ParsePublicKey(tenant.Spec.PublicKey)
	requireNoError(t, err)
	if len(tenant.Spec.Signature) != ed25519.SignatureSize {
		t.Fatalf("documented signature is %d bytes", len(tenant.Spec.Signature))
	}
	// Liqo signs the ASCII nonce string, not its decoded bytes.
	requireNoError(t, VerifyNonceSignature(pub, nonce, tenant.Spec.Signature))
	decoded, err := base64.StdEncoding.DecodeString(nonce)
	requireNoError(t, err)
	requireRule(t, VerifyNonceSignature(pub, string(decoded), tenant.Spec.Signature), RuleSignature)
	requireRule(t, VerifyNonceSignature(pub, GenerateNonce(), tenant.Spec.Signature), RuleSignature)
	// gitpeer writes the same key as PEM; both forms are the same key.
	pemKey, err := MarshalPublicKeyPEM(pub)
	requireNoError(t, err)
	again, err := ParsePublicKey(pemKey)
	requireNoError(t, err)
	requireNoError(t, VerifyNonceSignature(again, nonce, tenant.Spec.Signature))
}

func TestLiqoDocsTenantCSR(t *testing.T) {
	_, tenant, _ := readDocs(t)
	pub, err := ParsePublicKey(tenant.Spec.PublicKey)
	requireNoError(t, err)
	// Every rule holds for the CN actually in the CSR ...
	csr, err := ValidateCSR(tenant.Spec.CSR, docCN, pub)
	requireNoError(t, err)
	// ... which is not the Tenant's cluster ID: the documentation renamed
	// the cluster in the YAML but not inside the CSR.
	if tenant.Spec.ClusterID != "cl-consumer" {
		t.Fatalf("Tenant clusterID is %q", tenant.Spec.ClusterID)
	}
	_, err = ValidateCSR(tenant.Spec.CSR, tenant.Spec.ClusterID, pub)
	requireRule(t, err, RuleCSRCommonName, `CSR common name "cl01" is not the cluster ID "cl-consumer"`)

	// BuildCSR produces Liqo's bytes exactly: replaying the documented
	// signature over gitpeer's request info yields the documented CSR.
	built, err := BuildCSR(replaySigner{pub: pub, signature: csr.Signature}, docCN)
	requireNoError(t, err)
	if !bytes.Equal(built, tenant.Spec.CSR) {
		t.Fatalf("BuildCSR differs from Liqo's CSR:\n%s\nwant:\n%s", built, tenant.Spec.CSR)
	}
}

func TestLiqoDocsIdentity(t *testing.T) {
	_, tenant, identity := readDocs(t)
	pub, err := ParsePublicKey(tenant.Spec.PublicKey)
	requireNoError(t, err)
	auth := identity.Spec.AuthParams
	issued := time.Date(2024, 7, 22, 6, 42, 41, 0, time.UTC)

	cert, err := VerifyClientCertificate(auth.SignedCRT, auth.CA, pub, issued.Add(time.Hour))
	requireNoError(t, err)
	if cert.Subject.CommonName != docCN || len(cert.Subject.Organization) != 1 || cert.Subject.Organization[0] != CSROrganization {
		t.Fatalf("certificate subject is %s", cert.Subject)
	}
	if !cert.NotBefore.Equal(issued) || !cert.NotAfter.Equal(issued.AddDate(1, 0, 0)) {
		t.Fatalf("certificate validity is %s to %s", cert.NotBefore, cert.NotAfter)
	}
	if got, want := RenewalTime(cert), issued.Add(365*24*time.Hour*2/3); !got.Equal(want) {
		t.Fatalf("RenewalTime = %s, want %s", got, want)
	}
	// The documented certificate expired on 2025-07-22.
	_, err = VerifyClientCertificate(auth.SignedCRT, auth.CA, pub, issued.AddDate(1, 0, 1))
	requireRule(t, err, RuleCertificateValidity, "2025-07-22T06:42:41Z")
	// It is not a certificate for any other key.
	_, err = VerifyClientCertificate(auth.SignedCRT, auth.CA, newEd25519(t).Public(), issued.Add(time.Hour))
	requireRule(t, err, RuleCertificateKey)

	// The kubeconfig a consumer builds from this Identity.
	kubeconfig, err := BuildKubeconfig(KubeconfigParams{
		ProviderClusterID: identity.Spec.ClusterID,
		IdentityName:      identity.Metadata.Name,
		Namespace:         identity.Spec.Namespace,
		APIServer:         auth.APIServer,
		CA:                auth.CA,
		Certificate:       auth.SignedCRT,
		Key:               newEd25519(t),
	})
	requireNoError(t, err)
	for _, want := range []string{"name: cl-provider", "name: controlplane-cl-provider", "namespace: liqo-tenant-cl-consumer", "server: https://172.19.0.3:6443", "current-context: default-context"} {
		if !bytes.Contains(kubeconfig, []byte(want)) {
			t.Fatalf("kubeconfig lacks %q:\n%s", want, kubeconfig)
		}
	}
}

// TestLiqoDocsCA checks the documented CA is a CA and is what signed the
// certificate, so the chain rule is exercised with real Kubernetes output.
func TestLiqoDocsCA(t *testing.T) {
	_, _, identity := readDocs(t)
	ders, err := decodePEMBlocks(identity.Spec.AuthParams.CA, pemCertificate, true, RuleCertificateFormat)
	requireNoError(t, err)
	ca, err := x509.ParseCertificate(ders[0])
	requireNoError(t, err)
	if len(ders) != 1 || !ca.IsCA || ca.Subject.CommonName != "kubernetes" {
		t.Fatalf("documented CA is %d certificates, first %s (CA %v)", len(ders), ca.Subject, ca.IsCA)
	}
}
