// Command scale is gitpeer's scale benchmark (`make bench-scale N=1000`): it runs the real
// `gitpeer agent` binary as a provider against a real control plane (test/controlplane) and a
// real Git server (test/gitserver), with N consumers simulated here: Ed25519 keys, requests,
// Tenants signing the provider's nonces, merged as pull requests in a handful of commits, while
// another reviewer keeps merging unrelated pull requests. It prints progress and a table, and
// writes the figures as JSON:
//
//   - the time from the Tenants' merge until every consumer has a valid identity.yaml (a
//     certificate for its key and CN, signed by the cluster CA), and the other phases;
//   - the commits the agent pushed, its peak RSS (VmHWM) and its PeeringRepository's size;
//   - how often the concurrent reviewer's push was refused because main had moved.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gitpeer/gitpeer/test/benchreport"
)

func main() {
	o, jsonPath, logPath, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if err := benchmark(o, jsonPath, logPath); err != nil {
		fmt.Fprintln(os.Stderr, "bench-scale:", err)
		os.Exit(1)
	}
}

// parseFlags reads the options; N defaults to $N, then 100.
func parseFlags(args []string) (o options, jsonPath, logPath string, err error) {
	fs := flag.NewFlagSet("bench-scale", flag.ContinueOnError)
	n, err := benchreport.DefaultN()
	if err != nil {
		return o, "", "", err
	}
	var extra, pending string
	fs.IntVar(&o.Consumers, "n", n, "number of simulated consumers (default $N, then 100)")
	fs.StringVar(&o.Agent, "agent", "", "the gitpeer binary (default: built from this module)")
	fs.StringVar(&extra, "agent-flags", "", "agent flags, space-separated (e.g. --kube-api-qps=50 --concurrent=8); default: none, the agent's defaults")
	fs.StringVar(&pending, "max-pending", "n", `the provider's maxPendingRequests: "n" (every request answered at once), "default" (unset: the API's default, 100; the consumers sign in waves) or a number`)
	fs.BoolVar(&o.ControllerManagerDefaultLimits, "kcm-default-limits", false, "run kube-controller-manager (the CSR signer) with its default client limits, 20 QPS and burst 30, instead of 500 QPS")
	fs.DurationVar(&o.Interval, "interval", time.Second, "the PeeringRepository's spec.interval")
	fs.IntVar(&o.Commits, "commits", 5, "pull requests (merge commits) carrying the requests, and again the Tenants")
	fs.DurationVar(&o.ReviewEvery, "review-every", 2*time.Second, "how often the concurrent reviewer merges a pull request")
	fs.DurationVar(&o.QuietSettle, "quiet-settle", 20*time.Second, "once every identity is valid, wait this long before measuring quiet rounds")
	fs.DurationVar(&o.QuietWindow, "quiet", 30*time.Second, "then measure the agent's rounds for this long (0: not at all)")
	fs.DurationVar(&o.IdleWindow, "idle", 0, "then measure the agent's CPU time for this long, scaled to an hour (0: not at all; pass the agent a shorter --full-resync-period to include resyncs)")
	fs.DurationVar(&o.IdleInterval, "idle-interval", 0, "first set the PeeringRepository's spec.interval to this and wait for its round (0: keep -interval)")
	fs.DurationVar(&o.Timeout, "timeout", 15*time.Minute, "stop waiting after this long and report what was reached")
	fs.DurationVar(&o.ProgressEvery, "progress-every", 2*time.Second, "how often to print a progress line")
	fs.StringVar(&jsonPath, "json", "", "write the figures to this JSON file")
	fs.StringVar(&logPath, "agent-log", "", "write the agent's output to this file (default: discarded)")
	if err = fs.Parse(args); err != nil {
		return o, "", "", err
	}
	if o.Consumers < 1 || o.Commits < 1 {
		return o, "", "", fmt.Errorf("-n and -commits must be at least 1")
	}
	switch pending {
	case "n":
		o.MaxPending = o.Consumers
	case "default":
	default:
		if o.MaxPending, err = strconv.Atoi(pending); err != nil || o.MaxPending < 1 {
			return o, "", "", fmt.Errorf(`-max-pending: %q is neither "n", "default" nor a positive number`, pending)
		}
	}
	o.AgentFlags = strings.Fields(extra)
	return o, jsonPath, logPath, nil
}

// benchmark runs the benchmark, prints the table and writes the JSON; it fails when not every
// consumer got a valid identity.
func benchmark(o options, jsonPath, logPath string) error {
	o.Progress, o.AgentLog = os.Stdout, io.Discard
	if logPath != "" {
		f, err := os.Create(logPath)
		if err != nil {
			return err
		}
		defer f.Close()
		o.AgentLog = f
	}
	fmt.Printf("bench-scale: %d consumers, agent flags %s, maxPendingRequests %d, signer %d QPS, interval %s\n",
		o.Consumers, flagsString(o.AgentFlags), o.wave(), o.signerQPS(), o.Interval)
	commit := benchreport.Commit()
	res, err := run(context.Background(), o)
	if err != nil {
		return err
	}
	res.Commit = commit
	printTable(os.Stdout, res)
	if err := benchreport.WriteJSON(jsonPath, res); err != nil {
		return err
	}
	if !res.Completed {
		return fmt.Errorf("not completed: %s", res.Outcome)
	}
	return nil
}

