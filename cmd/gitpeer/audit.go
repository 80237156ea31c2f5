package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/gitpeer/gitpeer/cmd/gitpeer/internal/audit"
	"github.com/gitpeer/gitpeer/cmd/gitpeer/internal/printer"
	"github.com/gitpeer/gitpeer/gitsync"
)

func newAuditCmd() *cobra.Command {
	var (
		opts      audit.Options
		since     string
		output    *printer.Output
		agentKeys []string
	)
	cmd := &cobra.Command{
		Use:   "audit PATH",
		Short: "Print the handshake timeline from the git log of a peering repository checkout",
		Long: `audit reads the history of the branch (default main, following merges) of the checkout at PATH:
requests, nonces, proposed Tenants, approvals (the merge commit that brought tenant.yaml to the
branch and who made it), identities issued and renewed (serial, expiry) and revocations, in the
order of the commit graph (parents before children), never of the dates commits carry.

SOURCE says how much of each event is proven: "agent" for the Gitpeer-* trailers of a commit
signed with the agent's key (--agent-key, the public key of spec.commit.signingKey); "claim" for
trailers on any other commit (anyone who can push may write them, and its author and date);
"branch" for what a commit of the branch's first-parent chain changed (tenant.yaml added, changed
or removed, request.yaml added by a person). Dates are the commits' own, vouched for only by "agent".
-o wide adds the committer, whether the commit is a merge, and the whole commit hash.`,
		Example: `  gitpeer audit .
  gitpeer audit --consumer consumer-1 --since 720h -o json .`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := output.Check(); err != nil {
				return err
			}
			var err error
			if opts.Since, err = parseSince(since, time.Now()); err != nil {
				return err
			}
			if opts.AgentKeys, err = loadAgentKeys(agentKeys); err != nil {
				return err
			}
			if opts.AgentKeys == nil {
				fmt.Fprintln(cmd.ErrOrStderr(), "Note: no --agent-key: every agent trailer is shown as a claim (SOURCE claim), not as the agent's")
			}
			events, err := audit.Read(args[0], opts)
			if err != nil {
				return err
			}
			return audit.Print(cmd.OutOrStdout(), events, output.Format)
		},
	}
	cmd.Flags().StringVar(&opts.Branch, "branch", "main", "the authoritative branch")
	cmd.Flags().StringVar(&opts.Path, "path", "", "peering root inside the repository (PeeringRepository spec.path)")
	cmd.Flags().StringVar(&opts.Provider, "provider", "", "only events of this provider cluster ID")
	cmd.Flags().StringVar(&opts.Consumer, "consumer", "", "only events of this consumer cluster ID")
	cmd.Flags().StringVar(&since, "since", "", "events from the first one (in graph order) dated at or after this time: RFC 3339, YYYY-MM-DD, or a duration back from now (72h)")
	cmd.Flags().StringArrayVar(&agentKeys, "agent-key", nil, agentKeyUsage)
	output = printer.AddFlag(cmd, printer.Table, printer.JSON, printer.YAML, printer.Wide)
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

// agentKeyUsage documents --agent-key of audit and records.
const agentKeyUsage = "file with the public key of the agent's commit signing key (spec.commit.signingKey): an armored OpenPGP public key, " +
	"or SSH public keys in authorized_keys format, as in the spec.verify Secret; repeatable. Trailers are believed only on commits it signed"

// loadAgentKeys reads the --agent-key files; none gives nil.
func loadAgentKeys(files []string) (*gitsync.TrustedKeys, error) {
	if len(files) == 0 {
		return nil, nil
	}
	data := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("--agent-key: %w", err)
		}
		data[f] = b
	}
	keys, err := gitsync.ParseTrustedKeys(data)
	if err != nil {
		return nil, fmt.Errorf("--agent-key: %w", err)
	}
	if len(keys.SSH) == 0 && len(keys.OpenPGP) == 0 {
		return nil, fmt.Errorf("--agent-key: no public key in %v", files)
	}
	return keys, nil
}
