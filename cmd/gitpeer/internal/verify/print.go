package verify

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/gitpeer/gitpeer/cmd/gitpeer/internal/printer"
	"github.com/gitpeer/gitpeer/reconciler/verdict"
)

// Print writes the results as a PATH VALID REASON table (with a verdict line
// per peering directory, its path ending in "/") followed by a summary of
// the files, or as JSON or YAML (a list of {path, valid, reason}). Ignored files are
// included only when verbose.
func Print(w io.Writer, results []verdict.Result, format string, verbose bool) error {
	shown := make([]verdict.Result, 0, len(results))
	for _, r := range results {
		if verbose || !r.Ignored {
			shown = append(shown, r)
		}
	}
	if format != printer.Table {
		return printer.WriteStructured(w, format, shown)
	}
	rows := make([][]string, 0, len(shown))
	for _, r := range shown {
		valid := strconv.FormatBool(r.Valid)
		if r.Directory {
			valid = "-"
		}
		rows = append(rows, []string{r.Path, valid, r.Reason})
	}
	if len(rows) > 0 {
		if err := printer.WriteTable(w, []string{"PATH", "VALID", "REASON"}, rows); err != nil {
			return err
		}
	}
	checked, invalid, ignored := Count(results)
	_, err := fmt.Fprintf(w, "%d files checked, %d invalid, %d ignored\n", checked, invalid, ignored)
	return err
}

// PrintJudged writes which commit a report judged and, for a pull request (base set), into
// which branch and from which merge bases.
func PrintJudged(w io.Writer, rep Report, base string) error {
	var err error
	if base == "" {
		_, err = fmt.Fprintf(w, "commit %s\n", rep.Commit)
	} else {
		_, err = fmt.Fprintf(w, "commit %s, as a pull request into %s (merge base %s)\n", rep.Commit, base, strings.Join(rep.MergeBases, ", "))
	}
	return err
}
