// Command chartgen writes the generated templates of charts/gitpeer from config/ (see package
// chartgen). Run by `make chart`: chartgen <config dir> <chart dir>.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/gitpeer/gitpeer/test/chart/chartgen"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: chartgen <config dir> <chart dir>")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "chartgen:", err)
		os.Exit(1)
	}
}

// run replaces the chart's generated directory with freshly generated templates.
func run(configDir, chartDir string) error {
	files, err := chartgen.Generate(configDir)
	if err != nil {
		return err
	}
	dir := filepath.Join(chartDir, chartgen.Dir)
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), text, 0o644); err != nil {
			return err
		}
	}
	return nil
}
