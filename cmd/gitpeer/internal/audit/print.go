package audit

import (
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/gitpeer/gitpeer/cmd/gitpeer/internal/printer"
)

// Print writes the events as a TIME EVENT PROVIDER CONSUMER BY SOURCE COMMIT
// DETAILS table (wide: with the committer, whether the commit is a merge, and
// the whole hash), or as a JSON or YAML list.
func Print(w io.Writer, events []Event, format string) error {
	if format != printer.Table && format != printer.Wide {
		if events == nil {
			events = []Event{}
		}
		return printer.WriteStructured(w, format, events)
	}
	rows := make([][]string, 0, len(events))
	for _, e := range events {
		details := e.Details
		if e.Serial != "" {
			details = fmt.Sprintf("serial %s, expires %s", e.Serial, e.Expires)
		}
		if e.Override != "" {
			details += ", under override " + e.Override
		}
		if format == printer.Wide {
			rows = append(rows, []string{e.Time.Format(time.RFC3339), e.Event, e.Provider, e.Consumer, e.By.Name, e.Committer.Name, e.Source, strconv.FormatBool(e.Merge), e.Commit, details})
			continue
		}
		rows = append(rows, []string{e.Time.Format(time.RFC3339), e.Event, e.Provider, e.Consumer, e.By.Name, e.Source, e.Commit[:min(8, len(e.Commit))], details})
	}
	if format == printer.Wide {
		return printer.WriteTable(w, []string{"TIME", "EVENT", "PROVIDER", "CONSUMER", "BY", "COMMITTER", "SOURCE", "MERGE", "COMMIT", "DETAILS"}, rows)
	}
	return printer.WriteTable(w, []string{"TIME", "EVENT", "PROVIDER", "CONSUMER", "BY", "SOURCE", "COMMIT", "DETAILS"}, rows)
}
