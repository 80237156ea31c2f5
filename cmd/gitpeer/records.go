package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gitpeer/gitpeer/cmd/gitpeer/internal/printer"
	"github.com/gitpeer/gitpeer/cmd/gitpeer/internal/records"
)

func newRecordsCmd() *cobra.Command {
	var (
		opts                   records.Options
		name, namespace, owner string
		output                 *printer.Output
		agentKeys              []string
	)
	cmd := &cobra.Command{
		Use:   "records PATH --provider CLUSTER_ID --name PEERINGREPOSITORY --namespace NS",
		Short: "Rebuild a provider's records of issued and revoked certificates from the history of a full checkout",
		Long: `records prints the Secrets gitpeer-records-<PeeringRepository>-<shard> (a List) as the provider's
agent writes them, rebuilt from the history of the branch (default main) of the full checkout at PATH
(the agent's own clone is shallow), read in the order of the commit graph, never of commit dates. For
each consumer: every certificate found in an identity.yaml ever committed (serial and expiry read from
the certificate) and, with --agent-key, in the Gitpeer-Serial/Gitpeer-Expires trailers of the agent's
signed identity commits; revoked if tenant.yaml left the branch or a revoke commit came at or after
it; and the key pin of the Tenant at its last signed issue-identity commit (without --agent-key: the
Tenant beside its last identity.yaml that certifies that Tenant's key, unverified). Nothing a commit
says removes a certificate: each leaves the records only when its own expiry has passed.

Give --agent-key (the public key of the provider's spec.commit.signingKey): without it no commit is
proven to be the agent's, no trailer is believed, and the pins are unverified. Apply the output with
kubectl after losing the provider's cluster state, before the agent runs again; without these Secrets
the agent forgets revocations and key pins. Only the agent may write them (admission policy
gitpeer-records): delete the ValidatingAdmissionPolicyBinding gitpeer-records first and apply the
install again afterwards. Revocations the agent made without a commit (deletionPolicy Revoke) are not
in Git. What it cannot read or verify is reported on stderr.`,
		Example: `  kubectl delete validatingadmissionpolicybinding gitpeer-records
  gitpeer records . --provider provider-a --name peering --namespace gitpeer-system --agent-key agent.pub \
    --owner-uid "$(kubectl -n gitpeer-system get peeringrepository peering -o jsonpath='{.metadata.uid}')" | kubectl apply -f -
  kubectl apply -k config/default`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if output.Format == printer.Table {
				output.Format = printer.YAML
			}
			if err := output.Check(); err != nil {
				return err
			}
			var err error
			if opts.AgentKeys, err = loadAgentKeys(agentKeys); err != nil {
				return err
			}
			res, err := records.Rebuild(args[0], opts)
			if err != nil {
				return err
			}
			for _, w := range res.Warnings {
				fmt.Fprintln(cmd.ErrOrStderr(), "Warning:", w)
			}
			if len(res.Records) == 0 {
				return fmt.Errorf("no identity of provider %s on branch %s (path %q): nothing to record", opts.Provider, opts.Branch, opts.Path)
			}
			secrets, err := records.Secrets(namespace, name, types.UID(owner), res.Records, time.Now())
			if err != nil {
				return err
			}
			return printer.WriteObject(cmd.OutOrStdout(), output.Format, records.NewList(secrets))
		},
	}
	cmd.Flags().StringVar(&opts.Provider, "provider", "", "the provider's cluster ID (PeeringRepository spec.clusterID)")
	cmd.Flags().StringVar(&name, "name", "", "name of the provider's PeeringRepository")
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "", "namespace of the PeeringRepository (the agent's namespace)")
	cmd.Flags().StringVar(&owner, "owner-uid", "", "UID of the PeeringRepository, for the gitpeer.io/owner label (default: none; the agent adds it at its next write)")
	cmd.Flags().StringVar(&opts.Branch, "branch", "main", "the authoritative branch")
	cmd.Flags().StringVar(&opts.Path, "path", "", "peering root inside the repository (PeeringRepository spec.path)")
	output = printer.AddFlag(cmd, printer.YAML, printer.YAML, printer.JSON, printer.Name)
	cmd.Flags().StringArrayVar(&agentKeys, "agent-key", nil, agentKeyUsage)
	for _, f := range []string{"provider", "name", "namespace"} {
		_ = cmd.MarkFlagRequired(f)
	}
	return cmd
}
