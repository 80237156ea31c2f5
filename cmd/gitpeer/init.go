package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/gitpeer/gitpeer/cmd/gitpeer/internal/scaffold"
)

func newInitCmd() *cobra.Command {
	var (
		providers []string
		branch    string
		force     bool
	)
	cmd := &cobra.Command{
		Use:   "init [DIR]",
		Short: "Scaffold a peering repository: provider folders, CODEOWNERS, the CI workflow, a README",
		Long: `init writes the files of a new peering repository into DIR (default: the current directory):
a folder per --provider (with a README; its agent publishes terms.yaml there), a CODEOWNERS giving
each provider's team its folder and the repository's owners CODEOWNERS and .github/, the GitHub
Actions workflow .github/workflows/verify.yaml running ` + "`gitpeer verify`" + ` pinned to this gitpeer's
release (a development build pins the release of its source tree, and says so), and a README with
the layout and the branch protection to set. It refuses to overwrite files unless --force, never
runs git, and prints what it wrote and what to do next.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			cli := cliVersion()
			release, ok := scaffold.ReleaseVersion(cli)
			if !ok {
				release = scaffold.ExampleVersion()
				fmt.Fprintf(cmd.ErrOrStderr(), "gitpeer %s is a development build: the workflow pins %s, the release of its source tree\n", cli, release)
			}
			files, err := scaffold.Files(scaffold.Options{Providers: providers, Branch: branch, Version: release})
			if err != nil {
				return err
			}
			wrote, err := scaffold.Write(dir, files, force)
			if err != nil {
				return err
			}
			return printNextSteps(cmd.OutOrStdout(), dir, branch, release, wrote)
		},
	}
	cmd.Flags().StringArrayVar(&providers, "provider", nil, "cluster ID of a provider whose folder to create (repeatable; at least one)")
	cmd.Flags().StringVar(&branch, "branch", "main", "the branch the agents read (spec.branch)")
	cmd.Flags().BoolVar(&force, "force", false, "overwrite files that exist")
	return cmd
}

func printNextSteps(w io.Writer, dir, branch, release string, wrote []string) error {
	for _, p := range wrote {
		if _, err := fmt.Fprintln(w, "wrote", p); err != nil {
			return err
		}
	}
	docs := "https://github.com/gitpeer/gitpeer/blob/" + release
	gitInit := "" // a directory that is not yet a Git repository needs `git init`, and a remote
	if _, err := os.Stat(filepath.Join(dir, ".git")); err != nil {
		gitInit = fmt.Sprintf("git -C %q init -b %s && git -C %[1]q remote add origin <URL> && ", dir, branch)
	}
	_, err := fmt.Fprintf(w, `
Next steps:
1. Replace the example teams (@example-org/...) in %[1]s with yours.
2. Commit and push %[2]s:
     %[5]sgit -C %[3]q add . && git -C %[3]q commit -m "Peering repository" && git -C %[3]q push origin %[2]s
3. Protect %[2]s: require a pull request and a review from code owners (stale approvals dismissed),
   and let only the provider agents push to it (%[4]s/examples/forge/README.md).
4. Require the status check gitpeer/verify, from GitHub Actions. (It fails on %[2]s until a
   provider's agent has published its terms.yaml: there is nothing to verify before.)
5. Check each cluster (gitpeer check --pre), install the agent, and give each a
   PeeringRepository with spec.branch %[2]s (%[4]s/docs/quickstart.md).
`, filepath.Join(dir, scaffold.CodeownersPath), branch, dir, docs, gitInit)
	return err
}
