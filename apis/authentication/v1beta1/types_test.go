package v1beta1_test

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
)

// roundTrip strictly decodes the file into obj (an unknown field is an error), encodes obj again
// and checks that the result carries exactly the fields of the file, with the same values.
func roundTrip(t *testing.T, file string, obj any) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, obj); err != nil {
		t.Fatalf("strict decoding %s: %v", file, err)
	}
	out, err := yaml.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	var in, back map[string]any
	if err := yaml.Unmarshal(data, &in); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(out, &back); err != nil {
		t.Fatal(err)
	}
	// liqoctl (older apimachinery) writes a zero creationTimestamp as null; apimachinery >= 0.33
	// omits it. Both mean "unset".
	if md, ok := in["metadata"].(map[string]any); ok {
		if ts, had := md["creationTimestamp"]; had && ts == nil {
			delete(md, "creationTimestamp")
		}
	}
	// An empty status is written by Go whether or not the file had one.
	if st, ok := back["status"].(map[string]any); ok && len(st) == 0 {
		if _, had := in["status"]; !had {
			delete(back, "status")
		}
	}
	if !reflect.DeepEqual(in, back) {
		t.Errorf("%s does not round-trip:\n in: %v\nout: %s", file, in, out)
	}
}

func pemBlock(t *testing.T, what string, data []byte, wantType string) *pem.Block {
	t.Helper()
	b, rest := pem.Decode(data)
	if b == nil || b.Type != wantType || len(rest) != 0 {
		t.Fatalf("%s is not a single PEM %s block", what, wantType)
	}
	return b
}

func TestLiqoTenantRoundTrip(t *testing.T) {
	var tn authv1beta1.Tenant
	roundTrip(t, "testdata/liqo-docs-tenant.yaml", &tn)

	if tn.APIVersion != authv1beta1.GroupVersion.String() || tn.Kind != authv1beta1.TenantKind {
		t.Errorf("got %s %s", tn.APIVersion, tn.Kind)
	}
	id := tn.Spec.ClusterID
	if id != "cl-consumer" || tn.Name != authv1beta1.TenantName(id) ||
		tn.Labels[authv1beta1.RemoteClusterIDLabel] != string(id) {
		t.Errorf("names and labels: %+v", tn.ObjectMeta)
	}
	if err := authv1beta1.ValidateClusterID(string(id)); err != nil {
		t.Error(err)
	}
	// Liqo < v1.0.2 wrote the raw 32-byte Ed25519 key; the signature is a raw 64-byte Ed25519 one.
	if len(tn.Spec.PublicKey) != 32 || len(tn.Spec.Signature) != 64 {
		t.Errorf("publicKey %d bytes, signature %d bytes", len(tn.Spec.PublicKey), len(tn.Spec.Signature))
	}
	csr, err := x509.ParseCertificateRequest(pemBlock(t, "csr", tn.Spec.CSR, "CERTIFICATE REQUEST").Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if got := csr.Subject.Organization; !reflect.DeepEqual(got, []string{authv1beta1.CertificateOrganization}) {
		t.Errorf("CSR organization %v", got)
	}
	if tn.Spec.AuthzPolicy != nil || authv1beta1.GetAuthzPolicyValue(tn.Spec.AuthzPolicy) != authv1beta1.KeysExchange {
		t.Errorf("authzPolicy %v", tn.Spec.AuthzPolicy)
	}
}

func TestLiqoIdentityRoundTrip(t *testing.T) {
	var id authv1beta1.Identity
	roundTrip(t, "testdata/liqo-docs-identity.yaml", &id)

	if id.APIVersion != authv1beta1.GroupVersion.String() || id.Kind != authv1beta1.IdentityKind {
		t.Errorf("got %s %s", id.APIVersion, id.Kind)
	}
	p := id.Spec.ClusterID
	if p != "cl-provider" || id.Name != authv1beta1.ControlPlaneIdentityName(p) ||
		id.Labels[authv1beta1.RemoteClusterIDLabel] != string(p) {
		t.Errorf("names and labels: %+v", id.ObjectMeta)
	}
	if id.Spec.Type != authv1beta1.ControlPlaneIdentityType {
		t.Errorf("type %q", id.Spec.Type)
	}
	if id.Spec.Namespace == nil || *id.Spec.Namespace != authv1beta1.TenantNamespaceName("cl-consumer") {
		t.Errorf("namespace %v", id.Spec.Namespace)
	}
	if id.Spec.AuthParams.APIServer != "https://172.19.0.3:6443" {
		t.Errorf("apiServer %q", id.Spec.AuthParams.APIServer)
	}
	for what, data := range map[string][]byte{"ca": id.Spec.AuthParams.CA, "signedCRT": id.Spec.AuthParams.SignedCRT} {
		if _, err := x509.ParseCertificate(pemBlock(t, what, data, "CERTIFICATE").Bytes); err != nil {
			t.Errorf("%s: %v", what, err)
		}
	}
	if got := authv1beta1.KubeconfigSecretName(id.Name); got != "kubeconfig-controlplane-cl-provider" {
		t.Errorf("kubeconfig secret name %q", got)
	}
}

// TestStrict shows that the decoding used above does reject what it does not know.
func TestStrict(t *testing.T) {
	data, err := os.ReadFile("testdata/liqo-docs-identity.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var tn authv1beta1.Tenant
	if err := yaml.UnmarshalStrict(data, &tn); err == nil {
		t.Error("an Identity decoded strictly as a Tenant")
	}
}

func TestScheme(t *testing.T) {
	s := runtime.NewScheme()
	if err := authv1beta1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"Tenant", "TenantList", "Identity", "IdentityList"} {
		if !s.Recognizes(authv1beta1.GroupVersion.WithKind(kind)) {
			t.Errorf("%s not registered", kind)
		}
	}
}

func TestValidateClusterID(t *testing.T) {
	for id, ok := range map[string]bool{
		"cl-consumer": true, "a": true, "0abc": true,
		"": false, "-a": false, "a-": false, "A": false, "a_b": false, "a.b": false,
		"a23456789012345678901234567890123456789012345678901234567890123":  true,
		"a234567890123456789012345678901234567890123456789012345678901234": false,
	} {
		if err := authv1beta1.ValidateClusterID(id); (err == nil) != ok {
			t.Errorf("ValidateClusterID(%q) = %v", id, err)
		}
	}
}
