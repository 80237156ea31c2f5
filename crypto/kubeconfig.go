package crypto

import (
	"crypto"
	"fmt"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// KubeconfigContext is the name of the only context in a consumer
// kubeconfig, as Liqo names it.
const KubeconfigContext = "default-context"

// KubeconfigParams describe the consumer's access to a provider, mostly as
// found in the provider's Identity.
type KubeconfigParams struct {
	ProviderClusterID string        // names the cluster entry (Identity.spec.clusterID)
	IdentityName      string        // names the user entry (Identity metadata.name)
	Namespace         string        // the context's namespace: the provider-side tenant namespace (Identity.spec.namespace)
	APIServer         string        // Identity.spec.authParams.apiServer
	ProxyURL          string        // Identity.spec.authParams.proxyURL, optional
	CA                []byte        // PEM CA bundle, Identity.spec.authParams.ca
	Certificate       []byte        // PEM client certificate, Identity.spec.authParams.signedCRT
	Key               crypto.Signer // the consumer's cluster private key, the certificate's key
}

// BuildKubeconfig returns the consumer's kubeconfig for a provider, laid
// out as Liqo writes it: one cluster named after the provider, one user
// named after the Identity with the client certificate and the cluster
// private key, and the context KubeconfigContext, current, with the tenant
// namespace. It is built and validated with client-go's clientcmd. It does
// not check the certificate; use VerifyClientCertificate first.
func BuildKubeconfig(p KubeconfigParams) ([]byte, error) {
	if err := ValidateClusterID(p.ProviderClusterID); err != nil {
		return nil, err
	}
	if p.IdentityName == "" {
		return nil, fmt.Errorf("kubeconfig needs an identity name")
	}
	keyPEM, err := MarshalPrivateKeyPEM(p.Key)
	if err != nil {
		return nil, err
	}
	config := clientcmdapi.NewConfig()
	config.Clusters[p.ProviderClusterID] = &clientcmdapi.Cluster{
		Server:                   p.APIServer,
		CertificateAuthorityData: p.CA,
		ProxyURL:                 p.ProxyURL,
	}
	config.AuthInfos[p.IdentityName] = &clientcmdapi.AuthInfo{
		ClientCertificateData: p.Certificate,
		ClientKeyData:         keyPEM,
	}
	config.Contexts[KubeconfigContext] = &clientcmdapi.Context{
		Cluster:   p.ProviderClusterID,
		AuthInfo:  p.IdentityName,
		Namespace: p.Namespace,
	}
	config.CurrentContext = KubeconfigContext
	if err := clientcmd.Validate(*config); err != nil {
		return nil, fmt.Errorf("invalid kubeconfig: %w", err)
	}
	return clientcmd.Write(*config)
}