// printTable prints the figures.
func printTable(w io.Writer, r *result) {
	t := benchreport.NewTable(w)
	row := t.Row
	row("commit", "%s", r.Commit)
	row("consumers", "%d", r.Consumers)
	row("outcome", "%s", r.Outcome)
	row("agent flags", "%s (spec.interval %s, maxPendingRequests %d)", flagsString(r.AgentFlags), r.Interval, r.MaxPendingRequests)
	row("CSR signer (kube-controller-manager)", "%d QPS: signing every certificate takes at least %.1f s", r.SignerQPS, r.SignerFloorSeconds)
	row("machine", "%d CPUs, mean load average %.1f", r.CPUs, r.LoadAverage)
	row("key generation", "%s", seconds(r.KeygenSeconds))
	row("requests merged", "%s (%d pull requests)", seconds(r.RequestsSeconds), r.Commits)
	if len(r.Waves) == 0 {
		row("requests → every nonce", "%s (%d/%d nonces)", seconds(r.NoncesSeconds), r.Nonces, r.Consumers)
		row("Tenants signed and merged", "%s (%d pull requests)", seconds(r.TenantsSeconds), r.Commits)
		row("Tenants merged → every identity valid", "%s (%d/%d valid, %d invalid)", seconds(r.IdentitiesSeconds), r.ValidIdentities, r.Consumers, r.InvalidIdentities)
	} else {
		var nonces, identities float64
		for _, w := range r.Waves {
			nonces, identities = nonces+w.NoncesSeconds, identities+w.IdentitiesSeconds
		}
		n := float64(len(r.Waves))
		row("waves", "%d of at most %d: per wave %.1f s to its nonces, %.1f s from its Tenants to its identities", len(r.Waves), r.MaxPendingRequests, nonces/n, identities/n)
		row("identities", "%d/%d valid, %d invalid", r.ValidIdentities, r.Consumers, r.InvalidIdentities)
	}
	if r.FloorRatio > 0 {
		row("… over the signer's floor", "%.2f×", r.FloorRatio)
	}
	row("requests merged → every identity valid", "%s", seconds(r.RequestsToIdentitiesSeconds))
	if r.FirstInvalid != "" {
		row("first invalid", "%s", r.FirstInvalid)
	}
	row("total (agent start → end)", "%s", seconds(r.TotalSeconds))
	if len(r.Waves) == 0 {
		row("commits pushed by the agent", "%d (%d in the nonce phase)", r.AgentCommits, r.AgentCommitsNonces)
	} else {
		row("commits pushed by the agent", "%d", r.AgentCommits)
	}
	row("agent peak RSS (VmHWM)", "%.1f MiB", r.AgentPeakRSSMiB)
	row("PeeringRepository JSON", "%d bytes (max %d)", r.ObjectBytes, r.ObjectBytesMax)
	row("concurrent reviewer", "%d merges, %d refused pushes retried, at most %d for one merge", r.ReviewerMerges, r.ReviewerRetries, r.ReviewerMaxRetries)
	row("consumers' merges", "%d refused pushes retried, at most %d for one merge", r.ConsumerRetries, r.ConsumerMaxRetries)
	if r.QuietRounds > 0 {
		visited := "not reported by the agent"
		if r.QuietVisitedPerRound >= 0 {
			visited = fmt.Sprintf("%.1f peerings visited per round", r.QuietVisitedPerRound)
		}
		row("quiet rounds (nothing changes)", "%d in %.0f s, %.3f s each, %s", r.QuietRounds, r.QuietWindowSeconds, r.QuietRoundSeconds, visited)
	}
	if r.IdleWindowSeconds > 0 {
		row("idle (nothing changes)", "%.2f s of CPU in %.0f s: %.1f s per hour, %.2f%% of a core", r.IdleCPUSeconds, r.IdleWindowSeconds, r.IdleCPUSecondsPerHour, r.IdleCPUSecondsPerHour/36)
	}
	row("agent Ready", "%s", r.AgentReady)
	t.Flush()
}

// flagsString prints agent flags; none means the agent's defaults.
func flagsString(flags []string) string {
	if len(flags) == 0 {
		return "(defaults)"
	}
	return strings.Join(flags, " ")
}

// seconds formats the duration of a phase; a phase not reached took 0 s.
func seconds(s float64) string {
	if s == 0 {
		return "not reached"
	}
	return fmt.Sprintf("%.1f s", s)
}
