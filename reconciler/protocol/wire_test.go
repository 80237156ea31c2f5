package protocol_test

import (
	"slices"
	"testing"

	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/vocabulary"
)

// TestWireFormat pins how gitpeer lays out the names of package vocabulary
// (TestWireVocabulary) in peering repositories: the commit message, the
// document paths and the size limits. Repositories and histories written by
// one version are read by other versions, so change them only with a
// migration, and then change this test.
func TestWireFormat(t *testing.T) {
	msg, err := protocol.Message{
		Subject: "Renew identity of c on p (serial 2a)", Action: vocabulary.ActionRenewIdentity, Provider: "p", Consumer: "c",
		Extra: []protocol.Trailer{{Key: vocabulary.TrailerSerial, Value: "2a"}, {Key: vocabulary.TrailerExpires, Value: "2030-01-02T03:04:05Z"}},
	}.String()
	if err != nil {
		t.Fatal(err)
	}
	want := "Renew identity of c on p (serial 2a)\n\n" +
		"Gitpeer-Action: renew-identity\nGitpeer-Provider: p\nGitpeer-Consumer: c\nGitpeer-Serial: 2a\nGitpeer-Expires: 2030-01-02T03:04:05Z\n"
	if msg != want {
		t.Errorf("identity commit message:\n%s\nwant:\n%s", msg, want)
	}
	if got := (protocol.Path{Provider: "p", Consumer: "c", Kind: vocabulary.TenantFile}).String(); got != "p/c/tenant.yaml" {
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
