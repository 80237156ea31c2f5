// Package printer writes the CLI's output the way kubectl does: an aligned
// table by default, or JSON / YAML with -o.
package printer

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"sigs.k8s.io/yaml"
)

// Output formats accepted by -o.
const (
	Table = ""
	JSON  = "json"
	YAML  = "yaml"
)

// CheckFormat returns an error unless format is the table format or one of allowed.
func CheckFormat(format string, allowed ...string) error {
	if format == Table || slices.Contains(allowed, format) {
		return nil
	}
	return fmt.Errorf("unknown output format %q (want one of: %s)", format, strings.Join(allowed, ", "))
}

// WriteTable writes header and rows as tab-aligned columns; an empty cell is
// shown as "-".
func WriteTable(w io.Writer, header []string, rows [][]string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 3, ' ', 0)
	for _, row := range append([][]string{header}, rows...) {
		cells := make([]string, len(row))
		for i, c := range row {
			cells[i] = strings.ReplaceAll(c, "\t", " ")
			if cells[i] == "" {
				cells[i] = "-"
			}
		}
		if _, err := fmt.Fprintln(tw, strings.Join(cells, "\t")); err != nil {
			return err
		}
	}
	return tw.Flush()
}

// WriteStructured writes v as indented JSON or as YAML.
func WriteStructured(w io.Writer, format string, v any) error {
	switch format {
	case JSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(v)
	case YAML:
		b, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	return fmt.Errorf("unknown output format %q", format)
}
