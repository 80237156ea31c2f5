package preflight

import (
	"bytes"
	"testing"
)

func TestCheckVersion(t *testing.T) {
	for v, want := range map[string]Status{"v1.30.0": OK, "v1.36.3": OK, "v1.31.2-eks-7f9249a": OK, "v1.29.9": Failed, "v1.29.15+k3s1": Failed, "nonsense": Failed} {
		if got := checkVersion("kubernetes", v); got.Status != want {
			t.Errorf("%s: %+v, want %s", v, got, want)
		}
	}
}

func TestImageTag(t *testing.T) {
	for image, want := range map[string]string{
		"ghcr.io/liqotech/liqo-controller-manager:v1.0.1":                 "v1.0.1",
		"localhost:5000/liqo-controller-manager":                          "unknown",
		"localhost:5000/liqo-controller-manager:v1.0.0@sha256:0123456789": "v1.0.0",
		"liqo-controller-manager@sha256:0123456789":                       "unknown",
	} {
		if got := imageTag(image); got != want {
			t.Errorf("imageTag(%q) = %q, want %q", image, got, want)
		}
	}
}

// TestPrint checks the marks of each outcome, and that the summary line claims success only
// when no check failed.
func TestPrint(t *testing.T) {
	r := &Report{}
	r.add(ok("a", "fine"), info("b", "maybe"))
	var out bytes.Buffer
	if err := Print(&out, r, ""); err != nil {
		t.Fatal(err)
	}
	if want := "✔ a: fine\n• b: maybe\n✔ all checks passed\n"; out.String() != want {
		t.Errorf("output %q, want %q", out.String(), want)
	}
	r.add(failed("c", "broken"))
	out.Reset()
	if err := Print(&out, r, ""); err != nil {
		t.Fatal(err)
	}
	if want := "✔ a: fine\n• b: maybe\n✗ c: broken\n"; out.String() != want || r.Failed != 1 {
		t.Errorf("output %q (%d failed), want %q", out.String(), r.Failed, want)
	}
}
