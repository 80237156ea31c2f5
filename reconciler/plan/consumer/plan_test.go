package consumer

import (
	"testing"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	"github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1/documents"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/vocabulary"
)

func TestDecide(t *testing.T) {
	request, nonce := &documents.PeeringRequest{}, &documents.Nonce{}
	identity := &authv1beta1.Identity{}
	invalid := map[vocabulary.FileKind]error{vocabulary.IdentityFile: protocol.ErrInvalid}
	for name, tc := range map[string]struct {
		pe   protocol.Documents
		o    Observed
		want Step
	}{
		"identity.yaml on the branch":             {protocol.Documents{Request: request, Nonce: nonce, Identity: identity}, Observed{Identity: true}, ApplyIdentity},
		"invalid identity.yaml keeps the current": {protocol.Documents{Request: request, Invalid: invalid}, Observed{Identity: true}, KeepIdentity},
		"identity.yaml removed: drop":             {protocol.Documents{Request: request, Nonce: nonce}, Observed{Identity: true}, DropIdentity},
		"all removed: drop first":                 {protocol.Documents{}, Observed{Identity: true, Revoked: true}, DropIdentity},
		"revoked: no request on its own":          {protocol.Documents{}, Observed{Revoked: true}, StayRevoked},
		"revoked, admin asks again":               {protocol.Documents{}, Observed{Revoked: true, RequestAgain: true}, RequestAgain},
		"nothing yet: request":                    {protocol.Documents{}, Observed{}, Request},
		"request-again without revocation":        {protocol.Documents{}, Observed{RequestAgain: true}, Request},
		"requested, no nonce":                     {protocol.Documents{Request: request}, Observed{}, WaitForNonce},
		"nonce offered: propose":                  {protocol.Documents{Request: request, Nonce: nonce}, Observed{}, ProposeTenant},
		"a request by hand after a revocation":    {protocol.Documents{Request: request, Nonce: nonce}, Observed{Revoked: true}, ProposeTenant},
	} {
		t.Run(name, func(t *testing.T) {
			if got := Decide(&tc.pe, tc.o); got != tc.want {
				t.Errorf("Decide = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestUnlisted(t *testing.T) {
	identity := func(provider, ns string) *authv1beta1.Identity {
		id := &authv1beta1.Identity{Spec: authv1beta1.IdentitySpec{ClusterID: authv1beta1.ClusterID(provider)}}
		id.Namespace = ns
		return id
	}
	listed := []authv1beta1.ClusterID{"provider-a"}
	for name, tc := range map[string]struct {
		identity *authv1beta1.Identity
		want     bool
	}{
		"listed provider: kept":                    {identity("provider-a", "liqo-tenant-provider-a"), false},
		"provider left the list: forgotten":        {identity("provider-b", "liqo-tenant-provider-b"), true},
		"outside its tenant namespace: left alone": {identity("provider-b", "liqo-tenant-provider-a"), false},
	} {
		t.Run(name, func(t *testing.T) {
			if got := Unlisted(listed, tc.identity); got != tc.want {
				t.Errorf("Unlisted = %t, want %t", got, tc.want)
			}
		})
	}
	if !Unlisted(nil, identity("provider-a", "liqo-tenant-provider-a")) {
		t.Error("no providers listed: every Identity is forgotten")
	}
}
