package preflight

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	gitpeercrypto "github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/vocabulary"
)

const signerCheck = "csr signer"

// signTestTimeout bounds the wait for the signer.
const signTestTimeout = time.Minute

// signer looks, without side effects, for evidence that the cluster's
// kube-apiserver-client signer works: the most recent CSR of that signer, issued or failed.
func signer(ctx context.Context, cl clients) Check {
	list, err := cl.kube.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{
		FieldSelector: "spec.signerName=" + certificatesv1.KubeAPIServerClientSignerName,
	})
	if err != nil {
		return info(signerCheck, "unknown: %v", err)
	}
	var last *certificatesv1.CertificateSigningRequest
	for i, csr := range list.Items {
		if len(csr.Status.Certificate) > 0 || condition(&csr, certificatesv1.CertificateFailed) != nil {
			if last == nil || csr.CreationTimestamp.After(last.CreationTimestamp.Time) {
				last = &list.Items[i]
			}
		}
	}
	switch {
	case last == nil:
		return info(signerCheck, "unknown: no issued %s CSR on the cluster (--sign-test has one issued)", certificatesv1.KubeAPIServerClientSignerName)
	case len(last.Status.Certificate) == 0:
		return failed(signerCheck, "the last %s CSR, %s, failed: %s", certificatesv1.KubeAPIServerClientSignerName, last.Name, condition(last, certificatesv1.CertificateFailed).Message)
	}
	return ok(signerCheck, "%s issued CSR %s (created %s)", certificatesv1.KubeAPIServerClientSignerName, last.Name, last.CreationTimestamp.UTC().Format(time.RFC3339))
}

// signTest creates a labelled CSR of the kube-apiserver-client signer with the shortest
// lifetime the API allows, approves it, waits for its certificate and deletes it.
func signTest(ctx context.Context, cl clients) Check {
	// A request of the agent's kind: Ed25519 as Liqo's keys, CN=<cluster ID>, O=liqo.io.
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return failed(signerCheck, "%v", err)
	}
	request, err := gitpeercrypto.BuildCSR(key, "gitpeer-check")
	if err != nil {
		return failed(signerCheck, "%v", err)
	}
	csrs := cl.kube.CertificatesV1().CertificateSigningRequests()
	csr, err := csrs.Create(ctx, &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "gitpeer-check-", Labels: map[string]string{vocabulary.SignTestLabel: "sign-test"}},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:           request,
			SignerName:        certificatesv1.KubeAPIServerClientSignerName,
			ExpirationSeconds: ptr.To[int32](600), // the API's minimum
			Usages:            []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return failed(signerCheck, "--sign-test: create a CSR: %v", err)
	}
	// Deleted even when the check was interrupted: ctx may be done.
	defer func() { _ = csrs.Delete(context.WithoutCancel(ctx), csr.Name, metav1.DeleteOptions{}) }()
	began := time.Now()
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue,
		Reason: vocabulary.CSRSignTestReason, Message: "gitpeer check --sign-test",
	})
	if _, err := csrs.UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{}); err != nil {
		return failed(signerCheck, "--sign-test: approve CSR %s: %v", csr.Name, err)
	}
	var reason string
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, signTestTimeout, true, func(ctx context.Context) (bool, error) {
		got, err := csrs.Get(ctx, csr.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if c := condition(got, certificatesv1.CertificateFailed); c != nil {
			reason = c.Message
			return true, nil
		}
		csr = got
		return len(got.Status.Certificate) > 0, nil
	})
	switch {
	case err != nil:
		return failed(signerCheck, "--sign-test: CSR %s approved, no certificate after %s: %v", csr.Name, time.Since(began).Round(time.Second), err)
	case reason != "":
		return failed(signerCheck, "--sign-test: CSR %s failed: %s", csr.Name, reason)
	}
	if err := matches(csr.Status.Certificate, key); err != nil {
		return failed(signerCheck, "--sign-test: CSR %s: %v", csr.Name, err)
	}
	return ok(signerCheck, "%s issued a test certificate in %s (CSR %s, deleted)", certificatesv1.KubeAPIServerClientSignerName, time.Since(began).Round(10*time.Millisecond), csr.Name)
}

// matches checks the issued certificate is for key.
func matches(certPEM []byte, key ed25519.PrivateKey) error {
	block, _ := pem.Decode(certPEM)
	if block == nil {
		return fmt.Errorf("the certificate is not PEM")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return err
	}
	if !key.Public().(ed25519.PublicKey).Equal(cert.PublicKey) {
		return fmt.Errorf("the certificate is not for the CSR's key")
	}
	return nil
}

func condition(csr *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) *certificatesv1.CertificateSigningRequestCondition {
	for i, c := range csr.Status.Conditions {
		if c.Type == t {
			return &csr.Status.Conditions[i]
		}
	}
	return nil
}
