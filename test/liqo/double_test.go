package liqo_test

import (
	"context"
	gocrypto "crypto"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	certv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/test/liqo"
)

const eventually, poll = 30 * time.Second, 100 * time.Millisecond

// applyTenant runs the handshake for consumerID up to the Tenant on the
// provider (liqoctl create nonce, liqoctl generate tenant with the consumer's
// double, apply), letting mutate change it first.
func applyTenant(ctx context.Context, consumerID string, mutate func(*authv1beta1.Tenant)) *authv1beta1.Tenant {
	nonce, err := liqo.CreateNonce(ctx, provider.client, consumerID)
	Expect(err).NotTo(HaveOccurred())
	tenant, err := liqo.GenerateTenant(ctx, consumer.client, consumer.double.Key, consumerID, provider.id, nonce)
	Expect(err).NotTo(HaveOccurred())
	tenant.Namespace = authv1beta1.TenantNamespacePrefix + consumerID
	if mutate != nil {
		mutate(tenant)
	}
	Expect(provider.client.Create(ctx, tenant)).To(Succeed())
	return tenant
}

// issued waits for the Tenant's status to carry a certificate and returns the Tenant.
func issued(ctx context.Context, t *authv1beta1.Tenant) *authv1beta1.Tenant {
	got := &authv1beta1.Tenant{}
	Eventually(func(g Gomega) {
		g.Expect(provider.client.Get(ctx, client.ObjectKeyFromObject(t), got)).To(Succeed())
		g.Expect(got.Status.AuthParams).NotTo(BeNil())
		g.Expect(got.Status.AuthParams.SignedCRT).NotTo(BeEmpty())
	}, eventually, poll).Should(Succeed())
	return got
}

// stays checks for a few seconds that the Tenant's status stays empty.
func staysUnissued(ctx context.Context, t *authv1beta1.Tenant) {
	Consistently(func(g Gomega) {
		got := &authv1beta1.Tenant{}
		g.Expect(provider.client.Get(ctx, client.ObjectKeyFromObject(t), got)).To(Succeed())
		g.Expect(got.Status.AuthParams).To(BeNil())
	}, 3*time.Second, 250*time.Millisecond).Should(Succeed())
}

func events(ctx context.Context, c client.Client, obj client.Object, reason string) func() []string {
	return func() []string {
		var list corev1.EventList
		Expect(c.List(ctx, &list, client.InNamespace(obj.GetNamespace()))).To(Succeed())
		var msgs []string
		for _, e := range list.Items {
			if e.InvolvedObject.Name == obj.GetName() && e.Reason == reason {
				msgs = append(msgs, e.Message)
			}
		}
		return msgs
	}
}

var _ = Describe("Where Liqo keeps things", func() {
	It("keeps the cluster ID in a labelled ConfigMap and an existing key Secret unchanged", func(ctx SpecContext) {
		var cm corev1.ConfigMap
		Expect(provider.client.Get(ctx, client.ObjectKey{Namespace: liqo.DefaultNamespace, Name: liqo.ClusterIDConfigMap}, &cm)).To(Succeed())
		Expect(cm.Data).To(HaveKeyWithValue(liqo.ClusterIDKey, provider.id))
		Expect(cm.Labels).To(HaveKeyWithValue(liqo.ClusterIDConfigMapLabel, "clusterid-configmap"))
		alg, ok := crypto.AlgorithmOf(provider.double.Key.Public())
		Expect(ok).To(BeTrue())
		Expect(alg).To(Equal(crypto.Ed25519))
		again, err := liqo.Install(ctx, provider.client, liqo.Options{ClusterID: provider.id, Algorithm: crypto.RSA2048})
		Expect(err).NotTo(HaveOccurred())
		Expect(again.Public()).To(Equal(provider.double.Key.Public()), "an existing key is never replaced")
	})

	It("creates an RSA-2048 key in compatibility mode", func(ctx SpecContext) {
		key, err := liqo.Install(ctx, provider.client, liqo.Options{Namespace: "liqo-rsa", ClusterID: "x", Algorithm: crypto.RSA2048})
		Expect(err).NotTo(HaveOccurred())
		alg, _ := crypto.AlgorithmOf(key.Public())
		Expect(alg).To(Equal(crypto.RSA2048))
	})
})

