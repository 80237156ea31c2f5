package protocol

import (
	"fmt"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	"github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1/documents"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// Documents holds the decoded documents of one peering directory <providerID>/<consumerID>.
// A nil field means the file is absent, or was invalid and reported: then
// Invalid holds why, so that a bad file is never mistaken for a removed one.
type Documents struct {
	Provider, Consumer string
	Request            *documents.PeeringRequest
	Nonce              *documents.Nonce
	Tenant             *authv1beta1.Tenant
	Identity           *authv1beta1.Identity
	// Invalid holds, by kind, the files present on the branch but skipped.
	Invalid map[vocabulary.FileKind]error
	// BuildFailed, in a directory built with kustomize, holds why no valid
	// Tenant came out of it while tenant.yaml is present (the build failed or
	// was refused, or the built Tenant is invalid). A provider fails closed:
	// it drains an issued Tenant (its RoleBinding goes) and issues and renews
	// nothing until the build is fixed.
	BuildFailed error
	// Terms are the provider's published terms (<providerID>/terms.yaml);
	// nil with TermsErr set when they are missing (ErrNoTerms) or invalid.
	Terms    *documents.ProviderTerms
	TermsErr error
}

// MarkInvalid records that the file of kind k is present but was skipped.
func (pe *Documents) MarkInvalid(k vocabulary.FileKind, err error) {
	if pe.Invalid == nil {
		pe.Invalid = map[vocabulary.FileKind]error{}
	}
	pe.Invalid[k] = err
}

// Decode strictly decodes the file at p and checks its type and that the IDs
// inside it are the IDs in its path. It stores the result in peering.
func (pe *Documents) Decode(p Path, data []byte) error {
	if err := pe.decode(p, data); err != nil {
		err = fmt.Errorf("%s: %w", p, err)
		pe.MarkInvalid(p.Kind, err)
		return err
	}
	return nil
}

func (pe *Documents) decode(p Path, data []byte) error {
	switch p.Kind {
	case vocabulary.RequestFile:
		var r documents.PeeringRequest
		if err := decodeStrict(data, &r); err != nil {
			return err
		}
		if err := checkType(r.APIVersion, r.Kind, documents.APIVersion, documents.PeeringRequestKind); err != nil {
			return err
		}
		if err := checkIDs(p, string(r.Spec.ProviderClusterID), string(r.Spec.ConsumerClusterID)); err != nil {
			return err
		}
		if _, err := crypto.ParsePublicKey(r.Spec.PublicKey); err != nil {
			return fmt.Errorf("%w: spec.publicKey: %v", ErrInvalid, err)
		}
		pe.Request = &r
	case vocabulary.NonceFile:
		var n documents.Nonce
		if err := decodeStrict(data, &n); err != nil {
			return err
		}
		if err := checkType(n.APIVersion, n.Kind, documents.APIVersion, documents.NonceKind); err != nil {
			return err
		}
		if err := checkIDs(p, string(n.Spec.ProviderClusterID), string(n.Spec.ConsumerClusterID)); err != nil {
			return err
		}
		if err := crypto.ValidateNonce(n.Spec.Nonce); err != nil {
			return fmt.Errorf("%w: spec.nonce: %v", ErrInvalid, err)
		}
		pe.Nonce = &n
	case vocabulary.TenantFile:
		var t authv1beta1.Tenant
		if err := decodeStrict(data, &t); err != nil {
			return err
		}
		if err := checkType(t.APIVersion, t.Kind, authv1beta1.GroupVersion.String(), authv1beta1.TenantKind); err != nil {
			return err
		}
		if t.Name != p.Consumer || string(t.Spec.ClusterID) != p.Consumer {
			return fmt.Errorf("%w: Tenant %q for cluster %q sits in the directory of consumer %q", ErrInvalid, t.Name, t.Spec.ClusterID, p.Consumer)
		}
		switch t.Spec.TenantCondition {
		case "", authv1beta1.TenantConditionActive, authv1beta1.TenantConditionCordoned, authv1beta1.TenantConditionDrained:
		default:
			return fmt.Errorf("%w: unknown spec.tenantCondition %q", ErrInvalid, t.Spec.TenantCondition)
		}
		if len(t.Spec.PublicKey) == 0 || len(t.Spec.CSR) == 0 || len(t.Spec.Signature) == 0 {
			return fmt.Errorf("%w: Tenant needs spec.publicKey, spec.csr and spec.signature", ErrInvalid)
		}
		pe.Tenant = &t
	case vocabulary.IdentityFile:
		var id authv1beta1.Identity
		if err := decodeStrict(data, &id); err != nil {
			return err
		}
		if err := checkType(id.APIVersion, id.Kind, authv1beta1.GroupVersion.String(), authv1beta1.IdentityKind); err != nil {
			return err
		}
		want := authv1beta1.ControlPlaneIdentityName(authv1beta1.ClusterID(p.Provider))
		if id.Name != want || string(id.Spec.ClusterID) != p.Provider {
			return fmt.Errorf("%w: Identity %q for cluster %q sits in the directory of provider %q (want name %q)", ErrInvalid, id.Name, id.Spec.ClusterID, p.Provider, want)
		}
		if id.Spec.Type != authv1beta1.ControlPlaneIdentityType {
			return fmt.Errorf("%w: Identity type %q is not %q", ErrInvalid, id.Spec.Type, authv1beta1.ControlPlaneIdentityType)
		}
		// An empty ca is legal in Liqo: the API server has a publicly trusted certificate.
		// proxyURL and awsConfig (liqoctl generate identity copies them from the Tenant status) are carried.
		if id.Spec.AuthParams.APIServer == "" || len(id.Spec.AuthParams.SignedCRT) == 0 {
			return fmt.Errorf("%w: Identity needs spec.authParams.apiServer and signedCRT", ErrInvalid)
		}
		pe.Identity = &id
	}
	return nil
}

func checkType(apiVersion, kind, wantAPIVersion, wantKind string) error {
	if apiVersion != wantAPIVersion || kind != wantKind {
		return fmt.Errorf("%w: found %s %s, want %s %s", ErrInvalid, apiVersion, kind, wantAPIVersion, wantKind)
	}
	return nil
}

func checkIDs(p Path, provider, consumer string) error {
	if provider != p.Provider || consumer != p.Consumer {
		return fmt.Errorf("%w: IDs in the file (provider %q, consumer %q) are not the IDs in its path (provider %q, consumer %q)",
			ErrInvalid, provider, consumer, p.Provider, p.Consumer)
	}
	return nil
}
