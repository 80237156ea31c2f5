package protocol

import (
	gocrypto "crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	"github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1/documents"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/vocabulary"
)

const (
	provider = "provider-a"
	consumer = "consumer-1"
)

func newKey(t *testing.T) gocrypto.Signer {
	t.Helper()
	k, err := crypto.GenerateKey(crypto.Ed25519)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func pubPEM(t *testing.T, k gocrypto.Signer) []byte {
	t.Helper()
	p, err := crypto.MarshalPublicKeyPEM(k.Public())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// csrWith builds a CSR with an arbitrary subject, as an attacker would.
func csrWith(t *testing.T, k gocrypto.Signer, cn string, orgs ...string) []byte {
	t.Helper()
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: cn, Organization: orgs},
	}, k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

// signedTenant is a Tenant built as a consumer does: key, signature of nonce, CSR.
func signedTenant(t *testing.T, k gocrypto.Signer, id, nonce string) *authv1beta1.Tenant {
	t.Helper()
	sig, err := crypto.SignNonce(k, nonce)
	if err != nil {
		t.Fatal(err)
	}
	csr, err := crypto.BuildCSR(k, id)
	if err != nil {
		t.Fatal(err)
	}
	return &authv1beta1.Tenant{
		TypeMeta:   metav1.TypeMeta{APIVersion: authv1beta1.GroupVersion.String(), Kind: authv1beta1.TenantKind},
		ObjectMeta: metav1.ObjectMeta{Name: id},
		Spec: authv1beta1.TenantSpec{
			ClusterID: authv1beta1.ClusterID(id), PublicKey: pubPEM(t, k), CSR: csr, Signature: sig,
		},
	}
}

func marshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func at(kind vocabulary.FileKind) Path {
	return Path{Provider: provider, Consumer: consumer, Kind: kind}
}

func TestParsePath(t *testing.T) {
	for _, tc := range []struct {
		rel     string
		ok      bool
		want    Path
		wantErr string
	}{
		{rel: "provider-a/consumer-1/tenant.yaml", ok: true, want: at(vocabulary.TenantFile)},
		{rel: "provider-a/consumer-1/request.yaml", ok: true, want: at(vocabulary.RequestFile)},
		{rel: "provider-a/consumer-1/nonce.yaml", ok: true, want: at(vocabulary.NonceFile)},
		{rel: "provider-a/consumer-1/identity.yaml", ok: true, want: at(vocabulary.IdentityFile)},
		{rel: "README.md"},
		{rel: "provider-a/consumer-1/README.md"},
		{rel: "provider-a/consumer-1/Tenant.yaml"},
		{rel: "provider-a/tenant.yaml"},
		{rel: "x/provider-a/consumer-1/tenant.yaml"},
		{rel: "Provider_A/consumer-1/tenant.yaml", ok: true, wantErr: `Provider_A/consumer-1/tenant.yaml: cluster ID "Provider_A" is not an RFC 1123 label`},
		{rel: "provider-a/../tenant.yaml", ok: true, wantErr: `cluster ID ".." is not an RFC 1123 label`},
		{rel: "provider-a/-consumer/tenant.yaml", ok: true, wantErr: `cluster ID "-consumer" is not an RFC 1123 label`},
		{rel: "provider-a/" + strings.Repeat("a", 64) + "/tenant.yaml", ok: true, wantErr: "is longer than 63 characters"},
		{rel: "provider-a//tenant.yaml", ok: true, wantErr: "provider-a//tenant.yaml: cluster ID is empty"},
		{rel: "provider-a/provider-a/tenant.yaml", ok: true, wantErr: "cannot peer with itself"},
	} {
		t.Run(tc.rel, func(t *testing.T) {
			p, ok, err := ParsePath(tc.rel)
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v", ok, tc.ok)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			if ok && p != tc.want {
				t.Fatalf("path = %+v, want %+v", p, tc.want)
			}
			if ok && p.String() != tc.rel {
				t.Fatalf("String() = %q, want %q", p.String(), tc.rel)
			}
		})
	}
}

