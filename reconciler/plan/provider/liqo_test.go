package provider

import (
	gocrypto "crypto"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// liqoCert is a client certificate as Liqo's tenant controller gets it
// from the cluster's signer, self-signed here (no chain is checked).
func liqoCert(t *testing.T, key gocrypto.Signer, mutate func(*x509.Certificate)) []byte {
	t.Helper()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "consumer-1", Organization: []string{"liqo.io"}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if mutate != nil {
		mutate(tmpl)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func TestCheckLiqoCertificate(t *testing.T) {
	key, _ := crypto.GenerateKey(crypto.Ed25519)
	other, _ := crypto.GenerateKey(crypto.Ed25519)
	for name, tc := range map[string]struct {
		cert     []byte
		rejected string // substring; "" accepts
	}{
		"as Liqo issues it": {liqoCert(t, key, nil), ""},
		"another key":       {liqoCert(t, other, nil), "key"},
		"another consumer":  {liqoCert(t, key, func(c *x509.Certificate) { c.Subject.CommonName = "consumer-2" }), `"consumer-2"`},
		"system:masters":    {liqoCert(t, key, func(c *x509.Certificate) { c.Subject.Organization = []string{"liqo.io", "system:masters"} }), "organization"},
		"no organization":   {liqoCert(t, key, func(c *x509.Certificate) { c.Subject.Organization = nil }), "organization"},
		"expired":           {liqoCert(t, key, func(c *x509.Certificate) { c.NotAfter = time.Now().Add(-time.Minute) }), "valid from"},
		"not yet valid":     {liqoCert(t, key, func(c *x509.Certificate) { c.NotBefore = time.Now().Add(time.Minute) }), "valid from"},
		"server auth only":  {liqoCert(t, key, func(c *x509.Certificate) { c.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth} }), "client-auth"},
		"not PEM":           {[]byte("garbage"), "certificate"},
	} {
		t.Run(name, func(t *testing.T) {
			cert, err := CheckLiqoCertificate(tc.cert, key.Public(), "consumer-1", time.Now())
			switch {
			case tc.rejected == "" && err != nil:
				t.Fatalf("rejected: %v", err)
			case tc.rejected == "" && cert.SerialNumber.Int64() != 7:
				t.Fatalf("serial %s", cert.SerialNumber)
			case tc.rejected != "" && (err == nil || !strings.Contains(err.Error(), tc.rejected)):
				t.Fatalf("err = %v, want it to contain %q", err, tc.rejected)
			}
		})
	}
}

func TestIdentityAction(t *testing.T) {
	params := func(crt string) *authv1beta1.AuthParams {
		return &authv1beta1.AuthParams{CA: []byte("ca"), SignedCRT: []byte(crt), APIServer: "https://p:6443"}
	}
	published := func(p *authv1beta1.AuthParams) *authv1beta1.Identity {
		return &authv1beta1.Identity{Spec: authv1beta1.IdentitySpec{AuthParams: *p}}
	}
	proxied := params("crt-1")
	proxied.ProxyURL = ptr.To("http://proxy")
	for name, tc := range map[string]struct {
		status    *authv1beta1.AuthParams
		published *authv1beta1.Identity
		want      string
	}{
		"Liqo has not issued yet":                 {nil, nil, ""},
		"first certificate: issue":                {params("crt-1"), nil, vocabulary.ActionIssueIdentity},
		"published already: nothing":              {params("crt-1"), published(params("crt-1")), ""},
		"renewed by Liqo: renew once":             {params("crt-2"), published(params("crt-1")), vocabulary.ActionRenewIdentity},
		"proxyURL added to the status":            {proxied, published(params("crt-1")), vocabulary.ActionRenewIdentity},
		"published newer than status: republish":  {params("crt-1"), published(params("crt-2")), vocabulary.ActionRenewIdentity},
		"status gone after publishing: no change": {nil, published(params("crt-1")), ""},
	} {
		t.Run(name, func(t *testing.T) {
			if got := IdentityAction(tc.status, tc.published); got != tc.want {
				t.Errorf("IdentityAction = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestLiqoCertificateCaches(t *testing.T) {
	got := LiqoCertificateCaches([]string{"a", "b"})
	want := []string{"liqo-remote-certificate", "liqo-remote-certificate-a", "liqo-remote-certificate-b"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("LiqoCertificateCaches = %v, want %v", got, want)
	}
	if got := LiqoCertificateCaches(nil); len(got) != 1 || got[0] != LiqoCertificateCache {
		t.Errorf("without slices = %v, want only the control plane's cache", got)
	}
}

func TestLiqoDrainSelector(t *testing.T) {
	sel := LiqoDrainSelector("c1")
	for _, tc := range []struct {
		labels map[string]string
		want   bool
	}{
		{map[string]string{"liqo.io/replicated": "true", "liqo.io/originID": "c1", "liqo.io/remoteID": "p"}, true},
		{map[string]string{"liqo.io/replicated": "true", "liqo.io/originID": "c2"}, false},
		{map[string]string{"liqo.io/originID": "c1"}, false}, // the provider's own, not replicated
		{map[string]string{"liqo.io/replicated": "false", "liqo.io/originID": "c1"}, false},
	} {
		if got := sel.Matches(labels.Set(tc.labels)); got != tc.want {
			t.Errorf("%v matches %v = %v, want %v", sel, tc.labels, got, tc.want)
		}
	}
}

func TestSliceCertificate(t *testing.T) {
	slice := func(status map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"namespace": "ns", "name": "s1"}}}
		if status != nil {
			u.Object["status"] = status
		}
		return u
	}
	want := []byte("-----BEGIN CERTIFICATE-----\n")
	got, err := SliceCertificate(slice(map[string]any{"authParams": map[string]any{"signedCRT": base64.StdEncoding.EncodeToString(want)}}))
	if err != nil || string(got) != string(want) {
		t.Errorf("SliceCertificate = %q, %v; want %q", got, err, want)
	}
	for name, status := range map[string]map[string]any{"no status": nil, "no authParams": {"conditions": []any{}}} {
		if got, err := SliceCertificate(slice(status)); got != nil || err != nil {
			t.Errorf("%s: SliceCertificate = %q, %v; want none", name, got, err)
		}
	}
	_, err = SliceCertificate(slice(map[string]any{"authParams": map[string]any{"signedCRT": "not base64!"}}))
	if err == nil || !strings.Contains(err.Error(), "ns/s1: status.authParams.signedCRT") {
		t.Errorf("bad base64: error %v, want one naming the slice and the field", err)
	}
}

// TestAPIServerDiffers: Liqo's advertised address is compared with the
// published one as Liqo completes it (https:// when it has no scheme).
func TestAPIServerDiffers(t *testing.T) {
	for _, tc := range []struct {
		advertised, published string
		differs               bool
	}{
		{"https://p.example:6443", "https://p.example:6443", false},
		{"p.example:6443", "https://p.example:6443", false},
		{"https://p.example:6443/", "https://p.example:6443", false},
		{"https://10.0.0.1:6443", "https://p.example:6443", true},
		{"https://p.example:443", "https://p.example:6443", true},
		{"http://p.example:6443", "https://p.example:6443", true},
	} {
		if got := APIServerDiffers(tc.advertised, tc.published); got != tc.differs {
			t.Errorf("APIServerDiffers(%q, %q) = %v, want %v", tc.advertised, tc.published, got, tc.differs)
		}
	}
}

func TestStrayTenants(t *testing.T) {
	tenant := func(ns, name string) authv1beta1.Tenant {
		return authv1beta1.Tenant{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	const ns = "liqo-tenant-c1"
	for name, tc := range map[string]struct {
		tenants []authv1beta1.Tenant
		want    []string // in the error, in order; none: no error
	}{
		"no Tenant":                          {nil, nil},
		"other consumers' Tenants":           {[]authv1beta1.Tenant{tenant("liqo-tenant-c2", "c2")}, nil},
		"another Tenant in the namespace":    {[]authv1beta1.Tenant{tenant(ns, "c1-old")}, []string{ns + "/c1-old", "one Tenant per tenant namespace", "liqoctl unpeer"}},
		"the same name in another namespace": {[]authv1beta1.Tenant{tenant("my-ns", "c1")}, []string{"my-ns/c1", "unique in the cluster"}},
		"both, each named": {[]authv1beta1.Tenant{tenant("my-ns", "c1"), tenant(ns, "c1-old")},
			[]string{ns + "/c1-old", "; Tenant my-ns/c1"}},
	} {
		t.Run(name, func(t *testing.T) {
			err := StrayTenants("c1", ns, tc.tenants)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("StrayTenants = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("StrayTenants = nil, want an error with %q", tc.want)
			}
			rest := err.Error()
			for _, w := range tc.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("StrayTenants = %v, want %q (in order)", err, w)
				}
				rest = rest[i+len(w):]
			}
		})
	}
}

// TestSliceIssued: a certificate is taken from a ResourceSlice only when
// Liqo's CRD replicator created the slice for the consumer in its tenant
// namespace (CheckLiqoIssued then checks the certificate).
func TestSliceIssued(t *testing.T) {
	key, err := crypto.GenerateKey(crypto.Ed25519)
	if err != nil {
		t.Fatal(err)
	}
	crt := liqoCert(t, key, nil)
	slice := func(ns string, labels map[string]any, crt []byte) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"namespace": ns, "name": "slice-1", "labels": labels}}}
		if crt != nil {
			u.Object["status"] = map[string]any{"authParams": map[string]any{"signedCRT": base64.StdEncoding.EncodeToString(crt)}}
		}
		return u
	}
	replicated := map[string]any{"liqo.io/replicated": "true", "liqo.io/originID": "c1"}
	tenantNS := authv1beta1.TenantNamespaceName("c1")
	for _, tc := range []struct {
		name  string
		slice *unstructured.Unstructured
		want  string
	}{
		{"issued", slice(tenantNS, replicated, crt), "c1"},
		{"not issued yet", slice(tenantNS, replicated, nil), ""},
		{"not replicated", slice(tenantNS, map[string]any{"liqo.io/originID": "c1"}, crt), ""},
		{"no origin", slice(tenantNS, map[string]any{"liqo.io/replicated": "true"}, crt), ""},
		{"another consumer's namespace", slice(authv1beta1.TenantNamespaceName("c2"), replicated, crt), ""},
	} {
		consumer, pem := SliceIssued(tc.slice)
		if consumer != tc.want || (pem != nil) != (tc.want != "") {
			t.Errorf("%s: SliceIssued = %q, %v; want %q", tc.name, consumer, pem != nil, tc.want)
		}
	}
}
