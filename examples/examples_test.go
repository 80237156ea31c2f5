package examples

import (
	"os"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
)

// TestManifests decodes the sample PeeringRepositories strictly, so a renamed
// field breaks the test rather than a reader's cluster. (The CRD's own
// validation of them runs against a real API server in config/.)
func TestManifests(t *testing.T) {
	for file, role := range map[string]string{"peeringrepository-provider.yaml": "provider", "peeringrepository-consumer.yaml": "consumer"} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var pr gitpeerv1alpha1.PeeringRepository
		if err := yaml.UnmarshalStrict(data, &pr); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if pr.Kind != "PeeringRepository" || pr.APIVersion != gitpeerv1alpha1.GroupVersion.String() {
			t.Fatalf("%s: %s %s", file, pr.APIVersion, pr.Kind)
		}
		if (role == "provider") != (pr.Spec.Provider != nil && pr.Spec.Provider.Enabled) {
			t.Fatalf("%s: provider role %+v", file, pr.Spec.Provider)
		}
		if _, err := os.Stat("repository/" + string(pr.Spec.ClusterID)); role == "provider" && err != nil {
			t.Fatalf("%s: the sample repository has no folder for %s", file, pr.Spec.ClusterID)
		}
	}
}

// TestWorkflow checks the CI workflow is YAML and runs gitpeer verify on pull requests.
func TestWorkflow(t *testing.T) {
	data, err := os.ReadFile("ci/verify.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var wf map[string]any
	if err := yaml.Unmarshal(data, &wf); err != nil {
		t.Fatal(err)
	}
	on, _ := wf["true"].(map[string]any) // YAML 1.1 reads the key "on" as true
	if _, ok := on["pull_request"]; !ok || !strings.Contains(string(data), "run: gitpeer verify .") {
		t.Fatalf("workflow does not verify pull requests: %v", wf)
	}
}
