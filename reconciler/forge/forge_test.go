package forge

import (
	"errors"
	"flag"
	"os"
	"testing"
)

func TestLocate(t *testing.T) {
	for _, tc := range []struct {
		url      string
		provider Provider
		apiURL   string
		want     Repository
		err      error
	}{
		{url: "https://github.com/team/peering.git", want: Repository{GitHub, "https://api.github.com/", "team", "peering"}},
		{url: "ssh://git@github.com/team/peering.git", want: Repository{GitHub, "https://api.github.com/", "team", "peering"}},
		{url: "ssh://git@gitlab.com:22/group/sub/peering.git", want: Repository{GitLab, "https://gitlab.com/", "group/sub", "peering"}},
		{url: "https://codeberg.org/team/peering", want: Repository{Gitea, "https://codeberg.org/", "team", "peering"}},
		{url: "https://git.example.com/team/peering.git", provider: GitHub, want: Repository{GitHub, "https://git.example.com/api/v3/", "team", "peering"}},
		{url: "http://127.0.0.1:3000/team/peering.git", provider: Gitea, want: Repository{Gitea, "http://127.0.0.1:3000/", "team", "peering"}},
		{url: "ssh://git@git.example.com:2222/team/peering.git", provider: Gitea, apiURL: "https://forge.example.com/", want: Repository{Gitea, "https://forge.example.com/", "team", "peering"}},
		{url: "https://git.example.com/team/peering.git", err: ErrUnknownForge},
	} {
		got, err := Locate(tc.url, tc.provider, tc.apiURL)
		if !errors.Is(err, tc.err) || got != tc.want {
			t.Errorf("Locate(%q, %q, %q) = %+v, %v; want %+v, %v", tc.url, tc.provider, tc.apiURL, got, err, tc.want, tc.err)
		}
	}
	for _, bad := range []string{"https://github.com/peering", "git@github.com:team/peering.git", "file:///tmp/peering"} {
		if _, err := Locate(bad, "", ""); err == nil {
			t.Errorf("Locate(%q) accepted a URL without owner and name or with another scheme", bad)
		}
	}
}

var update = flag.Bool("update", false, "rewrite the golden descriptions in testdata/")

// TestDescribeGolden pins the descriptions a reviewer reads: a first proposal, a re-proposal after
// the provider rotated its nonce (it says what changed, and keeps saying it on the next update),
// a provider that published no terms, and the proposal of request.yaml itself.
func TestDescribeGolden(t *testing.T) {
	prev := previousFacts()
	noTerms := testFacts()
	noTerms.Terms = nil
	request := testFacts()
	request.Request, request.NonceDigest, request.Terms = true, "", nil
	reproposed, err := Describe(testFacts(), &prev)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Describe(testFacts(), parseFacts(reproposed))
	if err != nil {
		t.Fatal(err)
	}
	if again != reproposed {
		t.Errorf("the next update of a re-proposal dropped what changed:\n%s", again)
	}
	for name, tc := range map[string]struct {
		f    Facts
		prev *Facts
	}{
		"first": {testFacts(), nil}, "reproposed": {testFacts(), &prev}, "no-terms": {noTerms, nil}, "request": {request, nil},
	} {
		got, err := Describe(tc.f, tc.prev)
		if err != nil {
			t.Fatal(err)
		}
		golden := "testdata/description-" + name + ".md"
		if *update {
			if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatal(err)
		}
		if got != string(want) {
			t.Errorf("%s: description differs from %s (go test -update rewrites it):\n%s", name, golden, got)
		}
	}
}
