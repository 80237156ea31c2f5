package main

import (
	"fmt"
	"os"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestChartDefaults checks the Helm chart's values for agent flags default to
// the agent's own defaults (the chart passes them always; test/chart checks
// config/default's Deployment passes the same).
func TestChartDefaults(t *testing.T) {
	raw, err := os.ReadFile("../../charts/gitpeer/values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var values map[string]any
	if err := yaml.Unmarshal(raw, &values); err != nil {
		t.Fatal(err)
	}
	kubeAPI, _ := values["kubeAPI"].(map[string]any)
	flags := newAgentCmd().Flags()
	for flag, value := range map[string]any{
		"concurrent":      values["concurrent"],
		"peering-workers": values["peeringWorkers"],
		"round-limit":     values["roundLimit"],
		"kube-api-qps":    kubeAPI["qps"],
		"kube-api-burst":  kubeAPI["burst"],
		"memory-limit":    values["memoryLimit"],
	} {
		if got, want := fmt.Sprint(value), flags.Lookup(flag).DefValue; got != want {
			t.Errorf("the chart's --%s is %s, the agent's default %s", flag, got, want)
		}
	}
}
