package audit

import (
	"fmt"
	"io"
	"time"

	"github.com/gitpeer/gitpeer/cmd/gitpeer/internal/printer"
)

// Print writes the events as a TIME EVENT PROVIDER CONSUMER BY SOURCE COMMIT
// DETAILS table, or as a JSON or YAML list.
func Print(w io.Writer, events []Event, format string) error {
	if format != printer.Table {
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
		rows = append(rows, []string{e.Time.Format(time.RFC3339), e.Event, e.Provider, e.Consumer, e.By.Name, e.Source, e.Commit[:min(8, len(e.Commit))], details})
	}
	return printer.WriteTable(w, []string{"TIME", "EVENT", "PROVIDER", "CONSUMER", "BY", "SOURCE", "COMMIT", "DETAILS"}, rows)
}
