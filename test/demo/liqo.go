package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	certificatesv1 "k8s.io/api/certificates/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/test/liqo"
	"github.com/gitpeer/gitpeer/test/sandbox"
)

// installLiqo installs the Liqo test double on c (test/liqo: Liqo's cluster
// ID and key, its authentication controllers and Tenant webhook, run by this
// process) as Liqo's chart would, so that the agent runs in Liqo mode.
func (d *demo) installLiqo(ctx context.Context, c *sandbox.Cluster) error {
	if err := liqo.AdoptRemoteControlPlaneRole(ctx, c.Client); err != nil {
		return err
	}
	double, err := liqo.New(ctx, c.Client, liqo.Options{ClusterID: c.ID, APIServer: c.CP.URL})
	if err != nil {
		return fmt.Errorf("installing Liqo's double on %s: %w", c.ID, err)
	}
	logFile, err := os.Create(filepath.Join(d.dir, c.ID, "liqo.log"))
	if err != nil {
		return err
	}
	d.cleanup = append(d.cleanup, func() { logFile.Close() })
	logger := zap.New(zap.WriteTo(logFile))
	// controller-runtime's work queues log through its global logger.
	ctrl.SetLogger(logger)
	stop, err := double.Start(ctx, c.CP.Config, liqo.RunOptions{Scheme: sandbox.Scheme, Logger: logger})
	if err != nil {
		return err
	}
	d.cleanup = append(d.cleanup, func() { _ = stop() })
	d.doubles[c.ID] = double
	d.step("%s: Liqo (test double) installed: cluster ID %q, key %s, its authentication controllers running", c.ID, c.ID, crypto.KeyType(double.Key.Public()))
	return nil
}

// showLiqo shows what Liqo mode changed: the provider's only CSRs are Liqo's,
// the Tenant carries the consumer's Liqo key, so the ResourceSlices the
// consumer's Liqo signs pass the provider's check.
func (d *demo) showLiqo(ctx context.Context, provider *sandbox.Cluster) error {
	fmt.Fprintf(d.out, "\nWhat Liqo did (gitpeer moved the files and gated the approval):\n")
	var csrs certificatesv1.CertificateSigningRequestList
	if err := provider.Client.List(ctx, &csrs); err != nil {
		return err
	}
	liqoCSRs := 0
	for _, csr := range csrs.Items {
		if _, ok := csr.Labels[liqo.TenantCSRLabel]; ok {
			liqoCSRs++
		}
	}
	fmt.Fprintf(d.out, "  CSRs on the provider:                        %d, of them Liqo's tenant controller's: %d\n", len(csrs.Items), liqoCSRs)
	tenant := &authv1beta1.Tenant{}
	if err := provider.Client.Get(ctx, client.ObjectKey{Namespace: authv1beta1.TenantNamespaceName(demoConsumer), Name: demoConsumer}, tenant); err != nil {
		return err
	}
	csr, err := liqo.ResourceSliceCSR(d.doubles[demoConsumer].Key, "slice-1", demoConsumer)
	if err != nil {
		return err
	}
	sliceErr := liqo.CheckResourceSliceCSR(tenant, "slice-1", csr)
	fmt.Fprintf(d.out, "  a ResourceSlice signed by the consumer's Liqo: %s\n", map[bool]string{true: "accepted (Tenant key = Liqo's key)", false: "refused"}[sliceErr == nil])
	if liqoCSRs != len(csrs.Items) || liqoCSRs == 0 || sliceErr != nil {
		return errors.New("in Liqo mode Liqo must issue every certificate and the Tenant must carry Liqo's key")
	}
	return nil
}
