package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// cliVersion is the version of this binary (resolveVersion).
func cliVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		return resolveVersion(version, info)
	}
	return version
}

// versionLine is what `gitpeer version` and `gitpeer --version` print.
func versionLine() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return fmt.Sprintf("gitpeer %s (unknown)", version)
	}
	return fmt.Sprintf("gitpeer %s (%s)", resolveVersion(version, info), info.GoVersion)
}

// resolveVersion returns the version stamped by -ldflags; for an unstamped
// build, the module's version from the build info (vX for `go install
// github.com/gitpeer/gitpeer/cmd/gitpeer@vX`), else the commit the build info
// records (dev-<12 hex>[-dirty], as the Makefile stamps builds off a tag).
func resolveVersion(stamped string, info *debug.BuildInfo) string {
	if stamped != "dev" {
		return stamped
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var revision, dirty string
	for _, s := range info.Settings {
		switch {
		case s.Key == "vcs.revision":
			revision = s.Value
		case s.Key == "vcs.modified" && s.Value == "true":
			dirty = "-dirty"
		}
	}
	if revision == "" {
		return stamped
	}
	return "dev-" + revision[:min(12, len(revision))] + dirty
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the gitpeer version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), versionLine())
			return err
		},
	}
}
