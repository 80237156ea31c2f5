package main

import (
	"runtime/debug"
	"strings"
	"testing"
)

// TestVersionFlag checks that --version prints what the version command prints.
func TestVersionFlag(t *testing.T) {
	flag, _, err := runGitpeer("--version")
	if err != nil {
		t.Fatal(err)
	}
	cmd, _, err := runGitpeer("version")
	if err != nil {
		t.Fatal(err)
	}
	if flag != cmd || !strings.HasPrefix(flag, "gitpeer ") || !strings.HasSuffix(flag, ")\n") {
		t.Errorf("--version printed %q, version %q", flag, cmd)
	}
}

func TestResolveVersion(t *testing.T) {
	settings := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	const rev = "0123456789abcdef0123456789abcdef01234567"
	for _, tc := range []struct {
		name, stamped string
		info          debug.BuildInfo
		want          string
	}{
		{"stamped by the Makefile", "0.1.0-41e8d81", debug.BuildInfo{Main: debug.Module{Version: "v0.1.0"}}, "0.1.0-41e8d81"},
		{"go install @v0.1.0", "dev", debug.BuildInfo{Main: debug.Module{Version: "v0.1.0"}, Settings: settings("vcs.revision", rev)}, "v0.1.0"},
		{"built in a checkout", "dev", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: settings("vcs.revision", rev, "vcs.modified", "false")}, "dev-0123456789ab"},
		{"built in a modified checkout", "dev", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: settings("vcs.revision", rev, "vcs.modified", "true")}, "dev-0123456789ab-dirty"},
		{"no VCS information", "dev", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "dev"},
	} {
		if got := resolveVersion(tc.stamped, &tc.info); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}
