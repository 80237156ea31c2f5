// Command gen writes the sample peering repository of examples/: provider
// provider-eu with consumer consumer-green fully issued (tenant.yaml and
// identity.yaml, nonce rotated) and consumer consumer-blue waiting for its
// Tenant (request.yaml and nonce.yaml). Keys and the CA are generated on each
// run and only public material is written, so `gitpeer verify` passes on the
// output until the sample certificate expires (in 50 years).
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/gitpeer/gitpeer/examples/repofixture"
)

const (
	provider  = "provider-eu"
	apiServer = "https://provider-eu.example.com:6443"
	validity  = 50 * 365 * 24 * time.Hour
)

func main() {
	out := flag.String("out", "repository", "directory to write the sample repository to")
	flag.Parse()
	if err := generate(*out); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func generate(out string) error {
	now := time.Now().UTC().Truncate(24 * time.Hour)
	ca, err := repofixture.NewCA(provider+" cluster CA", now, 2*validity)
	if err != nil {
		return err
	}
	opts := repofixture.Options{CA: ca, APIServer: apiServer, NotBefore: now, TTL: validity}
	for consumer, stage := range map[string]repofixture.Stage{
		"consumer-green": repofixture.Issued,
		"consumer-blue":  repofixture.NonceIssued,
	} {
		p, err := repofixture.Build(provider, consumer, stage, opts)
		if err != nil {
			return err
		}
		if err := p.WriteTo(out); err != nil {
			return err
		}
	}
	terms, err := repofixture.Terms(provider)
	if err != nil {
		return err
	}
	// CODEOWNERS is not generated: it is kept by hand, and `gitpeer init`
	// scaffolds from it (examples.Codeowners).
	return repofixture.Write(out, provider+"/terms.yaml", terms)
}