func TestDecode(t *testing.T) {
	key := newKey(t)
	nonce := crypto.GenerateNonce()
	tenant := marshal(t, signedTenant(t, key, consumer, nonce))
	request := marshal(t, &documents.PeeringRequest{
		TypeMeta: metav1.TypeMeta{APIVersion: documents.APIVersion, Kind: documents.PeeringRequestKind},
		Spec:     documents.PeeringRequestSpec{ProviderClusterID: provider, ConsumerClusterID: consumer, PublicKey: pubPEM(t, key)},
	})
	nonceDoc := marshal(t, &documents.Nonce{
		TypeMeta: metav1.TypeMeta{APIVersion: documents.APIVersion, Kind: documents.NonceKind},
		Spec:     documents.NonceSpec{ProviderClusterID: provider, ConsumerClusterID: consumer, Nonce: nonce},
	})
	ns := authv1beta1.TenantNamespaceName(consumer)
	identity := func(mut func(*authv1beta1.Identity)) []byte {
		id := &authv1beta1.Identity{
			TypeMeta:   metav1.TypeMeta{APIVersion: authv1beta1.GroupVersion.String(), Kind: authv1beta1.IdentityKind},
			ObjectMeta: metav1.ObjectMeta{Name: authv1beta1.ControlPlaneIdentityName(provider)},
			Spec: authv1beta1.IdentitySpec{
				ClusterID: provider, Type: authv1beta1.ControlPlaneIdentityType, Namespace: &ns,
				AuthParams: authv1beta1.AuthParams{APIServer: "https://provider:6443", CA: []byte("ca"), SignedCRT: []byte("crt")},
			},
		}
		if mut != nil {
			mut(id)
		}
		return marshal(t, id)
	}
	tenantWith := func(mut func(*authv1beta1.Tenant)) []byte {
		tt := signedTenant(t, key, consumer, nonce)
		mut(tt)
		return marshal(t, tt)
	}
	// A billion-laughs document: nine levels of nine aliases.
	bomb := "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n"
	prev := "a"
	for _, l := range []string{"b", "c", "d", "e", "f", "g", "h", "i"} {
		bomb += l + ": &" + l + " [" + strings.TrimSuffix(strings.Repeat("*"+prev+",", 9), ",") + "]\n"
		prev = l
	}

	for _, tc := range []struct {
		name    string
		kind    vocabulary.FileKind
		data    []byte
		path    *Path
		wantErr string
	}{
		{name: "valid request", kind: vocabulary.RequestFile, data: request},
		{name: "valid nonce", kind: vocabulary.NonceFile, data: nonceDoc},
		{name: "valid signed tenant", kind: vocabulary.TenantFile, data: tenant},
		{name: "valid identity", kind: vocabulary.IdentityFile, data: identity(nil)},
		{name: "empty file", kind: vocabulary.TenantFile, data: nil, wantErr: "file is empty"},
		{name: "malformed YAML", kind: vocabulary.TenantFile, data: []byte("apiVersion: [unclosed\nkind: Tenant\n"), wantErr: "malformed YAML"},
		{name: "tabs YAML", kind: vocabulary.RequestFile, data: []byte("spec:\n\t- x"), wantErr: "malformed YAML"},
		{name: "alias bomb", kind: vocabulary.TenantFile, data: []byte(bomb), wantErr: "anchors and aliases are not allowed"},
		{name: "anchor in a valid tenant", kind: vocabulary.TenantFile, data: []byte(strings.Replace(string(tenant), "spec:", "spec: &s", 1)), wantErr: "anchors and aliases are not allowed"},
		{name: "merge key", kind: vocabulary.NonceFile, data: append([]byte("x: &x {kind: Nonce}\n<<: *x\n"), nonceDoc...), wantErr: "merge keys (<<) are not allowed"},
		{name: "inline merge key", kind: vocabulary.TenantFile, data: []byte(strings.Replace(string(tenant), "spec:", "spec:\n  <<: {tenantCondition: Active}", 1)), wantErr: "merge keys (<<) are not allowed"},
		{name: "tagged merge key", kind: vocabulary.TenantFile, data: []byte(strings.Replace(string(tenant), "spec:", "spec:\n  !!merge x: {tenantCondition: Active}", 1)), wantErr: "merge keys (<<) are not allowed"},
		{name: "case-variant key beside the field", kind: vocabulary.TenantFile, data: []byte(strings.Replace(string(tenantWith(func(tt *authv1beta1.Tenant) { tt.Spec.TenantCondition = "Drained" })), "spec:", "spec:\n  tenantcondition: Active", 1)),
			wantErr: `keys "tenantcondition" and "tenantCondition" differ only in case`},
		{name: "case-variant key alone", kind: vocabulary.TenantFile, data: []byte(strings.Replace(string(tenant), "spec:", "spec:\n  tenantcondition: Active", 1)), wantErr: `unknown field "spec.tenantcondition"`},
		{name: "case-variant top-level field", kind: vocabulary.NonceFile, data: []byte(strings.Replace(string(nonceDoc), "kind:", "Kind:", 1)), wantErr: `unknown field "Kind"`},
		{name: "Kelvin sign folds to k", kind: vocabulary.NonceFile, data: append(append([]byte{}, nonceDoc...), "\u212aind: Nonce\n"...), wantErr: "differ only in case"},
		{name: "case-variant label keys", kind: vocabulary.TenantFile, data: []byte(strings.Replace(string(tenant), "metadata:", "metadata:\n  labels: {a: x, A: y}", 1)), wantErr: `keys "a" and "A" differ only in case`},
		{name: "integer key", kind: vocabulary.TenantFile, data: []byte(strings.Replace(string(tenant), "spec:", "spec:\n  1: x", 1)), wantErr: "mapping keys must be strings"},
		{name: "multi-document", kind: vocabulary.TenantFile, data: append(append(append([]byte{}, tenant...), "---\n"...), tenant...), wantErr: "more than one YAML document"},
		{name: "second empty document", kind: vocabulary.NonceFile, data: append(append([]byte{}, nonceDoc...), "---\n# nothing\n---\nkind: x\n"...), wantErr: "more than one YAML document"},
		{name: "over 64 KiB", kind: vocabulary.TenantFile, data: append(append([]byte{}, tenant...), []byte("#"+strings.Repeat("x", MaxFileSize)+"\n")...), wantErr: "the limit is 65536"},
		{name: "unknown field", kind: vocabulary.TenantFile, data: append(append([]byte{}, tenant...), "extra: 1\n"...), wantErr: `unknown field "extra"`},
		{name: "unknown spec field", kind: vocabulary.TenantFile, data: []byte(strings.Replace(string(tenant), "spec:", "spec:\n  groups: [system:masters]", 1)), wantErr: `unknown field "spec.groups"`},
		{name: "duplicate field", kind: vocabulary.NonceFile, data: append(append([]byte{}, nonceDoc...), "kind: Nonce\n"...), wantErr: `duplicate key "kind"`},
		{name: "identity document as tenant.yaml", kind: vocabulary.TenantFile, data: identity(nil), wantErr: `unknown field "spec.authParams"`},
		{name: "tenant wrong kind", kind: vocabulary.TenantFile, data: []byte(strings.Replace(string(tenant), "kind: Tenant", "kind: Identity", 1)), wantErr: "found authentication.liqo.io/v1beta1 Identity, want authentication.liqo.io/v1beta1 Tenant"},
		{name: "tenant wrong apiVersion", kind: vocabulary.TenantFile, data: []byte(strings.Replace(string(tenant), "authentication.liqo.io/v1beta1", "authentication.liqo.io/v1", 1)), wantErr: "found authentication.liqo.io/v1 Tenant"},
		{name: "request wrong kind", kind: vocabulary.RequestFile, data: []byte(strings.Replace(string(request), "kind: "+documents.PeeringRequestKind, "kind: Nonce", 1)), wantErr: "want " + documents.APIVersion + " " + documents.PeeringRequestKind},
		{name: "nonce wrong apiVersion", kind: vocabulary.NonceFile, data: []byte(strings.Replace(string(nonceDoc), documents.APIVersion, "gitpeer.io/v9", 1)), wantErr: "found gitpeer.io/v9 Nonce"},
		{name: "request consumer ID differs from path", kind: vocabulary.RequestFile, data: request, path: &Path{Provider: provider, Consumer: "consumer-2", Kind: vocabulary.RequestFile},
			wantErr: `IDs in the file (provider "provider-a", consumer "consumer-1") are not the IDs in its path (provider "provider-a", consumer "consumer-2")`},
		{name: "nonce provider ID differs from path", kind: vocabulary.NonceFile, data: nonceDoc, path: &Path{Provider: "provider-b", Consumer: consumer, Kind: vocabulary.NonceFile},
			wantErr: `are not the IDs in its path (provider "provider-b"`},
		{name: "request with a bad key", kind: vocabulary.RequestFile, data: []byte(strings.Replace(string(request), "publicKey: ", "publicKey: AAAA", 1)), wantErr: "spec.publicKey"},
		{name: "nonce too short", kind: vocabulary.NonceFile, data: []byte(strings.Replace(string(nonceDoc), nonce, "c2hvcnQ=", 1)), wantErr: "spec.nonce"},
		{name: "tenant under another consumer's directory", kind: vocabulary.TenantFile, data: tenant, path: &Path{Provider: provider, Consumer: "consumer-2", Kind: vocabulary.TenantFile},
			wantErr: `Tenant "consumer-1" for cluster "consumer-1" sits in the directory of consumer "consumer-2"`},
		{name: "tenant renamed but for another cluster", kind: vocabulary.TenantFile, data: tenantWith(func(tt *authv1beta1.Tenant) { tt.Spec.ClusterID = "consumer-2" }),
			wantErr: `Tenant "consumer-1" for cluster "consumer-2" sits in the directory of consumer "consumer-1"`},
		{name: "tenant unknown condition", kind: vocabulary.TenantFile, data: tenantWith(func(tt *authv1beta1.Tenant) { tt.Spec.TenantCondition = "Admin" }), wantErr: `unknown spec.tenantCondition "Admin"`},
		{name: "tenant without signature", kind: vocabulary.TenantFile, data: tenantWith(func(tt *authv1beta1.Tenant) { tt.Spec.Signature = nil }), wantErr: "needs spec.publicKey, spec.csr and spec.signature"},
		{name: "identity under another provider", kind: vocabulary.IdentityFile, data: identity(nil), path: &Path{Provider: "provider-b", Consumer: consumer, Kind: vocabulary.IdentityFile}, wantErr: `sits in the directory of provider "provider-b"`},
		{name: "identity wrong type", kind: vocabulary.IdentityFile, data: identity(func(id *authv1beta1.Identity) { id.Spec.Type = "ResourceSlice" }), wantErr: `Identity type "ResourceSlice"`},
		{name: "identity with awsConfig and proxyURL (liqoctl generate identity of an EKS provider): carried", kind: vocabulary.IdentityFile, data: identity(func(id *authv1beta1.Identity) {
			id.Spec.AuthParams.AwsConfig = &authv1beta1.AwsConfig{AwsUserArn: "arn:aws:iam::1:user/liqo", AwsRegion: "eu-west-1", AwsClusterName: "p"}
			id.Spec.AuthParams.ProxyURL = ptr.To("http://proxy:3128")
		})},
		{name: "identity with an unknown authParams field", kind: vocabulary.IdentityFile, data: []byte(strings.Replace(string(identity(nil)), "authParams:", "authParams:\n    token: x", 1)), wantErr: `unknown field "spec.authParams.token"`},
		{name: "identity without certificate", kind: vocabulary.IdentityFile, data: identity(func(id *authv1beta1.Identity) { id.Spec.AuthParams.SignedCRT = nil }), wantErr: "needs spec.authParams.apiServer and signedCRT"},
		{name: "identity without API server", kind: vocabulary.IdentityFile, data: identity(func(id *authv1beta1.Identity) { id.Spec.AuthParams.APIServer = "" }), wantErr: "needs spec.authParams.apiServer and signedCRT"},
		{name: "identity without CA (publicly trusted API server)", kind: vocabulary.IdentityFile, data: identity(func(id *authv1beta1.Identity) { id.Spec.AuthParams.CA = nil })},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := at(tc.kind)
			if tc.path != nil {
				p = *tc.path
			}
			pe := &Documents{Provider: p.Provider, Consumer: p.Consumer}
			err := pe.Decode(p, tc.data)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if pe.Request == nil && pe.Nonce == nil && pe.Tenant == nil && pe.Identity == nil {
					t.Fatal("nothing stored")
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want one containing %q", tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantErr) || !strings.HasPrefix(err.Error(), p.String()+": ") {
				t.Fatalf("error %q does not start with the path %q and contain %q", err, p, tc.wantErr)
			}
			if pe.Request != nil || pe.Nonce != nil || pe.Tenant != nil || pe.Identity != nil {
				t.Fatal("an invalid document was stored")
			}
			// A present but invalid file must not read as an absent one.
			if got := pe.Invalid[p.Kind]; got == nil || got.Error() != err.Error() {
				t.Fatalf("Invalid[%s] = %v, want %v", p.Kind, got, err)
			}
		})
	}
}

