package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	"github.com/gitpeer/gitpeer/crypto"
	"github.com/gitpeer/gitpeer/test/liqo"
	"github.com/gitpeer/gitpeer/test/liqoreal"
	"github.com/gitpeer/gitpeer/test/sandbox"
)

// installLiqo runs Liqo's own authentication module on c (test/liqoreal: the
// liqo-auth-harness built from Liqo's source by make tools), which installs
// what Liqo's chart installs for it, so that the agent runs in Liqo mode.
func (d *demo) installLiqo(ctx context.Context, c *sandbox.Cluster) error {
	h, err := liqoreal.Start(ctx, c.CP, filepath.Join(d.dir, c.ID), liqoreal.Options{ClusterID: c.ID, APIServer: c.CP.URL})
	if err != nil {
		return fmt.Errorf("starting Liqo's authentication module on %s: %w", c.ID, err)
	}
	d.cleanup = append(d.cleanup, h.Stop)
	key, err := liqo.ClusterKey(ctx, c.Client, liqo.DefaultNamespace)
	if err != nil {
		return err
	}
	d.step("%s: Liqo's authentication module running: cluster ID %q, key %s", c.ID, c.ID, crypto.KeyType(key.Public()))
	return nil
}

var resourceSlices = schema.GroupVersionResource{Group: "authentication.liqo.io", Version: "v1beta1", Resource: "resourceslices"}

// showLiqo shows what Liqo mode changed: the provider's only CSRs are Liqo's,
// and the Tenant carries the consumer's Liqo key, so a ResourceSlice the
// consumer's Liqo signs, created with the consumer's kubeconfig as Liqo's CRD
// replicator would, is accepted by the provider's Liqo.
func (d *demo) showLiqo(ctx context.Context, provider, consumer *sandbox.Cluster, kubeconfig []byte) error {
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
	decision, err := d.authenticateSlice(ctx, consumer, kubeconfig)
	if err != nil {
		return err
	}
	fmt.Fprintf(d.out, "  a ResourceSlice signed by the consumer's Liqo: %s by the provider's Liqo\n", decision)
	if liqoCSRs != len(csrs.Items) || liqoCSRs == 0 || decision != "Accepted" {
		return errors.New("in Liqo mode Liqo must issue every certificate and the Tenant must carry Liqo's key")
	}
	return nil
}

// authenticateSlice creates ResourceSlice slice-1 in the provider's tenant
// namespace with kubeconfig, its CSR signed by the consumer's Liqo key, and
// returns the provider's Liqo decision (its Authentication condition).
func (d *demo) authenticateSlice(ctx context.Context, consumer *sandbox.Cluster, kubeconfig []byte) (string, error) {
	key, err := liqo.ClusterKey(ctx, consumer.Client, liqo.DefaultNamespace)
	if err != nil {
		return "", err
	}
	csr, err := liqo.ResourceSliceCSR(key, "slice-1", demoConsumer)
	if err != nil {
		return "", err
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		return "", err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return "", err
	}
	slices := dyn.Resource(resourceSlices).Namespace(authv1beta1.TenantNamespaceName(demoConsumer))
	// The origin and replicated labels of Liqo's CRD replicator (liqotech/liqo v1.2.0 pkg/consts/replication.go).
	if _, err := slices.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": resourceSlices.GroupVersion().String(), "kind": "ResourceSlice",
		"metadata": map[string]any{"name": "slice-1", "labels": map[string]any{
			"liqo.io/originID": demoConsumer, "liqo.io/remoteID": demoProvider, "liqo.io/replicated": "true"}},
		"spec": map[string]any{"consumerClusterID": demoConsumer, "providerClusterID": demoProvider, "class": "default",
			"csr": base64.StdEncoding.EncodeToString(csr)},
	}}, metav1.CreateOptions{}); err != nil {
		return "", err
	}
	var decision string
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		slice, err := slices.Get(ctx, "slice-1", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		conditions, _, _ := unstructured.NestedSlice(slice.Object, "status", "conditions")
		for _, c := range conditions {
			if c, ok := c.(map[string]any); ok && c["type"] == "Authentication" {
				decision, _ = c["status"].(string)
			}
		}
		return decision != "", nil
	})
	return decision, err
}
