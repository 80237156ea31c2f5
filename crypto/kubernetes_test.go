package crypto

import (
	"context"
	"slices"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/gitpeer/gitpeer/test/controlplane"
)

// testKubernetesIssuance runs the whole certificate path through a real
// control plane: the consumer's CSR passes the provider's checks, Kubernetes
// signs it as a kube-apiserver-client certificate, the consumer accepts the
// certificate, and the kubeconfig it builds authenticates as the consumer
// in the group liqo.io and nothing more.
func testKubernetesIssuance(t *testing.T, cp *controlplane.ControlPlane) {
	admin, err := kubernetes.NewForConfig(cp.Config)
	requireNoError(t, err)
	ctx := context.Background()
	for _, alg := range []KeyAlgorithm{Ed25519, RSA2048} {
		t.Run(string(alg), func(t *testing.T) {
			key, err := GenerateKey(alg)
			requireNoError(t, err)
			csrPEM, err := BuildCSR(key, consumerID)
			requireNoError(t, err)
			_, err = ValidateCSR(csrPEM, consumerID, key.Public())
			requireNoError(t, err)

			csr := &certificatesv1.CertificateSigningRequest{
				ObjectMeta: metav1.ObjectMeta{GenerateName: "liqo-identity-"},
				Spec: certificatesv1.CertificateSigningRequestSpec{
					Request:           csrPEM,
					SignerName:        certificatesv1.KubeAPIServerClientSignerName,
					ExpirationSeconds: ptr.To[int32](3600),
					Usages: []certificatesv1.KeyUsage{
						certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth,
					},
				},
			}
			csrs := admin.CertificatesV1().CertificateSigningRequests()
			csr, err = csrs.Create(ctx, csr, metav1.CreateOptions{})
			requireNoError(t, err)
			csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
				Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "Test",
			})
			_, err = csrs.UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{})
			requireNoError(t, err)
			var certPEM []byte
			err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
				got, err := csrs.Get(ctx, csr.Name, metav1.GetOptions{})
				certPEM = got.Status.Certificate
				return len(certPEM) > 0, err
			})
			requireNoError(t, err)

			cert, err := VerifyClientCertificate(certPEM, cp.CAPEM, key.Public(), time.Now())
			requireNoError(t, err)
			if life := cert.NotAfter.Sub(cert.NotBefore); RenewalTime(cert).Sub(cert.NotBefore) != life-life/3 {
				t.Fatal("renewal is not at two thirds of the certificate's life")
			}
			_, err = VerifyClientCertificate(certPEM, cp.CAPEM, newEd25519(t).Public(), time.Now())
			requireRule(t, err, RuleCertificateKey)

			kubeconfig, err := BuildKubeconfig(KubeconfigParams{
				ProviderClusterID: "cl-provider",
				IdentityName:      "controlplane-cl-provider",
				Namespace:         "liqo-tenant-" + consumerID,
				APIServer:         cp.URL,
				CA:                cp.CAPEM,
				Certificate:       certPEM,
				Key:               key,
			})
			requireNoError(t, err)
			config, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
			requireNoError(t, err)
			consumer, err := kubernetes.NewForConfig(config)
			requireNoError(t, err)
			review, err := consumer.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
			requireNoError(t, err)
			user := review.Status.UserInfo
			if user.Username != consumerID || !slices.Contains(user.Groups, CSROrganization) || slices.Contains(user.Groups, "system:masters") {
				t.Fatalf("the kubeconfig authenticates as %q in %v", user.Username, user.Groups)
			}
		})
	}
}
