// Package printer writes the CLI's output the way kubectl does: an aligned
// table by default, more columns with -o wide, JSON / YAML, or the objects'
// kind/name with -o name.
package printer

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/yaml"
)

// Output formats accepted by -o.
const (
	Table = ""
	Wide  = "wide"
	Name  = "name"
	JSON  = "json"
	YAML  = "yaml"
)

// Output is the -o (--output) flag of a command.
type Output struct {
	// Format is the flag's value.
	Format  string
	allowed []string
}

// AddFlag adds -o/--output to cmd: def (Table, or one of allowed) unless
// given, and one of allowed otherwise; its values complete in the shell.
func AddFlag(cmd *cobra.Command, def string, allowed ...string) *Output {
	o := &Output{allowed: allowed}
	usage := "output format: " + strings.Join(allowed, ", ")
	if def == Table {
		usage += " (default: table)"
	}
	cmd.Flags().StringVarP(&o.Format, "output", "o", def, usage)
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(allowed, cobra.ShellCompDirectiveNoFileComp))
	return o
}

// Check returns an error, naming the flag and the formats it takes, unless
// the format is the table or one of the allowed.
func (o *Output) Check() error {
	if o.Format == Table || slices.Contains(o.allowed, o.Format) {
		return nil
	}
	return fmt.Errorf("--output (-o) %q is not supported here: use one of %s", o.Format, strings.Join(o.allowed, ", "))
}

// WriteObject writes a Kubernetes object, which has its apiVersion and kind,
// as kubectl -o json, yaml or name does, with k8s.io/cli-runtime's printers;
// -o name writes each item of a List.
func WriteObject(w io.Writer, format string, obj runtime.Object) error {
	switch format {
	case JSON:
		return (&printers.JSONPrinter{}).PrintObj(obj, w)
	case YAML:
		return (&printers.YAMLPrinter{}).PrintObj(obj, w)
	case Name:
		if !meta.IsListType(obj) {
			return WriteNames(w, obj)
		}
		items, err := meta.ExtractList(obj)
		if err != nil {
			return err
		}
		return WriteNames(w, items...)
	}
	return fmt.Errorf("unknown output format %q", format)
}

// WriteNames writes kind.group/name of each object, as kubectl's -o name
// (k8s.io/cli-runtime's NamePrinter); each needs its apiVersion and kind.
func WriteNames(w io.Writer, objs ...runtime.Object) error {
	p := &printers.NamePrinter{}
	for _, o := range objs {
		if err := p.PrintObj(o, w); err != nil {
			return err
		}
	}
	return nil
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
