package protocol_test

import (
	"slices"
	"testing"

	"github.com/gitpeer/gitpeer/reconciler/protocol"
)

// TestWireVocabulary pins the names gitpeer writes into peering repositories.
// They are a wire format: repositories, pull requests and commit histories
// written by one version are read by agents, CI (`gitpeer verify`) and
// `gitpeer audit`/`records` of other versions, so a renamed file, action or
// trailer silently loses peerings or history. Change them only with a
// migration, and then change this test.
func TestWireVocabulary(t *testing.T) {
	var kinds []string
	for _, k := range protocol.Kinds {
		kinds = append(kinds, string(k))
	}
	if want := []string{"request.yaml", "nonce.yaml", "tenant.yaml", "identity.yaml"}; !slices.Equal(kinds, want) {
		t.Errorf("document files %v, want %v", kinds, want)
	}
	if protocol.KustomizationFile != "kustomization.yaml" {
		t.Errorf("kustomization file %q", protocol.KustomizationFile)
	}
	if want := []string{"request", "issue-nonce", "propose-tenant", "issue-identity", "renew-identity", "revoke", "publish-terms"}; !slices.Equal(protocol.Actions, want) {
		t.Errorf("actions %v, want %v", protocol.Actions, want)
	}
	msg, err := protocol.Message{
		Subject: "Renew identity of c on p (serial 2a)", Action: protocol.ActionRenewIdentity, Provider: "p", Consumer: "c",
		Extra: []protocol.Trailer{{Key: protocol.TrailerSerial, Value: "2a"}, {Key: protocol.TrailerExpires, Value: "2030-01-02T03:04:05Z"}},
	}.String()
	if err != nil {
		t.Fatal(err)
	}
	want := "Renew identity of c on p (serial 2a)\n\n" +
		"Gitpeer-Action: renew-identity\nGitpeer-Provider: p\nGitpeer-Consumer: c\nGitpeer-Serial: 2a\nGitpeer-Expires: 2030-01-02T03:04:05Z\n"
	if msg != want {
		t.Errorf("identity commit message:\n%s\nwant:\n%s", msg, want)
	}
	if got := (protocol.Path{Provider: "p", Consumer: "c", Kind: protocol.Tenant}).String(); got != "p/c/tenant.yaml" {
		t.Errorf("tenant path %q", got)
	}
	limits := []int{protocol.MaxFileSize, protocol.MaxBuildSize, protocol.MaxTreeEntries, protocol.MaxConsumersPerProvider,
		protocol.MaxDirectoriesPerRound, protocol.MaxBytesPerRound}
	if want := []int{64 << 10, 256 << 10, 1024, 16 << 10, 32 << 10, 128 << 20}; !slices.Equal(limits, want) {
		t.Errorf("size limits %v, want %v (a lower limit rejects documents older versions wrote)", limits, want)
	}
}

func TestKustomizedDir(t *testing.T) {
	for rel, want := range map[string]string{
		"p/c/kustomization.yaml":      "p/c",
		"kustomization.yaml":          "",
		"p/kustomization.yaml":        "",
		"p/c/base/kustomization.yaml": "",
		"p/c/kustomization.yml":       "",
		"p/c/tenant.yaml":             "",
	} {
		dir, ok := protocol.KustomizedDir(rel)
		if dir != want || ok != (want != "") {
			t.Errorf("KustomizedDir(%q) = %q, %v; want %q", rel, dir, ok, want)
		}
	}
}
