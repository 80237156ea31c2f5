package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/gitpeer/gitpeer/cmd/gitpeer/internal/preflight"
	"github.com/gitpeer/gitpeer/cmd/gitpeer/internal/printer"
)

func newCheckCmd() *cobra.Command {
	kube := genericclioptions.NewConfigFlags(true)
	var (
		output *printer.Output
		o      preflight.Options
	)
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Check that the cluster of the current kubeconfig is ready for gitpeer (--pre: before installing)",
		Long: `check reports, one line each (✔ passed, ✗ failed, • information), whether the cluster of the
current kubeconfig runs gitpeer or, with --pre, can: the Kubernetes version (>= 1.30); without --pre,
gitpeer's CRDs (installed, serving the version this gitpeer reads), the agent Deployment in
--namespace (available) and every PeeringRepository (Ready); always, whether Liqo is installed and
its version (information: gitpeer works with or without it), whether the current user may create
what installing creates (SelfSubjectAccessReviews), and the kubernetes.io/kube-apiserver-client CSR
signer the provider's agent relies on: a recent CSR it issued, else "unknown". --sign-test has it
issue one instead: it creates a CSR labelled gitpeer.io/check (a 10-minute certificate of a
throwaway key), approves it, waits for the certificate and deletes the CSR. The exit code is
non-zero when a check failed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := output.Check(); err != nil {
				return err
			}
			cfg, err := kubeConfig(kube)
			if err != nil {
				return err
			}
			o.Namespace = *kube.Namespace
			report, err := preflight.Run(cmd.Context(), cfg, o)
			if err != nil {
				return err
			}
			if err := preflight.Print(cmd.OutOrStdout(), report, output.Format); err != nil {
				return err
			}
			if report.Failed > 0 {
				return fmt.Errorf("%d check(s) failed", report.Failed)
			}
			return nil
		},
	}
	*kube.Namespace = defaultNamespace
	kube.AddFlags(cmd.Flags())
	cmd.Flags().Lookup("namespace").Usage = "namespace of the agent"
	cmd.Flags().BoolVar(&o.Pre, "pre", false, "check only the prerequisites of an installation")
	cmd.Flags().BoolVar(&o.SignTest, "sign-test", false, "have the CSR signer issue a throwaway certificate (creates, approves and deletes a CSR)")
	output = printer.AddFlag(cmd, printer.Table, printer.JSON, printer.YAML)
	return cmd
}
