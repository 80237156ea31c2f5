package config_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// releasedImage is the image repository config/ installs, tagged v<VERSION> for a release.
const releasedImage = "ghcr.io/gitpeer/gitpeer"

// TestImageTagIsReleaseVersion checks that the image config/manager and config/default install is
// the release named in the repository's VERSION file (v<VERSION>, never latest), so a release
// bump cannot leave the manifests behind: both the Deployment's own image and the `images:` pin of
// config/default, rendered as `kubectl apply -k` renders them.
func TestImageTagIsReleaseVersion(t *testing.T) {
	raw, err := os.ReadFile("../VERSION")
	if err != nil {
		t.Fatal(err)
	}
	want := releasedImage + ":v" + strings.TrimSpace(string(raw))
	for _, dir := range []string{"manager", "default"} {
		resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
		if err != nil {
			t.Fatalf("kustomize build config/%s: %v", dir, err)
		}
		deployments := 0
		for _, r := range resources.Resources() {
			if r.GetKind() != "Deployment" {
				continue
			}
			deployments++
			raw, err := r.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			var d appsv1.Deployment
			if err := json.Unmarshal(raw, &d); err != nil {
				t.Fatal(err)
			}
			for _, c := range d.Spec.Template.Spec.Containers {
				if c.Image != want {
					t.Errorf("config/%s: container %s runs image %s, want %s (VERSION)", dir, c.Name, c.Image, want)
				}
			}
		}
		if deployments != 1 {
			t.Errorf("config/%s has %d Deployments, want 1", dir, deployments)
		}
	}
}
