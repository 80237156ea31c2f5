package protocol

import (
	"errors"
	"fmt"
	"path"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	"github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1/documents"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// ErrNoTerms is the error of a provider directory without terms.yaml.
var ErrNoTerms = errors.New("the provider has published no terms.yaml")

// TermsPath returns the path of provider's terms.yaml, relative to the peering root.
func TermsPath(provider string) string { return path.Join(provider, vocabulary.TermsFile) }

// ParseTermsPath returns the provider of rel (relative to the peering root)
// when rel is <providerID>/terms.yaml.
func ParseTermsPath(rel string) (string, bool) {
	provider, name, ok := strings.Cut(rel, "/")
	return provider, ok && name == vocabulary.TermsFile
}

// DecodeTerms strictly decodes provider's terms.yaml and checks its type and
// the provider ID inside it.
func DecodeTerms(provider string, data []byte) (*documents.ProviderTerms, error) {
	var t documents.ProviderTerms
	err := decodeStrict(data, &t)
	if err == nil {
		err = checkType(t.APIVersion, t.Kind, documents.APIVersion, documents.ProviderTermsKind)
	}
	if err == nil && string(t.Spec.ProviderClusterID) != provider {
		err = fmt.Errorf("%w: terms of provider %q sit in the directory of provider %q", ErrInvalid, t.Spec.ProviderClusterID, provider)
	}
	if err == nil && (t.Spec.ClusterRoleName == "" || t.Spec.TenantNamespacePrefix == "" || t.Spec.CertificateTTL.Duration <= 0) {
		err = fmt.Errorf("%w: ProviderTerms needs spec.clusterRoleName, spec.tenantNamespacePrefix and a positive spec.certificateTTL", ErrInvalid)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", TermsPath(provider), err)
	}
	return &t, nil
}

// TermsDocument renders terms.yaml from spec.
func TermsDocument(spec documents.ProviderTermsSpec) ([]byte, error) {
	return yaml.Marshal(&documents.ProviderTerms{
		TypeMeta:   metav1.TypeMeta{APIVersion: documents.APIVersion, Kind: documents.ProviderTermsKind},
		ObjectMeta: metav1.ObjectMeta{Name: string(spec.ProviderClusterID)},
		Spec:       spec,
	})
}

// TenantNamespace is the tenant namespace of consumer under terms.
func TenantNamespace(terms *documents.ProviderTerms, consumer string) string {
	return terms.Spec.TenantNamespacePrefix + consumer
}

// CheckTenantTerms reports where t contradicts the provider's terms: a
// namespace other than the one the terms give the consumer.
func CheckTenantTerms(terms *documents.ProviderTerms, t *authv1beta1.Tenant, consumer string) error {
	if want := TenantNamespace(terms, consumer); t.Namespace != "" && t.Namespace != want {
		return fmt.Errorf("%w: tenant.yaml asks for namespace %q, the provider's terms give %s namespace %q", ErrInvalid, t.Namespace, consumer, want)
	}
	return nil
}

// CheckIdentityTerms reports where id contradicts the provider's terms: an
// API server other than the one they publish.
func CheckIdentityTerms(terms *documents.ProviderTerms, id *authv1beta1.Identity) error {
	if got := id.Spec.AuthParams.APIServer; terms.Spec.APIServer != "" && got != terms.Spec.APIServer {
		return fmt.Errorf("%w: identity.yaml points at API server %q, the provider's terms publish %q", ErrInvalid, got, terms.Spec.APIServer)
	}
	return nil
}

// RenewalTerm is how the agent renews certificates, as its terms say.
const RenewalTerm = "at 2/3 of its lifetime, without a new approval"
