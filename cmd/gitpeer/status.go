package main

import (
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/gitpeer/gitpeer/cmd/gitpeer/internal/printer"
	"github.com/gitpeer/gitpeer/cmd/gitpeer/internal/status"
)

func newStatusCmd() *cobra.Command {
	kube := genericclioptions.NewConfigFlags(true)
	var output *printer.Output
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the peerings of the cluster of the current kubeconfig",
		Long: `status lists the peerings the PeeringRepositories of the cluster (all namespaces unless -n is
given) report in their status (at most 50 each: those that need attention, then the most recently
changed) with its Tenant (provider role) or Identity (consumer role), the Tenant's condition and the
certificate's expiry; then the Tenants and Identities a PeeringRepository owns but does not list,
and any Tenant or Identity no PeeringRepository accounts for; then, per PeeringRepository, the
number of peerings by role and phase (-o wide adds the columns SINCE, OBJECT, CONDITION and
REASON; -o name prints the Tenants and Identities as kind.group/name); last, a warning for each PeeringRepository in a namespace
that none of the cluster's agent Deployments watches (their --watch-namespace), which no agent
acts on. The gitpeer_peering_phase metric has the phase of every peering.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := output.Check(); err != nil {
				return err
			}
			c, err := kubeClient(kube)
			if err != nil {
				return err
			}
			// Not the kubeconfig context's namespace: without -n, every namespace.
			report, err := status.Collect(cmd.Context(), c, *kube.Namespace)
			if err != nil {
				return err
			}
			return status.Print(cmd.OutOrStdout(), report, output.Format)
		},
	}
	kube.AddFlags(cmd.Flags())
	cmd.Flags().Lookup("namespace").Usage = "namespace of the PeeringRepositories (default: all namespaces)"
	output = printer.AddFlag(cmd, printer.Table, printer.JSON, printer.YAML, printer.Wide, printer.Name)
	return cmd
}
