package protocol_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/test/liqo"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// TestIdentityFromTenant: identity.yaml of Liqo mode is what `liqoctl generate
// identity` makes of the Tenant (test/liqo GenerateIdentity), and the
// consumer's strict decoder takes it.
func TestIdentityFromTenant(t *testing.T) {
	tenant := &authv1beta1.Tenant{
		Status: authv1beta1.TenantStatus{TenantNamespace: "liqo-tenant-consumer-1", AuthParams: &authv1beta1.AuthParams{
			CA: []byte("ca"), SignedCRT: []byte("crt"), APIServer: "https://provider-a:6443", ProxyURL: ptr.To("http://proxy:8080")}},
	}
	tenant.Name = "consumer-1"
	data, err := protocol.IdentityFromTenant("provider-a", tenant)
	if err != nil {
		t.Fatal(err)
	}
	var got authv1beta1.Identity
	if err := yaml.UnmarshalStrict(data, &got); err != nil {
		t.Fatal(err)
	}
	want, err := liqo.GenerateIdentity(tenant, "provider-a")
	if err != nil {
		t.Fatal(err)
	}
	if got.TypeMeta != want.TypeMeta || got.Name != want.Name || !equality.Semantic.DeepEqual(got.Labels, want.Labels) || !equality.Semantic.DeepEqual(got.Spec, want.Spec) {
		t.Errorf("identity.yaml is not liqoctl's:\n got %+v\nwant %+v", got, want)
	}
	var pe protocol.Documents
	if err := pe.Decode(protocol.Path{Provider: "provider-a", Consumer: "consumer-1", Kind: vocabulary.IdentityFile}, data); err != nil {
		t.Errorf("the consumer refuses it: %v", err)
	}
	if _, err := protocol.IdentityFromTenant("provider-a", &authv1beta1.Tenant{}); err == nil {
		t.Error("a Tenant without authParams yields an identity.yaml")
	}
}
