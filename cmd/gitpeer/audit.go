package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/gitpeer/gitpeer/cmd/gitpeer/internal/audit"
	"github.com/gitpeer/gitpeer/cmd/gitpeer/internal/printer"
)

func newAuditCmd() *cobra.Command {
	var (
		opts          audit.Options
		since, output string
	)
	cmd := &cobra.Command{
		Use:   "audit PATH",
		Short: "Print the handshake timeline from the git log of a peering repository checkout",
		Long: `audit reads the history of the branch (default main, following merges) of the checkout at PATH:
requests, nonces, proposed Tenants, approvals (the merge commit that brought tenant.yaml to the
branch and who made it), identities issued and renewed (serial, expiry) and revocations.`,
		Example: `  gitpeer audit .
  gitpeer audit --consumer consumer-1 --since 720h -o json .`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := printer.CheckFormat(output, printer.JSON, printer.YAML); err != nil {
				return err
			}
			var err error
			if opts.Since, err = parseSince(since, time.Now()); err != nil {
				return err
			}
			events, err := audit.Read(args[0], opts)
			if err != nil {
				return err
			}
			return audit.Print(cmd.OutOrStdout(), events, output)
		},
	}
	cmd.Flags().StringVar(&opts.Branch, "branch", "main", "the authoritative branch")
	cmd.Flags().StringVar(&opts.Path, "path", "", "peering root inside the repository (PeeringRepository spec.path)")
	cmd.Flags().StringVar(&opts.Provider, "provider", "", "only events of this provider cluster ID")
	cmd.Flags().StringVar(&opts.Consumer, "consumer", "", "only events of this consumer cluster ID")
	cmd.Flags().StringVar(&since, "since", "", "only events from this time on: RFC 3339, YYYY-MM-DD, or a duration back from now (72h)")
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: json or yaml (default: table)")
	return cmd
}

// parseSince accepts an RFC 3339 time, a date, or a duration before now.
func parseSince(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339, time.DateOnly} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("--since %q is neither an RFC 3339 time, a YYYY-MM-DD date nor a duration", s)
}
