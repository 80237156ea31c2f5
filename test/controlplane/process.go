package controlplane

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/gitpeer/gitpeer/test/process"
)

// findBinaries returns the directory holding kube-apiserver,
// kube-controller-manager and etcd: $GITPEER_TOOLS_BIN as set by the Makefile,
// or the only build under .cache/tools of the enclosing checkout.
func findBinaries() (string, error) {
	dir, err := process.Find("GITPEER_TOOLS_BIN", filepath.Join("tools", "*"))
	if err != nil {
		return "", fmt.Errorf("kube-apiserver, kube-controller-manager and etcd: %w", err)
	}
	return dir, checkBinaries(dir)
}

func checkBinaries(dir string) error {
	for _, name := range []string{"etcd", "kube-apiserver", "kube-controller-manager"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("%s not found in %s: run `make tools`", name, dir)
		}
	}
	return nil
}