var _ = Describe("Nonce creator", func() {
	It("fills a labelled nonce Secret once, with 64 random bytes, and never rotates it", func(ctx SpecContext) {
		nonce, err := liqo.CreateNonce(ctx, provider.client, "nonce-once")
		Expect(err).NotTo(HaveOccurred())
		raw, err := base64.StdEncoding.DecodeString(nonce)
		Expect(err).NotTo(HaveOccurred())
		Expect(raw).To(HaveLen(64))
		secret := &corev1.Secret{}
		key := client.ObjectKey{Namespace: authv1beta1.TenantNamespacePrefix + "nonce-once", Name: authv1beta1.NonceSecretName}
		Expect(provider.client.Get(ctx, key, secret)).To(Succeed())
		metav1.SetMetaDataAnnotation(&secret.ObjectMeta, "touched", "yes")
		Expect(provider.client.Update(ctx, secret)).To(Succeed())
		Consistently(func() string {
			Expect(provider.client.Get(ctx, key, secret)).To(Succeed())
			return string(secret.Data[authv1beta1.NonceSecretField])
		}, 2*time.Second, 200*time.Millisecond).Should(Equal(nonce))
	})

	It("leaves a nonce Secret outside the tenant namespace empty", func(ctx SpecContext) {
		_, err := liqo.CreateNonce(ctx, provider.client, "nonce-elsewhere") // the tenant namespace, and its own nonce
		Expect(err).NotTo(HaveOccurred())
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: authv1beta1.NonceSecretName, Namespace: "default",
			Labels: map[string]string{authv1beta1.NonceSecretLabel: "true", authv1beta1.RemoteClusterIDLabel: "nonce-elsewhere"}}}
		Expect(provider.client.Create(ctx, secret)).To(Succeed())
		Eventually(events(ctx, provider.client, secret, "WrongNamespace"), eventually, poll).ShouldNot(BeEmpty())
		Expect(provider.client.Get(ctx, client.ObjectKeyFromObject(secret), secret)).To(Succeed())
		Expect(secret.Data).NotTo(HaveKey(authv1beta1.NonceSecretField))
	})

	It("retries a nonce Secret until its tenant namespace is found", func(ctx SpecContext) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: authv1beta1.TenantNamespacePrefix + "nonce-later"}}
		Expect(provider.client.Create(ctx, ns)).To(Succeed())
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: authv1beta1.NonceSecretName, Namespace: ns.Name,
			Labels: map[string]string{authv1beta1.NonceSecretLabel: "true", authv1beta1.RemoteClusterIDLabel: "nonce-later"}}}
		Expect(provider.client.Create(ctx, secret)).To(Succeed())
		Eventually(events(ctx, provider.client, secret, "TenantNamespaceNotFound"), eventually, poll).ShouldNot(BeEmpty())
		ns.Labels = map[string]string{authv1beta1.RemoteClusterIDLabel: "nonce-later", authv1beta1.TenantNamespaceLabel: authv1beta1.TrueValue}
		Expect(provider.client.Update(ctx, ns)).To(Succeed())
		Eventually(func() []byte {
			Expect(provider.client.Get(ctx, client.ObjectKeyFromObject(secret), secret)).To(Succeed())
			return secret.Data[authv1beta1.NonceSecretField]
		}, eventually, poll).ShouldNot(BeEmpty())
	})
})

