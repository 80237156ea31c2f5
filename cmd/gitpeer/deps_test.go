package main

import (
	"os/exec"
	"slices"
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
	for pkg, imports := range listDeps(t, ".") {
		for _, h := range harnesses {
			if strings.HasPrefix(pkg, h) {
				t.Errorf("the gitpeer binary links the test harness %s", pkg)
			}
		}
		if isGomega(pkg) {
			continue
		}
		for _, imp := range imports {
			if isGomega(imp) {
				t.Errorf("the gitpeer binary links Gomega through %s (imports %s)", pkg, imp)
			}
		}
	}
}

func isGomega(pkg string) bool {
	return pkg == "github.com/onsi/gomega" || strings.HasPrefix(pkg, "github.com/onsi/gomega/")
}

// TestLayout checks three rules of the layout: the subcommands' internals read
// and write gitpeer's names through package vocabulary, never through the
// controller (package reconciler); the planners (reconciler/plan/...) import
// no API client; and the sample generator of examples/ links no test harness.
func TestLayout(t *testing.T) {
	const controller = "github.com/gitpeer/gitpeer/reconciler"
	for pkg, imports := range listDeps(t, "./internal/...") {
		if strings.HasPrefix(pkg, "github.com/gitpeer/gitpeer/cmd/gitpeer/internal/") && slices.Contains(imports, controller) {
			t.Errorf("%s imports the controller %s", pkg, controller)
		}
	}
	// The planners are pure: no client of the API server in their own imports.
	for pkg, imports := range listDeps(t, "github.com/gitpeer/gitpeer/reconciler/plan/...") {
		if !strings.HasPrefix(pkg, controller+"/plan") {
			continue
		}
		for _, imp := range imports {
			if imp == "sigs.k8s.io/controller-runtime/pkg/client" || imp == "k8s.io/client-go/rest" || strings.HasPrefix(imp, "k8s.io/client-go/kubernetes") {
				t.Errorf("the planner %s imports the API client %s", pkg, imp)
			}
		}
	}
	for pkg := range listDeps(t, "github.com/gitpeer/gitpeer/examples/gen") {
		if strings.HasPrefix(pkg, "github.com/gitpeer/gitpeer/test/") {
			t.Errorf("examples/gen links the test package %s", pkg)
		}
	}
}

// listDeps returns the imports of every package patterns depend on, by package.
func listDeps(t *testing.T, patterns ...string) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list", "-deps", "-f", `{{.ImportPath}} {{join .Imports " "}}`}, patterns...)...).Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := map[string][]string{}
	for line := range strings.Lines(string(out)) {
		pkg, imports, _ := strings.Cut(strings.TrimSpace(line), " ")
		deps[pkg] = strings.Fields(imports)
	}
	return deps
}
