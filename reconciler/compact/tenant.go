package compact

import (
	"bytes"
	"encoding/pem"
	"slices"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
)

// Tenant is the compact form of an authv1beta1.Tenant, kept whole: the agent
// updates the Tenants it reads from the cache. At 10,000 peerings the Tenants
// were the largest kind of the cache (~2 KiB each, measured): most of it the
// PEM of the consumer's key, CSR and certificate, which Tenant keeps as DER
// (a third smaller, see pemBytes), and the struct and maps of their metadata.
// Its strings are shared with equal ones of other cached objects (a
// consumer's ID is also its Tenant's name, its namespace's label and its
// RoleBinding's subject; the API server address is the same on every Tenant).
// Its CA is the caller's to share (it is the same on a provider's Tenants).
type Tenant struct {
	objectMeta
	clusterID       string
	authzPolicy     *authv1beta1.AuthzPolicy
	publicKey, csr  pemBytes
	signature       []byte
	proxyURL        *string
	condition       string
	tenantNamespace string
	authParams      *authParams
}

// authParams is the compact form of a Tenant's status.authParams.
type authParams struct {
	ca        []byte
	signedCRT pemBytes
	apiServer string
	proxyURL  *string
	aws       *authv1beta1.AwsConfig
}

// NewTenant returns the compact form of t; it keeps t's byte slices it does
// not re-encode (the signature, the CA), which t must no longer change.
func NewTenant(t *authv1beta1.Tenant) *Tenant {
	s := &t.Spec
	out := &Tenant{
		objectMeta: newWholeMeta(t),
		clusterID:  Intern(string(s.ClusterID)), authzPolicy: s.AuthzPolicy,
		publicKey: newPEMBytes(s.PublicKey), csr: newPEMBytes(s.CSR), signature: s.Signature, proxyURL: s.ProxyURL,
		condition: Intern(string(s.TenantCondition)), tenantNamespace: Intern(t.Status.TenantNamespace),
	}
	if a := t.Status.AuthParams; a != nil {
		out.authParams = &authParams{ca: a.CA, signedCRT: newPEMBytes(a.SignedCRT), apiServer: Intern(a.APIServer), proxyURL: a.ProxyURL, aws: a.AwsConfig}
	}
	return out
}

// Full returns the authv1beta1.Tenant t is the compact form of (without its managed fields), a copy.
func (t *Tenant) Full() *authv1beta1.Tenant {
	out := &authv1beta1.Tenant{
		ObjectMeta: t.full(),
		Spec: authv1beta1.TenantSpec{
			ClusterID: authv1beta1.ClusterID(t.clusterID), AuthzPolicy: clonePtr(t.authzPolicy),
			PublicKey: t.publicKey.bytes(), CSR: t.csr.bytes(), Signature: slices.Clone(t.signature), ProxyURL: clonePtr(t.proxyURL),
			TenantCondition: authv1beta1.TenantCondition(t.condition),
		},
		Status: authv1beta1.TenantStatus{TenantNamespace: t.tenantNamespace},
	}
	if a := t.authParams; a != nil {
		out.Status.AuthParams = &authv1beta1.AuthParams{
			CA: slices.Clone(a.ca), SignedCRT: a.signedCRT.bytes(), APIServer: a.apiServer, ProxyURL: clonePtr(a.proxyURL),
			AwsConfig: clonePtr(a.aws),
		}
	}
	return out
}

// DeepCopyObject returns the full Tenant: what a read of the cache gets.
func (t *Tenant) DeepCopyObject() runtime.Object { return t.Full() }

// clonePtr returns a pointer to a copy of *p, nil if p is nil.
func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	return ptr.To(*p)
}

// pemBytes holds bytes that may be one PEM block: as the block's DER and
// type when encoding them again gives back exactly the same bytes (a single
// block without headers, as the agent, Liqo and liqoctl write them), else
// as they are (so is a block of no type: the type tells the two forms
// apart). DER is three quarters of the base64 it is encoded in, without the
// block's header and footer lines.
type pemBytes struct {
	b   []byte // the DER if typ is set, else the bytes
	typ string // the block's type
}

// newPEMBytes returns b as pemBytes; it keeps b itself when b is not one PEM block.
func newPEMBytes(b []byte) pemBytes {
	block, rest := pem.Decode(b)
	if block == nil || block.Type == "" || len(rest) != 0 || len(block.Headers) != 0 || !bytes.Equal(pem.EncodeToMemory(block), b) {
		return pemBytes{b: b}
	}
	return pemBytes{b: block.Bytes, typ: Intern(block.Type)}
}

// bytes returns the bytes p holds, a copy.
func (p pemBytes) bytes() []byte {
	if p.typ == "" {
		return slices.Clone(p.b)
	}
	return pem.EncodeToMemory(&pem.Block{Type: p.typ, Bytes: p.b})
}
