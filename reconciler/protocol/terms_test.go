package protocol

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	"github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1/documents"
	"github.com/gitpeer/gitpeer/gitsync"
)

// files is a Source over file contents by path.
type files map[string][]byte

func (f files) Size(file gitsync.File) (int64, error) { return int64(len(f[file.Path])), nil }
func (f files) ReadFile(file gitsync.File) ([]byte, error) {
	if d, ok := f[file.Path]; ok {
		return d, nil
	}
	return nil, os.ErrNotExist
}

func (f files) listing() *gitsync.Listing {
	l := &gitsync.Listing{}
	for p := range f {
		l.Files = append(l.Files, gitsync.File{Path: p})
	}
	return l
}

func testTermsDoc(t *testing.T, provider string) []byte {
	t.Helper()
	doc, err := TermsDocument(documents.ProviderTermsSpec{
		ProviderClusterID: authv1beta1.ClusterID(provider), TenantNamespacePrefix: authv1beta1.TenantNamespacePrefix,
		ClusterRoleName: "liqo-remote-controlplane", CertificateTTL: metav1.Duration{Duration: time.Hour}, Renewal: RenewalTerm,
	})
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// TestLoadTerms: Load reads <provider>/terms.yaml for a consumer's scope too and gives every
// peering directory its provider's terms; a bad terms.yaml is invalid (and rejected), never absent.
func TestLoadTerms(t *testing.T) {
	consumerScope := Scope(func(provider, consumer string) bool {
		return provider == "hub" && (consumer == "edge" || consumer == "")
	})
	for _, tc := range []struct {
		name  string
		terms []byte // nil: no terms.yaml
		want  string // "" when the terms load
	}{
		{name: "published", terms: testTermsDoc(t, "hub")},
		{name: "missing", want: ErrNoTerms.Error()},
		{name: "unknown field", terms: append(testTermsDoc(t, "hub"), "extra: 1\n"...), want: "hub/terms.yaml: invalid document"},
		{name: "another provider's", terms: testTermsDoc(t, "other"), want: `terms of provider "other" sit in the directory of provider "hub"`},
		{name: "wrong kind", terms: []byte("apiVersion: gitpeer.io/v1alpha1\nkind: Nonce\nspec: {}\n"), want: "want gitpeer.io/v1alpha1 ProviderTerms"},
		{name: "over the size cap", terms: append(testTermsDoc(t, "hub"), strings.Repeat("#", MaxFileSize)...), want: "the limit is"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := files{"hub/edge/README.md": []byte("x")}
			if tc.terms != nil {
				src["hub/terms.yaml"] = tc.terms
			}
			l := Load(src.listing(), src, consumerScope)
			pe := l.Documents("hub", "edge")
			terms, err := l.Terms("hub")
			if tc.want == "" {
				if err != nil || pe.Terms != terms || pe.TermsErr != nil || TenantNamespace(terms, "edge") != "liqo-tenant-edge" {
					t.Fatalf("terms %v, err %v, directory %v/%v", terms, err, pe.Terms, pe.TermsErr)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || pe.Terms != nil || pe.TermsErr != err {
				t.Fatalf("err %v, directory %v, want %q", err, pe.TermsErr, tc.want)
			}
			if tc.terms != nil && (len(l.Rejected) != 1 || l.Rejected[0].Path != "hub/terms.yaml") {
				t.Errorf("a bad terms.yaml must be rejected (reported): %+v", l.Rejected)
			}
		})
	}
}

// TestCheckTerms: a Tenant in another namespace, or an Identity for another API server,
// contradicts the terms.
func TestCheckTerms(t *testing.T) {
	terms, err := DecodeTerms("hub", testTermsDoc(t, "hub"))
	if err != nil {
		t.Fatal(err)
	}
	tenant := &authv1beta1.Tenant{ObjectMeta: metav1.ObjectMeta{Namespace: "liqo-tenant-edge"}}
	if err := CheckTenantTerms(terms, tenant, "edge"); err != nil {
		t.Errorf("own namespace: %v", err)
	}
	tenant.Namespace = "kube-system"
	if err := CheckTenantTerms(terms, tenant, "edge"); err == nil || !errors.Is(err, ErrInvalid) {
		t.Errorf("another namespace: %v", err)
	}
	terms.Spec.APIServer = "https://hub:6443"
	id := &authv1beta1.Identity{}
	id.Spec.AuthParams.APIServer = "https://evil:6443"
	if err := CheckIdentityTerms(terms, id); err == nil {
		t.Error("an Identity for another API server must contradict the terms")
	}
	id.Spec.AuthParams.APIServer = "https://hub:6443"
	if err := CheckIdentityTerms(terms, id); err != nil {
		t.Errorf("own API server: %v", err)
	}
}
