package e2e

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
)

// A consumer reaches its provider through a proxy named in its Tenant
// (spec.proxyURL, as `liqoctl generate tenant --proxy-url` writes it): the
// provider accepts it only when allowed, and then copies it into the Tenant
// status and identity.yaml, so that the consumer's kubeconfig uses the proxy.
var _ = Describe("Proxy URL", Ordered, func() {
	const xProviderID, xConsumerID = "provider-x", "consumer-x"
	dir := xProviderID + "/" + xConsumerID + "/"
	review := "gitpeer/" + xProviderID + "/" + xConsumerID
	var provider, consumer *cluster
	var proxyURL string
	var tunnels *atomic.Int64

	BeforeAll(func() {
		proxyURL, tunnels = startConnectProxy()
		provider, consumer = startPeers(xProviderID, xConsumerID, false)
	})

	It("refuses a Tenant with a proxyURL the provider does not allow", func(ctx SpecContext) {
		mergeRequest(repo, review, dir)
		Eventually(func() string { return show(review, dir+"tenant.yaml") }).WithTimeout(time.Minute).ShouldNot(BeEmpty())
		mergeWithProxy(review, dir, proxyURL)

		expectEvent(ctx, provider, gitpeerv1alpha1.RejectedReason, dir+"tenant.yaml rejected", "does not accept proxies named by consumers")
		Consistently(func() string { return show("main", dir+"identity.yaml") }).WithTimeout(3 * time.Second).Should(BeEmpty())
	})

	It("issues an identity.yaml with the proxyURL once allowed, and the consumer reaches the provider through it", func(ctx SpecContext) {
		obj := peeringRepository(ctx, Default, provider)
		patch := client.MergeFrom(obj.DeepCopy())
		obj.Spec.Provider.AllowProxyURL = true
		Expect(provider.k8s.Patch(ctx, obj, patch)).To(Succeed())

		Eventually(func() string { return show("main", dir+"identity.yaml") }).WithTimeout(time.Minute).ShouldNot(BeEmpty())
		identity := &authv1beta1.Identity{}
		Expect(yaml.UnmarshalStrict([]byte(show("main", dir+"identity.yaml")), identity)).To(Succeed())
		Expect(identity.Spec.AuthParams.ProxyURL).To(HaveValue(Equal(proxyURL)))
		tenant := &authv1beta1.Tenant{}
		Expect(provider.k8s.Get(ctx, client.ObjectKey{Namespace: authv1beta1.TenantNamespaceName(xConsumerID), Name: xConsumerID}, tenant)).To(Succeed())
		Expect(tenant.Status.AuthParams.ProxyURL).To(HaveValue(Equal(proxyURL)), "status.authParams.proxyURL = spec.proxyURL, as Liqo sets it")

		Eventually(func(g Gomega) {
			g.Expect(peeringPhases(ctx, consumer)).To(HaveKeyWithValue("Consumer/"+xProviderID, gitpeerv1alpha1.PhaseReady))
		}).WithTimeout(time.Minute).Should(Succeed())
		kc, err := clientcmd.Load(kubeconfigOf(ctx, consumer, xProviderID))
		Expect(err).NotTo(HaveOccurred())
		Expect(kc.Clusters[xProviderID].ProxyURL).To(Equal(proxyURL))
		Expect(tunnels.Load()).To(BeNumerically(">", 0), "the consumer proved its kubeconfig through the proxy")
	})
})

// mergeWithProxy merges the review branch as a reviewer who adds proxyURL to
// the Tenant in dir (the consumer's signature covers only the nonce).
func mergeWithProxy(review, dir, proxyURL string) {
	GinkgoHelper()
	w := clone()
	gitCLI(w, "merge", "-q", "--no-ff", "origin/"+review, "-m", "Merge pull request from "+review)
	tenant := &authv1beta1.Tenant{}
	Expect(yaml.UnmarshalStrict(must(os.ReadFile(filepath.Join(w, dir, "tenant.yaml"))), tenant)).To(Succeed())
	tenant.Spec.ProxyURL = ptr.To(proxyURL)
	Expect(os.WriteFile(filepath.Join(w, dir, "tenant.yaml"), must(yaml.Marshal(tenant)), 0o644)).To(Succeed())
	gitCLI(w, "commit", "-q", "-a", "-m", "Reach the provider through the consumer's proxy")
	pushMain(w)
}

// startConnectProxy runs an HTTP CONNECT proxy until the spec ends and returns
// its URL and the number of tunnels it opened.
func startConnectProxy() (string, *atomic.Int64) {
	tunnels := &atomic.Int64{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodConnect {
			http.Error(w, "CONNECT only", http.StatusMethodNotAllowed)
			return
		}
		upstream, err := net.DialTimeout("tcp", r.Host, 5*time.Second)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			upstream.Close()
			return
		}
		tunnels.Add(1)
		_, _ = conn.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n"))
		go func() { _, _ = io.Copy(upstream, buf); upstream.Close() }()
		_, _ = io.Copy(conn, upstream)
		conn.Close()
	}))
	DeferCleanup(srv.Close)
	return srv.URL, tunnels
}