var _ = Describe("Tenant controller", func() {
	It("verifies the handshake, issues through its own approved CSR, binds and replaces the status", func(ctx SpecContext) {
		t := issued(ctx, applyTenant(ctx, "tenant-ok", nil))
		Expect(t.Finalizers).To(ContainElement(liqo.TenantFinalizer))
		Expect(t.Status.TenantNamespace).To(Equal(authv1beta1.TenantNamespacePrefix + "tenant-ok"))
		Expect(t.Status.AuthParams.APIServer).To(Equal("https://provider.example:6443"))
		Expect(t.Status.AuthParams.CA).To(Equal(provider.cp.CAPEM))
		cert, err := crypto.VerifyClientCertificate(t.Status.AuthParams.SignedCRT, provider.cp.CAPEM, consumer.double.Key.Public(), time.Now())
		Expect(err).NotTo(HaveOccurred())
		Expect(cert.Subject.CommonName).To(Equal("tenant-ok"))

		var csrs certv1.CertificateSigningRequestList
		Expect(provider.client.List(ctx, &csrs, client.HasLabels{liqo.TenantCSRLabel})).To(Succeed())
		Expect(csrs.Items).NotTo(BeEmpty())
		Expect(csrs.Items[0].Name).To(HavePrefix(liqo.TenantCSRPrefix))

		var rb rbacv1.RoleBinding
		Expect(provider.client.Get(ctx, client.ObjectKey{Namespace: t.Status.TenantNamespace, Name: liqo.TenantRoleBinding}, &rb)).To(Succeed())
		Expect(rb.Subjects).To(ConsistOf(rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "tenant-ok"}))
		var crb rbacv1.ClusterRoleBinding
		Expect(provider.client.Get(ctx, client.ObjectKey{Name: liqo.ClusterWideBindingPrefix + "tenant-ok"}, &crb)).To(Succeed())

		By("replacing whatever else wrote to the status on its next reconcile")
		t.Status.AuthParams.APIServer = "https://elsewhere.example"
		Expect(provider.client.Status().Update(ctx, t)).To(Succeed())
		// The double may write the Tenant between the two updates: retried on a conflict.
		Eventually(func() error {
			if err := provider.client.Get(ctx, client.ObjectKeyFromObject(t), t); err != nil {
				return err
			}
			t.Spec.TenantCondition = authv1beta1.TenantConditionActive
			return provider.client.Update(ctx, t)
		}, eventually, poll).Should(Succeed())
		Eventually(func() string {
			Expect(provider.client.Get(ctx, client.ObjectKeyFromObject(t), t)).To(Succeed())
			return t.Status.AuthParams.APIServer
		}, eventually, poll).Should(Equal("https://provider.example:6443"))
	})

	It("reports a bad signature and changes nothing", func(ctx SpecContext) {
		t := applyTenant(ctx, "tenant-badsig", func(t *authv1beta1.Tenant) { t.Spec.Signature[0] ^= 0xff })
		Eventually(events(ctx, provider.client, t, "SignatureVerificationFailed"), eventually, poll).ShouldNot(BeEmpty())
		staysUnissued(ctx, t)
	})

	It("skips every check for TolerateNoHandshake", func(ctx SpecContext) {
		t := applyTenant(ctx, "tenant-tolerate", func(t *authv1beta1.Tenant) {
			t.Spec.AuthzPolicy = ptr.To(authv1beta1.TolerateNoHandshake)
			t.Spec.Signature = []byte("not a signature")
		})
		Eventually(func() string {
			Expect(provider.client.Get(ctx, client.ObjectKeyFromObject(t), t)).To(Succeed())
			return t.Status.TenantNamespace
		}, eventually, poll).ShouldNot(BeEmpty())
		Expect(t.Status.AuthParams).To(BeNil())
	})

	It("stays stuck when the CSR of a cached certificate changes", func(ctx SpecContext) {
		t := issued(ctx, applyTenant(ctx, "tenant-stuck", nil))
		first := t.Status.AuthParams.SignedCRT
		// Same key, CN and O[0]: the handshake check passes, the request bytes differ.
		t.Spec.CSR = csrWithUnit(consumer.double.Key, "tenant-stuck", "extra")
		Expect(provider.client.Update(ctx, t)).To(Succeed())
		Eventually(events(ctx, provider.client, t, "AuthParamsFailed"), eventually, poll).Should(
			ContainElement(ContainSubstring("do not match")))
		Expect(provider.client.Get(ctx, client.ObjectKeyFromObject(t), t)).To(Succeed())
		Expect(t.Status.AuthParams.SignedCRT).To(Equal(first))
	})

	It("unbinds a drained Tenant", func(ctx SpecContext) {
		t := issued(ctx, applyTenant(ctx, "tenant-drained", nil))
		t.Spec.TenantCondition = authv1beta1.TenantConditionDrained
		Expect(provider.client.Update(ctx, t)).To(Succeed())
		Eventually(func() bool {
			err := provider.client.Get(ctx, client.ObjectKey{Name: liqo.ClusterWideBindingPrefix + "tenant-drained"}, &rbacv1.ClusterRoleBinding{})
			return client.IgnoreNotFound(err) == nil && err != nil
		}, eventually, poll).Should(BeTrue())
		// The controller deletes the two bindings one after the other.
		Eventually(func() bool {
			err := provider.client.Get(ctx, client.ObjectKey{Namespace: t.Status.TenantNamespace, Name: liqo.TenantRoleBinding}, &rbacv1.RoleBinding{})
			return client.IgnoreNotFound(err) == nil && err != nil
		}, eventually, poll).Should(BeTrue())
	})

	It("fails every reconcile when a ClusterRole lost its label", func(ctx SpecContext) {
		var role rbacv1.ClusterRole
		Expect(provider.client.Get(ctx, client.ObjectKey{Name: authv1beta1.RemoteControlPlaneClusterRole}, &role)).To(Succeed())
		delete(role.Labels, liqo.ClusterIDConfigMapLabel)
		Expect(provider.client.Update(ctx, &role)).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			Expect(provider.client.Get(ctx, client.ObjectKey{Name: authv1beta1.RemoteControlPlaneClusterRole}, &role)).To(Succeed())
			role.Labels = map[string]string{liqo.ClusterIDConfigMapLabel: liqo.RemoteControlPlaneRoleLabel}
			Expect(provider.client.Update(ctx, &role)).To(Succeed())
		})
		t := applyTenant(ctx, "tenant-nolabel", nil)
		staysUnissued(ctx, t)
		Expect(t.Finalizers).To(BeEmpty())
	})
})

// csrWithUnit builds a PEM CSR for key with CN id, O liqo.io and an organizational unit.
func csrWithUnit(key gocrypto.Signer, id, unit string) []byte {
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: id, Organization: []string{"liqo.io"}, OrganizationalUnit: []string{unit}}}, key)
	Expect(err).NotTo(HaveOccurred())
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}
