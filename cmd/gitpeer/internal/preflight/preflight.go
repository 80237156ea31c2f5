// Package preflight checks whether a cluster is ready for gitpeer, or how its
// installation is doing, for `gitpeer check` (as `flux check [--pre]`): the
// Kubernetes version, gitpeer's CRDs, the agent, the PeeringRepositories,
// Liqo, the installer's RBAC and the CSR signer the agent relies on.
package preflight

import (
	"context"
	"fmt"
	"io"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitpeer/gitpeer/apis"
	"github.com/gitpeer/gitpeer/cmd/gitpeer/internal/printer"
)

// Status is the outcome of one check.
type Status string

// The outcomes of a check. Info is neither: something worth knowing that
// does not make the cluster unready (Liqo absent, a signer not yet seen at work).
const (
	OK     Status = "ok"
	Failed Status = "failed"
	Info   Status = "info"
)

// Check is the outcome of one check.
type Check struct {
	Name    string `json:"name"`
	Status  Status `json:"status"`
	Message string `json:"message"`
}

// Report is the outcome of every check run, in order.
type Report struct {
	Checks []Check `json:"checks"`
	// Failed is the number of failed checks.
	Failed int `json:"failed"`
}

// Options say which checks to run.
type Options struct {
	// Pre checks only the prerequisites of an installation: no CRD, agent or
	// PeeringRepository of gitpeer is expected yet.
	Pre bool
	// Namespace is the agent's namespace.
	Namespace string
	// SignTest has the CSR signer issue a throwaway certificate instead of
	// looking for one it issued.
	SignTest bool
}

// clients are the API clients of the checks.
type clients struct {
	kube kubernetes.Interface
	c    client.Client
}

// Run runs the checks against the cluster of cfg. An error is returned only
// when no client can be built; when the API server does not answer, the
// report has that one failed check.
func Run(ctx context.Context, cfg *rest.Config, o Options) (*Report, error) {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	scheme := apis.NewScheme()
	utilruntime.Must(apiextensionsv1.AddToScheme(scheme))
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	cl := clients{kube: kube, c: c}
	r := &Report{}
	version, reached := kubernetesVersion(cl)
	if r.add(version); !reached {
		return r, nil // every other check would fail the same way
	}
	if !o.Pre {
		r.add(crds(ctx, cl)...)
		r.add(agents(ctx, cl, o.Namespace)...)
		r.add(peeringRepositories(ctx, cl)...)
	}
	r.add(liqo(ctx, cl))
	r.add(rbac(ctx, cl, o.Namespace))
	if o.SignTest {
		r.add(signTest(ctx, cl))
	} else {
		r.add(signer(ctx, cl))
	}
	return r, nil
}

func (r *Report) add(checks ...Check) {
	for _, c := range checks {
		if c.Status == Failed {
			r.Failed++
		}
		r.Checks = append(r.Checks, c)
	}
}

var marks = map[Status]string{OK: "✔", Failed: "✗", Info: "•"}

// Print writes the report as one line per check (✔ passed, ✗ failed, • for
// information), or as JSON or YAML.
func Print(w io.Writer, r *Report, format string) error {
	if format != printer.Table {
		return printer.WriteStructured(w, format, r)
	}
	var b strings.Builder
	for _, c := range r.Checks {
		fmt.Fprintf(&b, "%s %s: %s\n", marks[c.Status], c.Name, c.Message)
	}
	if r.Failed == 0 { // the command's error says how many failed
		b.WriteString("✔ all checks passed\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func ok(name, format string, args ...any) Check {
	return Check{Name: name, Status: OK, Message: fmt.Sprintf(format, args...)}
}

func failed(name, format string, args ...any) Check {
	return Check{Name: name, Status: Failed, Message: fmt.Sprintf(format, args...)}
}

func info(name, format string, args ...any) Check {
	return Check{Name: name, Status: Info, Message: fmt.Sprintf(format, args...)}
}
