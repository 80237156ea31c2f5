// Command liqobench measures what Liqo's own tenant controller costs where gitpeer's agent is
// measured by test/scale (`make bench-liqo N=1000`, issue #27): Liqo v1.2.0's real
// authentication module (the liqo-auth-harness of test/liqoreal) as the provider, on the same
// kind of test control plane (test/controlplane), with N consumers simulated here.
//
// Set-up, not measured: each consumer's tenant namespace and liqo-nonce Secret, filled by Liqo's
// nonce creator (`liqoctl create nonce`, test/liqo CreateNonce), and its Tenant as `liqoctl
// generate tenant` makes it, the nonce signed with the consumer's Ed25519 key as Liqo's nonce
// signer signs it. Measured: the N Tenants applied at once until every one's status.authParams
// carries the certificate Liqo's tenant controller had kube-controller-manager sign, against the
// signer's floor (N / its QPS), with the harness's CPU time and peak RSS. It prints progress and a
// table and writes the figures as JSON.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/gitpeer/gitpeer/test/benchreport"
)

// outputs are the files the benchmark writes besides its table; empty paths are not written.
type outputs struct {
	json, harnessLog string
}

func main() {
	o, out, err := parseFlags(os.Args[1:])
	if err == nil {
		err = benchmark(o, out)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench-liqo:", err)
		os.Exit(1)
	}
}

// parseFlags reads the options; N defaults to $N, then 100.
func parseFlags(args []string) (o options, out outputs, err error) {
	fs := flag.NewFlagSet("bench-liqo", flag.ContinueOnError)
	n, err := benchreport.DefaultN()
	if err != nil {
		return o, out, err
	}
	fs.IntVar(&o.Consumers, "n", n, "number of simulated consumers, one Tenant each (default $N, then 100)")
	fs.IntVar(&o.Workers, "workers", 16, "how many nonces are created, and Tenants applied, at once")
	fs.BoolVar(&o.ControlPlane.ControllerManagerDefaultLimits, "kcm-default-limits", false, "run kube-controller-manager (the CSR signer) with its default client limits, 20 QPS and burst 30, instead of 500 QPS")
	fs.DurationVar(&o.Timeout, "timeout", 15*time.Minute, "stop waiting after this long and report what was reached")
	fs.DurationVar(&o.ProgressEvery, "progress-every", 2*time.Second, "how often to print a progress line")
	fs.StringVar(&out.json, "json", "", "write the figures to this JSON file")
	fs.StringVar(&out.harnessLog, "harness-log", "", "write the harness's log to this file (default: discarded)")
	if err = fs.Parse(args); err != nil {
		return o, out, err
	}
	if o.Consumers < 1 || o.Workers < 1 {
		return o, out, fmt.Errorf("-n and -workers must be at least 1")
	}
	return o, out, nil
}

// benchmark runs the benchmark, prints the table and writes the JSON and the harness's log; it
// fails when not every Tenant got a valid certificate.
func benchmark(o options, out outputs) error {
	o.Progress = os.Stdout
	fmt.Printf("bench-liqo: %d Tenants, %d workers, signer %d QPS\n", o.Consumers, o.Workers, o.ControlPlane.SignerQPS())
	commit := benchreport.Commit()
	res, harnessLog, err := run(context.Background(), o)
	if err != nil {
		return err
	}
	res.Commit = commit
	printTable(os.Stdout, res)
	if err := out.write(res, harnessLog); err != nil {
		return err
	}
	if !res.Completed {
		return fmt.Errorf("not completed: %s", res.Outcome)
	}
	return nil
}

// write writes the figures and the harness's log to the files asked for.
func (out outputs) write(res *result, harnessLog string) error {
	if out.harnessLog != "" {
		if err := os.WriteFile(out.harnessLog, []byte(harnessLog), 0o644); err != nil {
			return err
		}
	}
	return benchreport.WriteJSON(out.json, res)
}

// printTable prints the figures.
func printTable(w io.Writer, r *result) {
	t := benchreport.NewTable(w)
	t.Row("commit", "%s", r.Commit)
	t.Row("Liqo", "%s tenant controller (liqo-auth-harness)", r.LiqoVersion)
	t.Row("Tenants", "%d, applied by %d workers", r.Consumers, r.Workers)
	t.Row("outcome", "%s", r.Outcome)
	t.Row("CSR signer (kube-controller-manager)", "%d QPS: signing every certificate takes at least %.2f s", r.SignerQPS, r.SignerFloorSeconds)
	t.Row("machine", "%d CPUs, mean load average %.1f", r.CPUs, r.LoadAverage)
	t.Row("set-up: nonces", "%s (%d/%d)", seconds(r.NoncesSeconds), r.Nonces, r.Consumers)
	t.Row("Tenants applied", "%s", seconds(r.ApplySeconds))
	t.Row("Tenants applied → first certificate", "%s", seconds(r.FirstIssuedSeconds))
	t.Row("Tenants applied → every certificate issued", "%s (%d/%d issued, %d valid)", seconds(r.IssuedSeconds), r.Issued, r.Consumers, r.ValidCertificates)
	if r.FloorRatio > 0 {
		t.Row("… over the signer's floor", "%.2f×", r.FloorRatio)
	}
	if r.FirstInvalid != "" {
		t.Row("first invalid", "%s", r.FirstInvalid)
	}
	t.Row("harness CPU over the phase", "%.2f s", r.HarnessCPUSeconds)
	t.Row("harness peak RSS (VmHWM)", "%.1f MiB", r.HarnessPeakRSSMiB)
	t.Flush()
}

// seconds formats the duration of a phase; a phase not reached took 0 s.
func seconds(s float64) string {
	if s == 0 {
		return "not reached"
	}
	return fmt.Sprintf("%.2f s", s)
}
