// Package liqoreal runs Liqo's real authentication module on a test control
// plane: the liqo-auth-harness that `make tools` builds from Liqo's source
// (test/liqotools), a drop-in alternative to the double of test/liqo.
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
}

// Harness is a running liqo-auth-harness.
type Harness struct {
	proc *process.Process
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
	p, err := process.Start("liqo-auth-harness", exec.Command(bin, args...), filepath.Join(dir, "liqo-auth-harness.log"))
	if err != nil {
		return nil, err
	}
	h := &Harness{proc: p}
	if err := process.WaitUntil(ctx, 2*time.Minute, 100*time.Millisecond, "liqo-auth-harness ready", func(context.Context) error {
		if !strings.Contains(p.Log(), Ready) {
			return errors.New("not ready yet")
		}
		return nil
	}, p); err != nil {
		p.Stop(5 * time.Second)
		return nil, fmt.Errorf("%w\n%s", err, p.Tail(40))
	}
	return h, nil
}

// Stop ends the harness, which unregisters its webhooks first.
func (h *Harness) Stop() { h.proc.Stop(15 * time.Second) }

// Log is the harness's output so far.
func (h *Harness) Log() string { return h.proc.Log() }
