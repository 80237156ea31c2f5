// Command gitpeer runs Liqo's inter-cluster authentication handshake through a
// shared Git repository: the agent (a Kubernetes controller manager) and
// offline tools for the repository's CI and its reviewers.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	if err := newRootCmd().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "gitpeer",
		Short:         "Peer Kubernetes clusters with Liqo's authentication handshake, through Git",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(
		newVersionCmd(),
		newVerifyCmd(),
		newAuditCmd(),
		newRecordsCmd(),
		newStatusCmd(),
		newCAHashCmd(),
		newRequestCmd(),
		newRevokeCmd(),
		newAgentCmd(),
		newInitCmd(),
		newCheckCmd(),
	)
	// --version prints what `gitpeer version` prints.
	root.Version = versionLine()
	root.SetVersionTemplate("{{.Version}}\n")
	// Flux's habits: reconcile, suspend and resume a PeeringRepository.
	root.AddCommand(newReconcileCmd(), newSuspendCmd(), newResumeCmd())
	return root
}