func TestDecodeAliasBombIsFast(t *testing.T) {
	// 10 levels of 10 aliases would expand to 10^10 nodes.
	doc := "a0: &a0 [x,x,x,x,x,x,x,x,x,x]\n"
	for i := 1; i < 10; i++ {
		doc += "a" + string(rune('0'+i)) + ": &a" + string(rune('0'+i)) + " [" + strings.TrimSuffix(strings.Repeat("*a"+string(rune('0'+i-1))+",", 10), ",") + "]\n"
	}
	start := time.Now()
	err := (&Documents{}).Decode(at(vocabulary.TenantFile), []byte(doc))
	if err == nil || !strings.Contains(err.Error(), "anchors and aliases") {
		t.Fatalf("err = %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("decoding an alias bomb took %s", d)
	}
}

func TestCheckTenant(t *testing.T) {
	key, other := newKey(t), newKey(t)
	nonce, oldNonce := crypto.GenerateNonce(), crypto.GenerateNonce()
	good := signedTenant(t, key, consumer, nonce)
	with := func(mut func(*authv1beta1.Tenant)) *authv1beta1.Tenant {
		tt := good.DeepCopy()
		mut(tt)
		return tt
	}
	sigBy := func(k gocrypto.Signer, n string) []byte {
		s, err := crypto.SignNonce(k, n)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, tc := range []struct {
		name    string
		tenant  *authv1beta1.Tenant
		wantErr string
	}{
		{name: "valid", tenant: good},
		{name: "signed by another key", tenant: with(func(tt *authv1beta1.Tenant) { tt.Spec.Signature = sigBy(other, nonce) }), wantErr: "tenant signature:"},
		{name: "replayed signature over an old nonce", tenant: signedTenant(t, key, consumer, oldNonce), wantErr: "tenant signature:"},
		{name: "signature over nothing", tenant: with(func(tt *authv1beta1.Tenant) { tt.Spec.Signature = []byte("x") }), wantErr: "not a valid"},
		{name: "bad public key", tenant: with(func(tt *authv1beta1.Tenant) { tt.Spec.PublicKey = []byte("not a key") }), wantErr: "tenant public key:"},
		{name: "CSR with O=system:masters", tenant: with(func(tt *authv1beta1.Tenant) { tt.Spec.CSR = csrWith(t, key, consumer, "system:masters") }),
			wantErr: "CSR organization [system:masters] is not [liqo.io]"},
		{name: "CSR with an extra organization", tenant: with(func(tt *authv1beta1.Tenant) { tt.Spec.CSR = csrWith(t, key, consumer, "liqo.io", "system:masters") }),
			wantErr: "CSR organization [liqo.io system:masters] is not [liqo.io]"},
		{name: "CSR without organization", tenant: with(func(tt *authv1beta1.Tenant) { tt.Spec.CSR = csrWith(t, key, consumer) }), wantErr: "CSR organization [] is not [liqo.io]"},
		{name: "CSR CN is not the consumer", tenant: with(func(tt *authv1beta1.Tenant) { tt.Spec.CSR = csrWith(t, key, "consumer-2", "liqo.io") }),
			wantErr: `CSR common name "consumer-2" is not the cluster ID "consumer-1"`},
		{name: "CSR CN is system:admin", tenant: with(func(tt *authv1beta1.Tenant) { tt.Spec.CSR = csrWith(t, key, "system:admin", "liqo.io") }),
			wantErr: `CSR common name "system:admin"`},
		{name: "CSR key is not the Tenant key", tenant: with(func(tt *authv1beta1.Tenant) { tt.Spec.CSR = csrWith(t, other, consumer, "liqo.io") }),
			wantErr: "key is not the Tenant's"},
		{name: "whole Tenant of another key, pretending", tenant: with(func(tt *authv1beta1.Tenant) {
			tt.Spec.Signature = sigBy(other, nonce)
			tt.Spec.CSR = csrWith(t, other, consumer, "liqo.io")
		}), wantErr: "tenant signature:"},
		{name: "authzPolicy TolerateNoHandshake", tenant: with(func(tt *authv1beta1.Tenant) { p := authv1beta1.TolerateNoHandshake; tt.Spec.AuthzPolicy = &p }),
			wantErr: `spec.authzPolicy is "TolerateNoHandshake"`},
		{name: "authzPolicy unset: the CRD defaults it to KeysExchange", tenant: with(func(tt *authv1beta1.Tenant) { tt.Spec.AuthzPolicy = nil })},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CheckTenant(tc.tenant, nonce, consumer)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if !key.Public().(interface{ Equal(gocrypto.PublicKey) bool }).Equal(got) {
					t.Fatal("returned key is not the Tenant's key")
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
	// The same valid Tenant checked for another consumer fails on the CN.
	if _, err := CheckTenant(good, nonce, "consumer-2"); err == nil || !strings.Contains(err.Error(), "common name") {
		t.Fatalf("tenant verified for another consumer: %v", err)
	}
}

// TestTenantOfEveryLiqoKeyType: in Liqo mode a consumer signs with Liqo's
// cluster key, Ed25519 by default, RSA in Liqo's compatibility mode, or
// whatever key an admin put in authentication-keys (ECDSA): the Tenant
// NewTenant builds with any of them survives tenant.yaml's strict decoding and
// passes the provider's CheckTenant, returning that key; a signature by
// another key of the same type does not.
func TestTenantOfEveryLiqoKeyType(t *testing.T) {
	nonce := crypto.GenerateNonce()
	for name, gen := range map[string]func() (gocrypto.Signer, error){
		"Ed25519":     func() (gocrypto.Signer, error) { return crypto.GenerateKey(crypto.Ed25519) },
		"RSA-2048":    func() (gocrypto.Signer, error) { return crypto.GenerateKey(crypto.RSA2048) },
		"RSA-3072":    func() (gocrypto.Signer, error) { return rsa.GenerateKey(rand.Reader, 3072) },
		"ECDSA P-256": func() (gocrypto.Signer, error) { return ecdsa.GenerateKey(elliptic.P256(), rand.Reader) },
		"ECDSA P-384": func() (gocrypto.Signer, error) { return ecdsa.GenerateKey(elliptic.P384(), rand.Reader) },
	} {
		t.Run(name, func(t *testing.T) {
			key, err := gen()
			if err != nil {
				t.Fatal(err)
			}
			other, err := gen()
			if err != nil {
				t.Fatal(err)
			}
			tenant, err := NewTenant(consumer, key, nonce)
			if err != nil {
				t.Fatalf("NewTenant: %v", err)
			}
			var pe Documents
			if err := pe.Decode(at(vocabulary.TenantFile), marshal(t, tenant)); err != nil {
				t.Fatalf("decoding tenant.yaml: %v", err)
			}
			got, err := CheckTenant(pe.Tenant, nonce, consumer)
			if err != nil {
				t.Fatalf("CheckTenant: %v", err)
			}
			if !key.Public().(interface{ Equal(gocrypto.PublicKey) bool }).Equal(got) {
				t.Fatal("CheckTenant returned another key")
			}
			forged := pe.Tenant.DeepCopy()
			if forged.Spec.Signature, err = crypto.SignNonce(other, nonce); err != nil {
				t.Fatal(err)
			}
			if _, err := CheckTenant(forged, nonce, consumer); err == nil || !strings.Contains(err.Error(), "tenant signature:") {
				t.Fatalf("signature by another %s key: err = %v", name, err)
			}
		})
	}
}
