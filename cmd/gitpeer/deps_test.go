package main

import (
	"os/exec"
	"strings"
	"testing"
)

// harnesses are import path fragments of test harnesses: gitpeer's own
// (test/: the sandbox, the control plane, the Git server, the demo), Ginkgo,
// Flux's Git test server, and controller-runtime's test environment and fake client.
var harnesses = []string{
	"github.com/gitpeer/gitpeer/test/",
	"github.com/onsi/ginkgo",
	"github.com/fluxcd/pkg/gittestserver",
	"sigs.k8s.io/controller-runtime/pkg/envtest",
	"sigs.k8s.io/controller-runtime/pkg/client/fake",
}

// TestBinaryLinksNoTestHarness checks the dependencies of the gitpeer binary
// users install: no test harness, and no Gomega.
func TestBinaryLinksNoTestHarness(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}} {{join .Imports " "}}`, ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for line := range strings.Lines(string(out)) {
		pkg, imports, _ := strings.Cut(strings.TrimSpace(line), " ")
		for _, h := range harnesses {
			if strings.HasPrefix(pkg, h) {
				t.Errorf("the gitpeer binary links the test harness %s", pkg)
			}
		}
		if isGomega(pkg) {
			continue
		}
		for imp := range strings.FieldsSeq(imports) {
			if isGomega(imp) {
				t.Errorf("the gitpeer binary links Gomega through %s (imports %s)", pkg, imp)
			}
		}
	}
}

func isGomega(pkg string) bool {
	return pkg == "github.com/onsi/gomega" || strings.HasPrefix(pkg, "github.com/onsi/gomega/")
}
