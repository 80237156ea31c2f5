package crypto

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// kubeconfigFixture returns parameters for a working kubeconfig against
// server, whose client certificates must chain to ca.
func kubeconfigFixture(t *testing.T, ca *testCA, server string, serverCA []byte) KubeconfigParams {
	t.Helper()
	key := newEd25519(t)
	return KubeconfigParams{
		ProviderClusterID: "cl-provider",
		IdentityName:      "controlplane-cl-provider",
		Namespace:         "liqo-tenant-cl-consumer",
		APIServer:         server,
		CA:                serverCA,
		Certificate:       ca.issue(t, key.Public(), consumerID, time.Now().Add(-time.Minute), time.Now().Add(time.Hour), x509.ExtKeyUsageClientAuth),
		Key:               key,
	}
}

func TestBuildKubeconfigLayout(t *testing.T) {
	ca := newTestCA(t, "provider-ca")
	p := kubeconfigFixture(t, ca, "https://172.19.0.3:6443", ca.pem)
	p.ProxyURL = "http://proxy.example:8118"
	data, err := BuildKubeconfig(p)
	requireNoError(t, err)
	config, err := clientcmd.Load(data)
	requireNoError(t, err)
	keyPEM, err := MarshalPrivateKeyPEM(p.Key)
	requireNoError(t, err)

	if config.CurrentContext != "default-context" || len(config.Contexts) != 1 || len(config.Clusters) != 1 || len(config.AuthInfos) != 1 {
		t.Fatalf("unexpected layout: %+v", config)
	}
	ctx := config.Contexts["default-context"]
	if ctx == nil || ctx.Cluster != "cl-provider" || ctx.AuthInfo != "controlplane-cl-provider" || ctx.Namespace != "liqo-tenant-cl-consumer" {
		t.Fatalf("context is %+v", ctx)
	}
	cluster := config.Clusters["cl-provider"]
	if cluster == nil || cluster.Server != p.APIServer || string(cluster.CertificateAuthorityData) != string(ca.pem) || cluster.ProxyURL != p.ProxyURL {
		t.Fatalf("cluster is %+v", cluster)
	}
	user := config.AuthInfos["controlplane-cl-provider"]
	if user == nil || string(user.ClientCertificateData) != string(p.Certificate) || string(user.ClientKeyData) != string(keyPEM) {
		t.Fatalf("user is %+v", user)
	}
}

// An Identity with an empty CA (Liqo: the API server has a publicly trusted
// certificate) gives a kubeconfig that names no CA, so client-go verifies the
// server against the system roots.
func TestBuildKubeconfigWithoutCA(t *testing.T) {
	p := kubeconfigFixture(t, newTestCA(t, "provider-ca"), "https://api.example.com:6443", nil)
	data, err := BuildKubeconfig(p)
	requireNoError(t, err)
	if strings.Contains(string(data), "certificate-authority") || strings.Contains(string(data), "insecure-skip-tls-verify") {
		t.Fatalf("kubeconfig names a CA or skips verification:\n%s", data)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
	requireNoError(t, err)
	if len(cfg.CAData) != 0 || cfg.CAFile != "" || cfg.Insecure {
		t.Fatalf("rest config trusts %q %q insecure=%v, want the system roots", cfg.CAData, cfg.CAFile, cfg.Insecure)
	}
}

// TestBuildKubeconfigConnects uses the kubeconfig through client-go against
// a TLS server that requires a client certificate from the provider's CA.
func TestBuildKubeconfigConnects(t *testing.T) {
	ca := newTestCA(t, "provider-ca")
	var seen string
	server := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = r.TLS.PeerCertificates[0].Subject.CommonName
	}))
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	server.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}
	server.StartTLS()
	defer server.Close()
	serverCA := pemOf(pemCertificate, server.Certificate().Raw)

	data, err := BuildKubeconfig(kubeconfigFixture(t, ca, server.URL, serverCA))
	requireNoError(t, err)
	config, err := clientcmd.RESTConfigFromKubeConfig(data)
	requireNoError(t, err)
	client, err := rest.HTTPClientFor(config)
	requireNoError(t, err)
	resp, err := client.Get(server.URL)
	requireNoError(t, err)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || seen != consumerID {
		t.Fatalf("status %d, server saw client %q", resp.StatusCode, seen)
	}
}

func TestBuildKubeconfigRejects(t *testing.T) {
	ca := newTestCA(t, "provider-ca")
	for name, tc := range map[string]struct {
		mutate func(*KubeconfigParams)
		want   string
	}{
		"invalid provider ID": {func(p *KubeconfigParams) { p.ProviderClusterID = "Cl_Provider" }, "cluster ID"},
		"no identity name":    {func(p *KubeconfigParams) { p.IdentityName = "" }, "identity name"},
		"no API server":       {func(p *KubeconfigParams) { p.APIServer = "" }, "no server found"},
		"bad proxy URL":       {func(p *KubeconfigParams) { p.ProxyURL = "ftp://x" }, "proxy-url"},
		"no key":              {func(p *KubeconfigParams) { p.Key = nil }, "private key"},
	} {
		t.Run(name, func(t *testing.T) {
			p := kubeconfigFixture(t, ca, "https://provider:6443", ca.pem)
			tc.mutate(&p)
			_, err := BuildKubeconfig(p)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v does not mention %q", err, tc.want)
			}
		})
	}
}
