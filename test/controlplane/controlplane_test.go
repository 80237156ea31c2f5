package controlplane_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/gitpeer/gitpeer/test/controlplane"
)

var _ = Describe("Control plane", func() {
	It("issues kube-apiserver-client certificates for approved Ed25519 CSRs, and they authenticate", func(ctx SpecContext) {
		pub, priv, err := ed25519.GenerateKey(rand.Reader)
		Expect(err).NotTo(HaveOccurred())
		csrDER, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
			Subject: pkix.Name{CommonName: "consumer-1", Organization: []string{"liqo.io"}},
		}, priv)
		Expect(err).NotTo(HaveOccurred())
		expiration := int32(3600)
		csr := &certificatesv1.CertificateSigningRequest{
			ObjectMeta: metav1.ObjectMeta{Name: "consumer-1"},
			Spec: certificatesv1.CertificateSigningRequestSpec{
				Request:           pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: csrDER}),
				SignerName:        certificatesv1.KubeAPIServerClientSignerName,
				ExpirationSeconds: &expiration,
				Usages:            []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
			},
		}
		Expect(k8s.Create(ctx, csr)).To(Succeed())
		csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "Test", Message: "approved by test",
		})
		cs := kubernetes.NewForConfigOrDie(cp.Config)
		_, err = cs.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{})
		Expect(err).NotTo(HaveOccurred())

		Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(csr), csr)).To(Succeed())
			g.Expect(csr.Status.Certificate).NotTo(BeEmpty())
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())

		block, _ := pem.Decode(csr.Status.Certificate)
		cert, err := x509.ParseCertificate(block.Bytes)
		Expect(err).NotTo(HaveOccurred())
		Expect(cert.PublicKey).To(Equal(pub))
		Expect(cert.NotAfter.Sub(cert.NotBefore)).To(BeNumerically("<=", time.Hour+5*time.Minute))

		keyDER, err := x509.MarshalPKCS8PrivateKey(priv)
		Expect(err).NotTo(HaveOccurred())
		userCfg := &rest.Config{Host: cp.URL, TLSClientConfig: rest.TLSClientConfig{
			CAData: cp.CAPEM, CertData: csr.Status.Certificate,
			KeyData: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
		}}
		review, err := kubernetes.NewForConfigOrDie(userCfg).AuthenticationV1().SelfSubjectReviews().
			Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(review.Status.UserInfo.Username).To(Equal("consumer-1"))
		Expect(review.Status.UserInfo.Groups).To(ContainElements("liqo.io", "system:authenticated"))

		// Authenticated is not authorized: RBAC grants this user nothing.
		_, err = kubernetes.NewForConfigOrDie(userCfg).CoreV1().Secrets("").List(ctx, metav1.ListOptions{})
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "listing secrets: %v", err)
	})

	It("completes namespace deletion", func(ctx SpecContext) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "doomed"}}
		Expect(k8s.Create(ctx, ns)).To(Succeed())
		Expect(k8s.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "doomed", Name: "content"}})).To(Succeed())
		Expect(k8s.Delete(ctx, ns)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(ns), ns))
		}).WithContext(ctx).WithTimeout(60 * time.Second).Should(BeTrue())
	})

	It("garbage-collects owned objects", func(ctx SpecContext) {
		owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "owner"}}
		Expect(k8s.Create(ctx, owner)).To(Succeed())
		owned := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "owned"}}
		Expect(controllerutil.SetOwnerReference(owner, owned, k8s.Scheme())).To(Succeed())
		Expect(k8s.Create(ctx, owned)).To(Succeed())
		Expect(k8s.Delete(ctx, owner)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(owned), owned))
		}).WithContext(ctx).WithTimeout(60 * time.Second).Should(BeTrue())
	})

	It("runs a second control plane side by side, isolated from the first", func(ctx SpecContext) {
		other := controlplane.Start(GinkgoT())
		Expect(other.URL).NotTo(Equal(cp.URL))
		Expect(other.CAPEM).NotTo(Equal(cp.CAPEM))
		otherClient, err := client.New(other.Config, client.Options{})
		Expect(err).NotTo(HaveOccurred())
		Expect(otherClient.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "only-here"}})).To(Succeed())
		Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: "default", Name: "only-here"}, &corev1.ConfigMap{}))).To(BeTrue())

		// The first cluster's credentials mean nothing to the second.
		foreign := rest.CopyConfig(cp.Config)
		foreign.Host, foreign.CAData = other.URL, other.CAPEM
		_, err = kubernetes.NewForConfigOrDie(foreign).CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{})
		Expect(apierrors.IsUnauthorized(err)).To(BeTrue(), "foreign credentials: %v", err)
	})

	It("restarts its API server keeping the cluster's state", func(ctx SpecContext) {
		kept := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kept"}}
		Expect(k8s.Create(ctx, kept)).To(Succeed())
		cp.StopAPIServer()
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(kept), kept)).NotTo(Succeed(), "the API server is down")
		Expect(cp.StartAPIServer(ctx)).To(Succeed())
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(kept), kept)).To(Succeed())
	})
})
