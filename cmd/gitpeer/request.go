package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/gitpeer/gitpeer/cmd/gitpeer/internal/edit"
)

// peeringFlags adds the --provider, --consumer and --path flags shared by request and revoke.
func peeringFlags(cmd *cobra.Command, p *edit.CheckoutDir) {
	cmd.Flags().StringVar(&p.Provider, "provider", "", "provider cluster ID")
	cmd.Flags().StringVar(&p.Consumer, "consumer", "", "consumer cluster ID")
	cmd.Flags().StringVar(&p.Root, "path", "", "peering root inside the checkout (PeeringRepository spec.path)")
	_ = cmd.MarkFlagRequired("provider")
	_ = cmd.MarkFlagRequired("consumer")
}

func newRequestCmd() *cobra.Command {
	var (
		p       edit.CheckoutDir
		keyFile string
	)
	cmd := &cobra.Command{
		Use:   "request --provider P --consumer C --public-key FILE PATH",
		Short: "Write a consumer's request.yaml into a local checkout and print how to commit it",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			key, err := os.ReadFile(keyFile)
			if err != nil {
				return err
			}
			p.Checkout = args[0]
			out, err := edit.Request(p, key)
			if err != nil {
				return err
			}
			_, err = fmt.Fprint(cmd.OutOrStdout(), "request.yaml written; commit it (nothing was pushed):\n", out)
			return err
		},
	}
	peeringFlags(cmd, &p)
	cmd.Flags().StringVar(&keyFile, "public-key", "", "the consumer cluster's public key (PEM PUBLIC KEY; a PEM private key is reduced to its public half)")
	_ = cmd.MarkFlagRequired("public-key")
	return cmd
}

func newRevokeCmd() *cobra.Command {
	var p edit.CheckoutDir
	cmd := &cobra.Command{
		Use:   "revoke --provider P --consumer C PATH",
		Short: "Delete a consumer's tenant.yaml from a local checkout and print how to propose it",
		Long: `revoke deletes <provider>/<consumer>/tenant.yaml and drops it from the resources of a
kustomization.yaml beside it (deleting a kustomization left with no resources or components, which
would build nothing), then prints the git commands of a revoking pull request. It never pushes.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p.Checkout = args[0]
			out, err := edit.Revoke(p)
			if err != nil {
				return err
			}
			_, err = fmt.Fprint(cmd.OutOrStdout(), "tenant.yaml deleted; commit and propose it (nothing was pushed):\n", out)
			return err
		},
	}
	peeringFlags(cmd, &p)
	return cmd
}
