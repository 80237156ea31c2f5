package main

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestDemo runs the demo's whole code path: real control planes, a real Git
// server, two agents, the merge, the proof, the audit trail (by the gitpeer
// binary) and the revocation.
func TestDemo(t *testing.T) {
	runAndCheck(t, false,
		"proposed its Tenant on branch gitpeer/provider/consumer",
		"provider verified the Tenant, signed its CSR and committed identity.yaml",
		"consumer verified identity.yaml and wrote its kubeconfig Secret",
		"provider deleted the Tenant and its RoleBinding")
}

// TestDemoLiqo runs the demo with --liqo: Liqo's own authentication module on both clusters,
// both agents in Liqo mode; Liqo issues and writes the kubeconfig.
func TestDemoLiqo(t *testing.T) {
	runAndCheck(t, true,
		`provider: Liqo's authentication module running: cluster ID "provider"`,
		`consumer: Liqo's authentication module running: cluster ID "consumer"`,
		"Liqo's tenant controller issued; provider committed identity.yaml",
		"Liqo's identity controller wrote the kubeconfig Secret",
		"of them Liqo's tenant controller's: 1",
		"a ResourceSlice signed by the consumer's Liqo: Accepted by the provider's Liqo")
}

// runAndCheck builds gitpeer, runs the demo (in Liqo mode with liqoMode) and
// checks its output holds the steps both modes share and the extra lines.
func runAndCheck(t *testing.T, liqoMode bool, extra ...string) {
	if testing.Short() {
		t.Skip("starts two control planes")
	}
	gitpeer := filepath.Join(t.TempDir(), "gitpeer")
	if out, err := exec.Command("go", "build", "-o", gitpeer, "github.com/gitpeer/gitpeer/cmd/gitpeer").CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/gitpeer: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var out bytes.Buffer
	if err := runDemo(ctx, &out, gitpeer, false, liqoMode); err != nil {
		t.Fatalf("demo failed: %v\n%s", err, out.String())
	}
	t.Log(out.String())
	for _, want := range append([]string{
		"provider control plane ready",
		"consumer requested the peering on branch gitpeer/provider/consumer",
		"reviewer merged request.yaml into main",
		"provider issued a nonce",
		"In real life a person reviews the pull request",
		"reviewer merged tenant.yaml into main",
		"Issue identity of consumer on provider (serial",
		`user "consumer", groups [liqo.io system:authenticated]`,
		"may I create resourceslices in liqo-tenant-consumer?  yes",
		"list Secrets in all namespaces?             denied: Forbidden",
		"Audit trail (gitpeer audit",
		"approved",
		"Rita Reviewer",
		"Revoke identity of consumer on provider",
		"the old kubeconfig may no longer create resourceslices: no",
		"consumer deleted its Identity and kubeconfig Secret",
	}, extra...) {
		if !bytes.Contains(out.Bytes(), []byte(want)) {
			t.Errorf("demo output lacks %q", want)
		}
	}
	// Nothing the demo started outlives it.
	if out, err := exec.Command("pgrep", "-f", "gitpeer-demo-").Output(); err == nil {
		t.Errorf("processes left running:\n%s", out)
	}
}
