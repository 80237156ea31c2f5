package provider

import (
	gocrypto "crypto"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// In Liqo mode the provider moves files and gates approval, and Liqo's tenant
// controller does the crypto: gitpeer verifies the merged Tenant (CheckTenant:
// the same rules as standalone, authzPolicy and proxyURL included) before it applies it, and publishes the certificate
// Liqo put in the Tenant's status (CheckLiqoCertificate, IdentityAction).

// CheckLiqoCertificate checks the certificate Liqo's tenant controller put in
// a Tenant's status before gitpeer records or publishes it: one PEM
// certificate for key (the verified Tenant's key), valid at now, for client
// authentication, naming exactly the consumer (CN) in liqo.io (O). It does not
// check a chain: Liqo's authParams.ca is the API server's serving CA, never
// promised to be the signer of client certificates.
func CheckLiqoCertificate(certPEM []byte, key gocrypto.PublicKey, consumer string, now time.Time) (*x509.Certificate, error) {
	cert, err := crypto.CheckClientCertificate(certPEM, key, now)
	if err != nil {
		return nil, fmt.Errorf("certificate in the Tenant's status: %w", err)
	}
	if err := protocol.CheckSubject(cert, consumer); err != nil {
		return nil, err
	}
	return cert, nil
}

// IdentityAction says what the provider commits for the authParams Liqo put
// in a Tenant's status, given identity.yaml on the branch (nil if none): the
// first identity.yaml (vocabulary.ActionIssueIdentity), a new one for a
// changed status, as after Liqo's renewal (vocabulary.ActionRenewIdentity), or
// nothing ("") when the branch carries the status already: each change of the
// status is committed once.
func IdentityAction(status *authv1beta1.AuthParams, published *authv1beta1.Identity) string {
	switch {
	case status == nil:
		return ""
	case published == nil:
		return vocabulary.ActionIssueIdentity
	case equality.Semantic.DeepEqual(*status, published.Spec.AuthParams):
		return ""
	}
	return vocabulary.ActionRenewIdentity
}

// APIServerDiffers reports whether advertised, the API server Liqo put in a
// Tenant's status, is not published, the one the provider publishes in its
// terms. Liqo prefixes https:// to an address without a scheme
// (liqotech/liqo v1.2.0 pkg/utils/apiserver/address.go, GetURL), so both are
// compared so, without a trailing slash.
func APIServerDiffers(advertised, published string) bool {
	norm := func(s string) string {
		s = strings.TrimSuffix(s, "/")
		if !strings.Contains(s, "://") {
			s = "https://" + s
		}
		return s
	}
	return norm(advertised) != norm(published)
}

// What Liqo issues and binds for a consumer beyond the Tenant, which a
// revocation takes back (liqotech/liqo v1.2.0). Liqo's remote ResourceSlice
// controller signs one more certificate per ResourceSlice (CN
// <slice>-<hash>, O <consumer>: Group <consumer>), puts it in the slice's
// status and caches it; NamespaceMaps make Liqo bind Group <consumer> in the
// offloaded namespaces. Liqo's Drained deletes both kinds.
const (
	// LiqoCertificateCache is the Secret in a tenant namespace where Liqo's
	// identity manager caches the control-plane certificate it issued with
	// the CSR it was issued for; LiqoCertificateCache-<slice> caches a
	// ResourceSlice's (pkg/identityManager/certificateIdentityProvider.go,
	// remoteCertificateSecretName).
	LiqoCertificateCache = "liqo-remote-certificate"
	// LiqoCacheCertificateKey is the key of the certificate in a cache
	// (pkg/identityManager/const.go).
	LiqoCacheCertificateKey = "certificate"
)

// LiqoDrainedKinds are the kinds Liqo's Drained deletes for a consumer
// (pkg/liqo-controller-manager/authentication/tenant-controller,
// handleTenantDrained): its ResourceSlices, then its NamespaceMaps.
var LiqoDrainedKinds = []schema.GroupVersionKind{
	{Group: "authentication.liqo.io", Version: "v1beta1", Kind: "ResourceSlice"},
	{Group: "offloading.liqo.io", Version: "v1beta1", Kind: "NamespaceMap"},
}

// LiqoRenewKind is the Renew Liqo's CRD replicator creates on the provider
// for each control-plane Identity of the consumer (Liqo's local renewer keeps
// one per Identity). Liqo's Drained leaves it, as Liqo's own unpeering starts
// on the consumer, whose replicator deletes it. gitpeer revokes from the
// provider: the consumer, unbound, can no longer delete it, and its
// replicator holds the consumer's Renew and Liqo's kubeconfig Secret by their
// finalizers until it is gone (liqotech/liqo v1.2.0
// internal/crdReplicator/reflection/handler.go, deleteRemoteObject), so
// revocation deletes it once the consumer is unbound.
var LiqoRenewKind = schema.GroupVersionKind{Group: "authentication.liqo.io", Version: "v1beta1", Kind: "Renew"}

// LiqoDrainSelector selects what Liqo's CRD replicator created for consumer,
// as Drained selects it (pkg/utils/labels, RemoteLabelSelectorForCluster):
// liqo.io/replicated=true and liqo.io/originID=<consumer>.
func LiqoDrainSelector(consumer string) labels.Selector {
	return labels.SelectorFromSet(labels.Set{"liqo.io/replicated": "true", "liqo.io/originID": consumer})
}

// LiqoCertificateCaches names Liqo's certificate caches of a consumer whose
// ResourceSlices are slices: the control plane's and one per slice.
func LiqoCertificateCaches(slices []string) []string {
	out := []string{LiqoCertificateCache}
	for _, s := range slices {
		out = append(out, LiqoCertificateCache+"-"+s)
	}
	return out
}

// ResourceSlicesResource is the resource of Liqo's ResourceSlices, which the
// provider watches in Liqo mode to record each certificate Liqo issues for one.
const ResourceSlicesResource = "resourceslices"

// LiqoReplicatedSelector selects what Liqo's CRD replicator created for any
// consumer (LiqoDrainSelector without the consumer).
const LiqoReplicatedSelector = "liqo.io/replicated=true"

// SliceIssued returns the consumer of a ResourceSlice Liqo's CRD replicator
// created in its tenant namespace (LiqoDrainSelector) and the certificate in
// its status (SliceCertificate), unchecked (CheckLiqoIssued checks it);
// consumer "" when the slice is no consumer's or holds no certificate.
func SliceIssued(slice *unstructured.Unstructured) (consumer string, pem []byte) {
	consumer = slice.GetLabels()["liqo.io/originID"]
	if consumer == "" || !LiqoDrainSelector(consumer).Matches(labels.Set(slice.GetLabels())) ||
		slice.GetNamespace() != authv1beta1.TenantNamespaceName(authv1beta1.ClusterID(consumer)) {
		return "", nil
	}
	pem, err := SliceCertificate(slice)
	if err != nil || pem == nil {
		return "", nil
	}
	return consumer, pem
}

// SliceCertificate returns the PEM certificate Liqo put in the status of a
// ResourceSlice (status.authParams.signedCRT, base64 as []byte fields are in
// JSON), or nil if it holds none.
func SliceCertificate(slice *unstructured.Unstructured) ([]byte, error) {
	crt, found, err := unstructured.NestedString(slice.Object, "status", "authParams", "signedCRT")
	if err != nil || !found {
		return nil, err
	}
	pem, err := base64.StdEncoding.DecodeString(crt)
	if err != nil {
		return nil, fmt.Errorf("ResourceSlice %s/%s: status.authParams.signedCRT: %w", slice.GetNamespace(), slice.GetName(), err)
	}
	return pem, nil
}

// StrayTenants returns why Liqo's Tenant webhook would refuse the Tenant of
// consumer gitpeer is about to create in ns, given the Tenants in the
// cluster, or nil: another Tenant in ns (Liqo allows one Tenant per tenant
// namespace) or a Tenant named consumer elsewhere (Liqo requires Tenant
// names unique in the cluster) (liqotech/liqo v1.2.0
// pkg/webhooks/tenant/validate.go, handleCreate). Such a Tenant is not
// gitpeer's: an earlier `liqoctl peer`, or an admin's; the error says what
// to do.
func StrayTenants(consumer, ns string, tenants []authv1beta1.Tenant) error {
	var strays []string
	for _, t := range tenants {
		switch {
		case t.Namespace == ns && t.Name != consumer:
			strays = append(strays, fmt.Sprintf("Tenant %s/%s in the tenant namespace (Liqo allows one Tenant per tenant namespace)", t.Namespace, t.Name))
		case t.Namespace != ns && t.Name == consumer:
			strays = append(strays, fmt.Sprintf("Tenant %s/%s (Liqo requires Tenant names unique in the cluster)", t.Namespace, t.Name))
		}
	}
	if len(strays) == 0 {
		return nil
	}
	slices.Sort(strays)
	return fmt.Errorf("%s, not created by gitpeer (an earlier `liqoctl peer`, or an admin), keeps Liqo's Tenant webhook from admitting the Tenant of %s: "+
		"delete it (`liqoctl unpeer` on the consumer, or kubectl delete tenant) for gitpeer to apply tenant.yaml", strings.Join(strays, "; "), consumer)
}
