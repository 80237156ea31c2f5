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

// TestWorkflow checks the CI workflow is YAML and computes the review signal from the base
// branch: it runs on pull_request_target (never pull_request, whose workflow and code are the
// head's), checks out no head, installs a pinned gitpeer, judges the head with --base and posts
// the status on the commit it judged.
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
	text := string(data)
	if _, ok := on["pull_request_target"]; !ok {
		t.Fatalf("workflow does not verify pull requests from the base branch: %v", wf)
	}
	if _, ok := on["pull_request"]; ok {
		t.Fatal("workflow runs on pull_request: the head's workflow would set the check")
	}
	for _, want := range []string{"gitpeer verify --base", `--revision "$head"`, `statuses/${head}`, "context=gitpeer/verify", "persist-credentials: false"} {
		if !strings.Contains(text, want) {
			t.Errorf("workflow lacks %q", want)
		}
	}
	if strings.Contains(text, "pull_request.head.") || strings.Contains(text, "@latest") {
		t.Error("workflow checks out the head or installs an unpinned gitpeer")
	}
}

// TestWorkflowPinsTheRelease checks the CI workflow installs the release of VERSION (bump both
// together): the release's binary, whose SHA256SUMS it verifies as signed by gitpeer's release
// workflow at that tag, and which it checks against SHA256SUMS.
func TestWorkflowPinsTheRelease(t *testing.T) {
	data, err := os.ReadFile("ci/verify.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var wf struct {
		Jobs map[string]struct{ Env map[string]string }
	}
	if err := yaml.Unmarshal(data, &wf); err != nil {
		t.Fatal(err)
	}
	v, err := os.ReadFile("../VERSION")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := wf.Jobs["verify"].Env["GITPEER_VERSION"], "v"+strings.TrimSpace(string(v)); got != want {
		t.Errorf("the workflow pins gitpeer %s, VERSION is %s", got, want)
	}
	for _, want := range []string{
		`base="https://github.com/gitpeer/gitpeer/releases/download/${GITPEER_VERSION}"`,
		`"${base}/SHA256SUMS" "${base}/SHA256SUMS.sigstore.json"`,
		"cosign verify-blob SHA256SUMS --bundle SHA256SUMS.sigstore.json",
		`--certificate-identity "https://github.com/gitpeer/gitpeer/.github/workflows/release.yaml@refs/tags/${GITPEER_VERSION}"`,
		"sha256sum --check --ignore-missing SHA256SUMS",
	} {
		if !strings.Contains(string(data), want) {
			t.Errorf("workflow lacks %q", want)
		}
	}
}

// TestCodeowners checks the sample CODEOWNERS gives every provider folder of the sample
// repository its team, and the CODEOWNERS file and CI workflows to the repository's owners.
func TestCodeowners(t *testing.T) {
	data, err := os.ReadFile("repository/CODEOWNERS")
	if err != nil {
		t.Fatal(err)
	}
	owned := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		if fields := strings.Fields(line); len(fields) > 1 && !strings.HasPrefix(line, "#") {
			owned[fields[0]] = true
		}
	}
	entries, err := os.ReadDir("repository")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/CODEOWNERS", "/.github/"}
	for _, e := range entries {
		if e.IsDir() {
			want = append(want, "/"+e.Name()+"/")
		}
	}
	for _, w := range want {
		if !owned[w] {
			t.Errorf("CODEOWNERS has no entry for %s", w)
		}
	}
}
