package config_test

import (
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestSamplesNameTheWatchedNamespace checks that every sample object names the namespace the
// default install's agent watches (--watch-namespace is its own namespace, config/default's), so
// `kubectl apply -f` of one file does not leave it in "default", where no agent acts on it.
func TestSamplesNameTheWatchedNamespace(t *testing.T) {
	var install struct{ Namespace string }
	data, err := os.ReadFile("default/kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &install); err != nil || install.Namespace == "" {
		t.Fatalf("config/default names no namespace: %v", err)
	}
	samples, _ := filepath.Glob("samples/*.yaml")
	examples, _ := filepath.Glob("../examples/*.yaml")
	for _, file := range append(samples, examples...) {
		if filepath.Base(file) == "kustomization.yaml" {
			continue
		}
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var obj struct {
			Metadata struct{ Namespace string }
		}
		if err := yaml.Unmarshal(data, &obj); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if obj.Metadata.Namespace != install.Namespace {
			t.Errorf("%s: metadata.namespace is %q, want %q (where the installed agent watches)", file, obj.Metadata.Namespace, install.Namespace)
		}
	}
	if len(samples) < 3 {
		t.Fatalf("samples: %v", samples)
	}
}
