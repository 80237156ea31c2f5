package liqo_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/test/liqo"
)

// applyIdentity completes the handshake for consumerID: liqoctl generate
// identity from the issued Tenant, applied on the consumer.
func applyIdentity(ctx context.Context, consumerID string) (*authv1beta1.Tenant, *authv1beta1.Identity) {
	t := issued(ctx, applyTenant(ctx, consumerID, nil))
	identity, err := liqo.GenerateIdentity(t, provider.id)
	Expect(err).NotTo(HaveOccurred())
	identity.Name += "-" + consumerID // several handshakes share the consumer cluster
	identity.Namespace = "default"
	Expect(consumer.client.Create(ctx, identity)).To(Succeed())
	return t, identity
}

func kubeconfigSecret(ctx context.Context, identity *authv1beta1.Identity) *corev1.Secret {
	secret := &corev1.Secret{}
	Eventually(func(g Gomega) {
		g.Expect(consumer.client.Get(ctx, client.ObjectKeyFromObject(identity), identity)).To(Succeed())
		g.Expect(identity.Status.KubeconfigSecretRef).NotTo(BeNil())
		g.Expect(consumer.client.Get(ctx, client.ObjectKey{Namespace: identity.Namespace,
			Name: identity.Status.KubeconfigSecretRef.Name}, secret)).To(Succeed())
	}, eventually, poll).Should(Succeed())
	return secret
}

var _ = Describe("Nonce signer", func() {
	It("rewrites the signature with Liqo's key whenever it differs", func(ctx SpecContext) {
		nonce := crypto.GenerateNonce()
		_, err := liqo.GenerateTenant(ctx, consumer.client, consumer.double.Key, consumer.id, "signer-provider", nonce)
		Expect(err).NotTo(HaveOccurred())
		key := client.ObjectKey{Namespace: authv1beta1.TenantNamespacePrefix + "signer-provider", Name: authv1beta1.SignedNonceSecretName}
		secret := &corev1.Secret{}
		Expect(consumer.client.Get(ctx, key, secret)).To(Succeed())
		secret.Data[authv1beta1.SignedNonceSecretField] = []byte("forged")
		Expect(consumer.client.Update(ctx, secret)).To(Succeed())
		Eventually(func() error {
			Expect(consumer.client.Get(ctx, key, secret)).To(Succeed())
			return crypto.VerifyNonceSignature(consumer.double.Key.Public(), nonce, secret.Data[authv1beta1.SignedNonceSecretField])
		}, eventually, poll).Should(Succeed())
	})
})

var _ = Describe("Identity controller", func() {
	It("writes the kubeconfig with Liqo's key and writes it back when another writer changes it", func(ctx SpecContext) {
		t, identity := applyIdentity(ctx, "identity-ok")
		Expect(identity.Spec.AuthParams).To(Equal(*t.Status.AuthParams), "liqoctl generate identity copies the status unchanged")
		secret := kubeconfigSecret(ctx, identity)
		Expect(secret.Labels).To(HaveKeyWithValue(authv1beta1.RemoteClusterIDLabel, provider.id))
		Expect(secret.Labels).To(HaveKeyWithValue(authv1beta1.IdentityTypeLabel, string(authv1beta1.ControlPlaneIdentityType)))
		Expect(secret.Annotations).To(HaveKeyWithValue(authv1beta1.RemoteTenantNamespaceAnnotation, t.Status.TenantNamespace))
		Expect(secret.OwnerReferences).To(HaveLen(1))
		written := string(secret.Data[authv1beta1.KubeconfigSecretField])
		cfg, err := clientcmd.Load([]byte(written))
		Expect(err).NotTo(HaveOccurred())
		want, err := crypto.MarshalPrivateKeyPEM(consumer.double.Key)
		Expect(err).NotTo(HaveOccurred())
		for _, user := range cfg.AuthInfos {
			Expect(user.ClientKeyData).To(Equal(want))
		}

		By("writing it back over another writer's kubeconfig")
		secret.Data[authv1beta1.KubeconfigSecretField] = []byte("another writer's kubeconfig")
		Expect(consumer.client.Update(ctx, secret)).To(Succeed())
		Eventually(func() string {
			Expect(consumer.client.Get(ctx, client.ObjectKeyFromObject(secret), secret)).To(Succeed())
			return string(secret.Data[authv1beta1.KubeconfigSecretField])
		}, eventually, poll).Should(Equal(written))
	})
})

var _ = Describe("Renewal", func() {
	It("copies a new certificate of the provider's Tenant status into Identity.spec", func(ctx SpecContext) {
		t, identity := applyIdentity(ctx, "double-consumer")
		renewed := append([]byte(nil), t.Status.AuthParams.SignedCRT...)
		renewed = append(renewed, '\n') // any different bytes stand for a renewed certificate
		t.Status.AuthParams.SignedCRT = renewed
		Expect(provider.client.Status().Update(ctx, t)).To(Succeed())
		Eventually(func() []byte {
			Expect(consumer.client.Get(ctx, client.ObjectKeyFromObject(identity), identity)).To(Succeed())
			return identity.Spec.AuthParams.SignedCRT
		}, 10*time.Second, poll).Should(Equal(renewed))
	})
})

var _ = Describe("ResourceSlice CSR check", func() {
	It("passes the consumer's Liqo's CSR for the slice and fails another key, another slice or a control-plane subject", func(ctx SpecContext) {
		t := issued(ctx, applyTenant(ctx, "slice-check", nil))
		own, err := liqo.ResourceSliceCSR(consumer.double.Key, "slice-1", "slice-check")
		Expect(err).NotTo(HaveOccurred())
		Expect(liqo.CheckResourceSliceCSR(t, "slice-1", own)).To(Succeed())
		Expect(liqo.CheckResourceSliceCSR(t, "slice-2", own)).To(MatchError(ContainSubstring("common name")))
		gitpeerKey, err := crypto.GenerateKey(crypto.Ed25519)
		Expect(err).NotTo(HaveOccurred())
		other, err := liqo.ResourceSliceCSR(gitpeerKey, "slice-1", "slice-check")
		Expect(err).NotTo(HaveOccurred())
		Expect(liqo.CheckResourceSliceCSR(t, "slice-1", other)).To(MatchError(liqo.ErrInvalidSliceCSR))
		// The control plane's CSR (CN the consumer, O liqo.io), with the Tenant's key: Liqo refuses it for a slice.
		controlPlane, err := crypto.BuildCSR(consumer.double.Key, "slice-check")
		Expect(err).NotTo(HaveOccurred())
		Expect(liqo.CheckResourceSliceCSR(t, "slice-1", controlPlane)).To(MatchError(liqo.ErrInvalidSliceCSR))
	})
})
