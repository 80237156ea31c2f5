package reconciler

import (
	"errors"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/reconciler/forge"
	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/test/repofixture"
)

// TestCheckProposed runs the consumer's pull-request checks on the tenant.yaml a pull request's
// head holds: its own Tenant passes (the provider's rules listed as checked after merge, never as
// passed); a tampered one, another key's, or a missing one fails.
func TestCheckProposed(t *testing.T) {
	key, err := crypto.GenerateKey(crypto.Ed25519)
	if err != nil {
		t.Fatal(err)
	}
	other, err := crypto.GenerateKey(crypto.Ed25519)
	if err != nil {
		t.Fatal(err)
	}
	nonce := crypto.GenerateNonce()
	pe := &protocol.Documents{Provider: "hub", Consumer: "edge-1"}
	req, err := protocol.RequestDocument("hub", "edge-1", key.Public())
	if err != nil {
		t.Fatal(err)
	}
	nonceDoc, err := protocol.NonceDocument("hub", "edge-1", nonce)
	if err != nil {
		t.Fatal(err)
	}
	for p, data := range map[protocol.Kind][]byte{protocol.Request: req, protocol.Nonce: nonceDoc} {
		if err := pe.Decode(protocol.Path{Provider: "hub", Consumer: "edge-1", Kind: p}, data); err != nil {
			t.Fatal(err)
		}
	}
	own, err := protocol.NewTenant("edge-1", key, nonce)
	if err != nil {
		t.Fatal(err)
	}
	good, _ := yaml.Marshal(own)
	foreign, err := protocol.NewTenant("edge-1", other, nonce)
	if err != nil {
		t.Fatal(err)
	}
	foreignDoc, _ := yaml.Marshal(foreign)
	elsewhere := own.DeepCopy()
	elsewhere.Namespace = "kube-system"
	elsewhereDoc, _ := yaml.Marshal(elsewhere)
	termsDoc, err := repofixture.Terms("hub")
	if err != nil {
		t.Fatal(err)
	}
	terms, err := protocol.DecodeTerms("hub", termsDoc)
	if err != nil {
		t.Fatal(err)
	}
	s := &session{
		obj: &gitpeerv1alpha1.PeeringRepository{Spec: gitpeerv1alpha1.PeeringRepositorySpec{Path: "peers"}},
		key: key,
		r:   &PeeringRepositoryReconciler{Now: time.Now},
	}
	for _, tc := range []struct {
		name  string
		file  []byte
		err   error
		state forge.CheckState
		want  string
		// termsErr replaces the published terms: missing or invalid.
		termsErr error
	}{
		{name: "own tenant", file: good, state: forge.CheckSuccess, want: "passed: hub/edge-1/tenant.yaml"},
		{name: "tampered signature", file: []byte(strings.Replace(string(good), "signature: ", "signature: AAAA", 1)), state: forge.CheckFailure, want: "failed: hub/edge-1/tenant.yaml"},
		{name: "another key", file: foreignDoc, state: forge.CheckFailure, want: "not the key of request.yaml"},
		{name: "not a document", file: []byte("kind: Tenant\nfoo: bar\n"), state: forge.CheckFailure, want: "failed: "},
		{name: "tenant outside the terms' namespace", file: elsewhereDoc, state: forge.CheckFailure, want: `failed: hub/edge-1/tenant.yaml: invalid document: tenant.yaml asks for namespace "kube-system", the provider's terms give edge-1 namespace "liqo-tenant-edge-1"`},
		{name: "terms missing", file: good, termsErr: protocol.ErrNoTerms, state: forge.CheckFailure, want: "failed: hub/terms.yaml: terms missing: hub has not published hub/terms.yaml"},
		{name: "terms invalid", file: good, termsErr: errors.New("hub/terms.yaml: unknown field"), state: forge.CheckFailure, want: "failed: hub/terms.yaml: terms invalid: hub/terms.yaml: unknown field"},
		{name: "unreadable", err: errors.New("404 Not Found"), state: forge.CheckFailure, want: "cannot read it at the pull request's head"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pe.Terms, pe.TermsErr = terms, tc.termsErr
			if tc.termsErr != nil {
				pe.Terms = nil
			}
			var read string
			check, lines := s.checkProposed(pe, func(p string) ([]byte, error) { read = p; return tc.file, tc.err })
			text := strings.Join(lines, "\n")
			if read != "peers/hub/edge-1/tenant.yaml" {
				t.Errorf("read %q, want the file under spec.path", read)
			}
			if check.State != tc.state || check.Context != CheckContext || !strings.Contains(text, tc.want) {
				t.Fatalf("check %+v, lines:\n%s\nwant %s and %q", check, text, tc.state, tc.want)
			}
			if !strings.Contains(text, "checked by the provider after merge, not here: the nonce against its Secret") {
				t.Errorf("the provider's rules must be listed as checked after merge, never passed:\n%s", text)
			}
		})
	}
}
