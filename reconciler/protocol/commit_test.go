package protocol_test

import (
	"reflect"
	"slices"
	"testing"

	"github.com/gitpeer/gitpeer/reconciler/protocol"
	"github.com/gitpeer/gitpeer/vocabulary"
)

func TestMessageTrailers(t *testing.T) {
	m := protocol.Message{
		Subject:  "nonce for\nconsumer-a",
		Body:     "The provider issued a fresh nonce.",
		Action:   "nonce",
		Provider: "prov",
		Consumer: "cons",
		Extra:    []protocol.Trailer{{Key: vocabulary.TrailerSerial, Value: "7\nGitpeer-Action: forged"}},
	}
	s, err := m.String()
	if err != nil {
		t.Fatal(err)
	}
	want := "nonce for consumer-a\n\nThe provider issued a fresh nonce.\n\n" +
		"Gitpeer-Action: nonce\nGitpeer-Provider: prov\nGitpeer-Consumer: cons\nGitpeer-Serial: 7 Gitpeer-Action: forged\n"
	if s != want {
		t.Fatalf("message:\n%q\nwant\n%q", s, want)
	}
	got := protocol.ParseTrailers(s)
	wantTrailers := append(m.Trailers()[:3:3], protocol.Trailer{Key: vocabulary.TrailerSerial, Value: "7 Gitpeer-Action: forged"})
	if !reflect.DeepEqual(got, wantTrailers) {
		t.Fatalf("trailers %v", got)
	}
	if _, err := (protocol.Message{}).String(); err == nil {
		t.Fatal("empty subject accepted")
	}
	if _, err := (protocol.Message{Subject: "x", Extra: []protocol.Trailer{{Key: "bad key", Value: "v"}}}).String(); err == nil {
		t.Fatal("bad trailer key accepted")
	}
}

func TestRecords(t *testing.T) {
	identity := protocol.Message{
		Subject: "Issue identity", Action: vocabulary.ActionIssueIdentity, Provider: "prov", Consumer: "cons",
		Extra: []protocol.Trailer{{Key: vocabulary.TrailerSerial, Value: "2a"}, {Key: vocabulary.TrailerExpires, Value: "2030-01-02T03:04:05Z"}},
	}
	rendered, err := identity.String()
	if err != nil {
		t.Fatal(err)
	}
	several := []protocol.Record{
		{Action: vocabulary.ActionIssueNonce, Provider: "prov", Consumer: "a"},
		{Action: vocabulary.ActionRenewIdentity, Provider: "prov", Consumer: "b", Serial: "2b", Expires: "2030-01-02T03:04:05Z"},
		{Action: vocabulary.ActionRevoke, Provider: "prov", Consumer: "c"},
		{Action: vocabulary.ActionIssueIdentity, Provider: "prov", Consumer: "d", Serial: "2d", Expires: "2030-01-02T03:04:05Z",
			Override: "revival.gitpeer.io/d=accept-unexpired-revoked-certificates, rekey.gitpeer.io/d=abcd"},
	}
	round, err := protocol.Message{Subject: "Round", Extra: slices.Concat(several[0].Trailers(), several[1].Trailers(), several[2].Trailers(), several[3].Trailers())}.String()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, message string
		want          []protocol.Record
	}{
		{"identity commit", rendered, []protocol.Record{{Action: vocabulary.ActionIssueIdentity, Provider: "prov", Consumer: "cons", Serial: "2a", Expires: "2030-01-02T03:04:05Z"}}},
		{"a person's commit", "Merge pull request #4\n\nApproves cons.\n\nSigned-off-by: Ann <ann@example.com>\n", nil},
		{"no trailer block", "Update README\n", nil},
		{"two peerings in one commit", "Issue nonces\n\nGitpeer-Action: issue-nonce\nGitpeer-Provider: prov\nGitpeer-Consumer: a\nGitpeer-Action: issue-nonce\nGitpeer-Provider: prov\nGitpeer-Consumer: b\n",
			[]protocol.Record{{Action: vocabulary.ActionIssueNonce, Provider: "prov", Consumer: "a"}, {Action: vocabulary.ActionIssueNonce, Provider: "prov", Consumer: "b"}}},
		{"a round's commit written with Record.Trailers", round, several},
		{"trailers before the action belong to no record", "x\n\nGitpeer-Consumer: stray\nGitpeer-Action: revoke\nGitpeer-Consumer: cons\n", []protocol.Record{{Action: vocabulary.ActionRevoke, Consumer: "cons"}}},
		{"an empty action records nothing", "x\n\nGitpeer-Action: \nGitpeer-Consumer: cons\nSigned-off-by: a <a@b>\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := protocol.Records(tc.message); !slices.Equal(got, tc.want) {
				t.Fatalf("Records = %+v, want %+v", got, tc.want)
			}
		})
	}
}
