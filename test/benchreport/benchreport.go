// Package benchreport is what the benchmark commands (test/scale, test/liqobench) report alike:
// the commit measured, a table of figures and the JSON file docs/benchmarks.md is made from.
package benchreport

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Commit names the checked-out commit, with -dirty when the work tree has changes.
func Commit() string {
	out, err := exec.Command("git", "describe", "--always", "--dirty", "--exclude=*").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}

// WriteJSON writes v to path as indented JSON; nothing when path is empty.
func WriteJSON(path string, v any) error {
	if path == "" {
		return nil
	}
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// Table is a table of figures, a name and a value a row, aligned as kubectl aligns columns.
type Table struct{ w *tabwriter.Writer }

// NewTable starts a table on w, after an empty line.
func NewTable(w io.Writer) *Table {
	t := &Table{w: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
	fmt.Fprintln(t.w)
	return t
}

// Row adds a row: name, and the value format and args make.
func (t *Table) Row(name, format string, args ...any) {
	fmt.Fprintf(t.w, "%s\t"+format+"\n", append([]any{name}, args...)...)
}

// Flush prints the rows.
func (t *Table) Flush() error { return t.w.Flush() }

// DefaultN is the default number of consumers: $N, as `make bench-scale N=1000` passes it, else 100.
func DefaultN() (int, error) {
	v := os.Getenv("N")
	if v == "" {
		return 100, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("N=%q: %w", v, err)
	}
	return n, nil
}
