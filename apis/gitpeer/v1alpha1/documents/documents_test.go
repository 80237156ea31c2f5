package documents_test

import (
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1/documents"
)

func TestDocumentsDecodeStrictly(t *testing.T) {
	req := `apiVersion: gitpeer.io/v1alpha1
kind: PeeringRequest
metadata:
  name: cl-consumer
spec:
  consumerClusterID: cl-consumer
  providerClusterID: cl-provider
  publicKey: LS0tLS1CRUdJTiBQVUJMSUMgS0VZLS0tLS0K
`
	var r documents.PeeringRequest
	if err := yaml.UnmarshalStrict([]byte(req), &r); err != nil {
		t.Fatal(err)
	}
	if r.APIVersion != documents.APIVersion || r.Kind != documents.PeeringRequestKind ||
		r.Spec.ConsumerClusterID != "cl-consumer" || r.Spec.ProviderClusterID != "cl-provider" ||
		string(r.Spec.PublicKey) != "-----BEGIN PUBLIC KEY-----\n" {
		t.Errorf("got %+v", r)
	}

	nonce := `apiVersion: gitpeer.io/v1alpha1
kind: Nonce
metadata:
  name: cl-consumer
spec:
  providerClusterID: cl-provider
  consumerClusterID: cl-consumer
  nonce: 1Ly2C3xAhQ9Rk6qZG5O2jNvu0JlT0CcS5Dm1Ny3jGgHHmJZ6dJmSnAbh4EBgvR6tXhyVlPoiBfoRmbMBqlLw6A==
`
	var n documents.Nonce
	if err := yaml.UnmarshalStrict([]byte(nonce), &n); err != nil {
		t.Fatal(err)
	}
	if n.Kind != documents.NonceKind || len(n.Spec.Nonce) != 88 {
		t.Errorf("got %+v", n)
	}
	cp := n.DeepCopyObject().(*documents.Nonce)
	if cp.Spec != n.Spec {
		t.Error("DeepCopyObject")
	}

	if err := yaml.UnmarshalStrict([]byte(nonce+"  extra: 1\n"), &n); err == nil {
		t.Error("unknown field accepted")
	}
}
