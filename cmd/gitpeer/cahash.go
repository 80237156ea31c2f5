package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/gitpeer/gitpeer/crypto"
)

func newCAHashCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "ca-hash FILE",
		Short: "Print the hash of each CA certificate of a PEM bundle, for a consumer's spec.consumer.trustedCAs",
		Long: `Print, for each certificate of the PEM CA bundle FILE ("-" for standard input),
the hash a consumer anchors a provider by in spec.consumer.trustedCAs[].caCertHashes:
"sha256:" and the hex SHA-256 of the certificate's SubjectPublicKeyInfo, as kubeadm join's
--discovery-token-ca-cert-hash. Run it on the provider, over the CA its agent puts in
Identities: the cluster CA (/etc/kubernetes/pki/ca.crt on kubeadm clusters, the
certificate-authority-data of an admin kubeconfig) or the ca.crt of spec.provider.caSecretRef.
The same as: openssl x509 -in FILE -noout -pubkey | openssl pkey -pubin -outform DER | sha256sum`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var data []byte
			var err error
			if args[0] == "-" {
				data, err = io.ReadAll(cmd.InOrStdin())
			} else {
				data, err = os.ReadFile(args[0])
			}
			if err != nil {
				return err
			}
			hashes, err := crypto.CACertHashes(data)
			if err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			for _, h := range hashes {
				if _, err := fmt.Fprintln(cmd.OutOrStdout(), h); err != nil {
					return err
				}
			}
			return nil
		},
	}
}
