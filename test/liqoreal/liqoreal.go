// Package liqoreal runs Liqo's real authentication module on a test control
// plane: the liqo-auth-harness that `make tools` builds from Liqo's source
// (test/liqotools).
package liqoreal

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gitpeer/gitpeer/test/controlplane"
	"github.com/gitpeer/gitpeer/test/process"
)

// Ready is the line the harness prints once it serves (liqo-auth-harness/main.go).
const Ready = "liqo-auth-harness ready"

// replicatorReady is the line Liqo's CRD replicator logs before it starts its
// manager (liqotech/liqo v1.2.0 cmd/crd-replicator/main.go).
const replicatorReady = "Starting crdReplicator manager"

// Options are the settings a user sets in Liqo's Helm chart, passed as the
// chart passes them to Liqo's controller manager.
type Options struct {
	// ClusterID is Liqo's cluster ID (discovery.config.clusterID).
	ClusterID string
	// APIServer is apiServer.address (--api-server-address-override).
	APIServer string
	// CA is apiServer.ca (--ca-override), PEM; sent base64 as the chart does.
	CA []byte
	// TrustedCA is apiServer.trustedCA (--trusted-ca).
	TrustedCA bool
	// TLSCompatibilityMode is authentication.tlsCompatibilityMode: RSA keys.
	TLSCompatibilityMode bool
	// Replicator also runs Liqo's CRD replicator ($GITPEER_LIQO_REPLICATOR),
	// as Liqo's chart always does: it carries Renews, ResourceSlices and
	// NamespaceMaps to each peer through the control-plane kubeconfig Secret
	// Liqo's identity controller writes.
	Replicator bool
}

// Harness is a running liqo-auth-harness, and Liqo's CRD replicator if asked.
type Harness struct {
	proc       *process.Process
	replicator *process.Process
}

// Start installs Liqo's CRDs and chart objects on cp and runs Liqo's
// authentication module and Tenant webhooks against it, its log in dir, and
// returns once the harness has registered its webhooks. The binary is
// $GITPEER_LIQO_HARNESS or .cache/liqo/*/liqo-auth-harness; Liqo's source
// (its CRDs and ClusterRoles) is $GITPEER_LIQO_SRC, both set by the Makefile.
func Start(ctx context.Context, cp *controlplane.ControlPlane, dir string, o Options) (*Harness, error) {
	if o.ClusterID == "" {
		return nil, errors.New("liqoreal: Options.ClusterID is required")
	}
	bin, err := process.Find("GITPEER_LIQO_HARNESS", "liqo/*/liqo-auth-harness")
	if err != nil {
		return nil, err
	}
	src := os.Getenv("GITPEER_LIQO_SRC")
	if src == "" {
		return nil, errors.New("GITPEER_LIQO_SRC is not set: the Makefile sets it to Liqo's source (LIQO_SRC)")
	}
	ports, err := process.FreePorts(1)
	if err != nil {
		return nil, err
	}
	args := []string{"--kubeconfig=" + cp.KubeconfigPath, "--liqo-src=" + src, "--cluster-id=" + o.ClusterID,
		"--webhook-port=" + strconv.Itoa(ports[0]), "--webhook-cert-dir=" + dir,
		"--metrics-address=0", "--health-probe-address=0",
		"--tls-compatibility-mode=" + strconv.FormatBool(o.TLSCompatibilityMode)}
	if o.APIServer != "" {
		args = append(args, "--api-server-address-override="+o.APIServer)
	}
	if len(o.CA) > 0 {
		args = append(args, "--ca-override="+base64.StdEncoding.EncodeToString(o.CA))
	}
	if o.TrustedCA {
		args = append(args, "--trusted-ca")
	}
	p, err := run(ctx, exec.Command(bin, args...), dir, Ready, 2*time.Minute)
	if err != nil {
		return nil, err
	}
	h := &Harness{proc: p}
	if o.Replicator {
		if h.replicator, err = startReplicator(ctx, cp, dir, o.ClusterID); err != nil {
			h.Stop()
			return nil, err
		}
	}
	return h, nil
}

// startReplicator runs Liqo's CRD replicator on cp with the arguments Liqo's
// chart gives it (deployments/liqo/templates/liqo-crd-replicator-deployment.yaml:
// --cluster-id only); it finds the cluster through KUBECONFIG, as
// controller-runtime's GetConfig does outside a pod. Liqo's CRDs must be
// installed first: its REST mapper needs them.
func startReplicator(ctx context.Context, cp *controlplane.ControlPlane, dir, clusterID string) (*process.Process, error) {
	bin, err := process.Find("GITPEER_LIQO_REPLICATOR", "liqo/*/liqo-crd-replicator")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "--cluster-id="+clusterID, "--metrics-address=0")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+cp.KubeconfigPath)
	return run(ctx, cmd, dir, replicatorReady, time.Minute)
}

// run starts cmd, its log in dir named after the binary, and waits up to
// timeout for the line ready in its log.
func run(ctx context.Context, cmd *exec.Cmd, dir, ready string, timeout time.Duration) (*process.Process, error) {
	name := filepath.Base(cmd.Path)
	p, err := process.Start(name, cmd, filepath.Join(dir, name+".log"))
	if err != nil {
		return nil, err
	}
	if err := process.WaitUntil(ctx, timeout, 100*time.Millisecond, name+" ready", func(context.Context) error {
		if !strings.Contains(p.Log(), ready) {
			return errors.New("not ready yet")
		}
		return nil
	}, p); err != nil {
		p.Stop(5 * time.Second)
		return nil, fmt.Errorf("%w\n%s", err, p.Tail(40))
	}
	return p, nil
}

// Stop ends the replicator, then the harness, which unregisters its webhooks first.
func (h *Harness) Stop() {
	if h.replicator != nil {
		h.replicator.Stop(15 * time.Second)
	}
	h.proc.Stop(15 * time.Second)
}

// Log is the harness's output so far.
func (h *Harness) Log() string { return h.proc.Log() }

// PID is the harness process's ID, for its CPU time and memory in /proc.
func (h *Harness) PID() int { return h.proc.PID() }

// Exited reports whether the harness has ended, with its exit error.
func (h *Harness) Exited() (bool, error) { return h.proc.Exited() }
