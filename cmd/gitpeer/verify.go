package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gitpeer/gitpeer/cmd/gitpeer/internal/printer"
	"github.com/gitpeer/gitpeer/cmd/gitpeer/internal/verify"
)

// errInvalid and errNothingChecked make the command exit non-zero once its report is printed.
var (
	errInvalid        = errors.New("invalid files found")
	errNothingChecked = errors.New("nothing checked")
)

func newVerifyCmd() *cobra.Command {
	var (
		opts       verify.Options
		output     *printer.Output
		verbose    bool
		allowEmpty bool
	)
	cmd := &cobra.Command{
		Use:   "verify REPOSITORY",
		Short: "Check a commit of a peering repository offline, for its CI",
		Long: `verify checks every file of a commit of a peering repository (HEAD, or --revision) with the
agent's own reading and rules: it reads the commit's Git tree, not the working tree, with the
agent's code (file modes, duplicate or unsorted tree entries, size and count caps, strict
decoding, IDs in paths versus contents, kustomize builds), then checks Tenant signatures
against the nonce committed beside them, the request key, CSR rules, and Identity certificates
against their CA and the Tenant's key. A line per peering directory (its path ends in "/") gives
the provider's verdict: it issues, revokes, fails closed (a kustomization that yields no valid
Tenant) or skips. Rules that need the provider's cluster state (the nonce in its Secret, the
pinned key, revoked serials) are reported as checked by the provider. It needs no cluster and
no network, and exits 0 only when every file is valid and at least one was checked (a --path
that matches nothing fails, unless --allow-empty, for a repository that has no peers yet). It
warns, on standard error, of uncommitted changes under the path: they are not what it checked.

With --base, the commit is judged as the head of a pull request into --base, as the check a
reviewer relies on: every path it changes since their merge base (by Git trees, in the whole
repository) must be the proposing consumer's own request.yaml or tenant.yaml, in one
<path>/<providerID>/<consumerID> directory; anything else (a kustomization.yaml, nonce.yaml,
identity.yaml, terms.yaml, another consumer's files, CI workflows, CODEOWNERS) fails. It prints
the commit it judged first: post a status on that commit, never on a branch name.`,
		Example: `  gitpeer verify .
  gitpeer verify --base origin/main --revision "$PR_HEAD_SHA" .
  gitpeer verify --revision origin/main --path peers -o json .`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := output.Check(); err != nil {
				return err
			}
			rep, err := verify.Check(args[0], opts)
			if err != nil {
				return err
			}
			judged := cmd.OutOrStdout()
			if output.Format != printer.Table {
				judged = cmd.ErrOrStderr() // keep the structured output parseable
			}
			if err := verify.PrintJudged(judged, rep, opts.Base); err != nil {
				return err
			}
			if err := verify.Print(cmd.OutOrStdout(), rep.Results, output.Format, verbose); err != nil {
				return err
			}
			// A CI job that checks nothing must not pass: a wrong --path would let every pull
			// request through. Edits not committed are named so no one takes them as checked.
			if changed, err := verify.Uncommitted(args[0], opts); err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: cannot tell whether the working tree has uncommitted changes: %v\n", err)
			} else if len(changed) > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: %d uncommitted change(s) not checked (verify reads the commit, not the working tree), e.g. %s\n", len(changed), changed[0])
			}
			if n := verify.Invalid(rep.Results); n > 0 {
				return fmt.Errorf("%w: %d", errInvalid, n)
			}
			if checked, _, _ := verify.Count(rep.Results); checked == 0 && !allowEmpty {
				return fmt.Errorf("%w: no gitpeer file under path %q of %s: check --path (the PeeringRepository's spec.path), or pass --allow-empty for a repository with no peers yet", errNothingChecked, opts.Path, revisionName(opts.Revision))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&opts.Path, "path", "", "peering root inside the repository (PeeringRepository spec.path)")
	cmd.Flags().StringVar(&opts.Revision, "revision", "", "commit to check: a branch, tag or hash (default HEAD)")
	cmd.Flags().StringVar(&opts.Base, "base", "", "judge the commit as a pull request into this branch, tag or hash: it may change only its consumer's request.yaml and tenant.yaml")
	output = printer.AddFlag(cmd, printer.Table, printer.JSON, printer.YAML)
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "also list the files gitpeer ignores")
	cmd.Flags().BoolVar(&allowEmpty, "allow-empty", false, "exit 0 when no gitpeer file is found (a repository with no peers yet)")
	return cmd
}

// revisionName names the revision verify checked, HEAD when none was given.
func revisionName(rev string) string {
	if rev == "" {
		return "HEAD"
	}
	return rev
}
