package status

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/gitpeer/gitpeer/cmd/gitpeer/internal/printer"
)

// Print writes the report as two tables, the peerings then the
// PeeringRepositories' counts, or as a JSON or YAML object.
func Print(w io.Writer, report *Report, format string) error {
	if format != printer.Table {
		return printer.WriteStructured(w, format, report)
	}
	rows := make([][]string, 0, len(report.Peerings))
	for _, p := range report.Peerings {
		rows = append(rows, []string{p.Namespace, p.Repository, string(p.Role), p.Peer, p.Phase, stamp(p.Since),
			p.Object, p.Condition, stamp(p.Expires), p.Reason, p.Message})
	}
	if err := printer.WriteTable(w, []string{"NAMESPACE", "REPOSITORY", "ROLE", "PEER", "PHASE", "SINCE", "OBJECT", "CONDITION", "CERT EXPIRES", "REASON", "MESSAGE"}, rows); err != nil {
		return err
	}
	if len(report.Repositories) == 0 {
		return nil
	}
	rows = rows[:0]
	for _, r := range report.Repositories {
		var counts []string
		total := int32(0)
		for _, c := range r.Counts {
			counts = append(counts, fmt.Sprintf("%s %s: %d", c.Role, c.Phase, c.Count))
			total += c.Count
		}
		rows = append(rows, []string{r.Namespace, r.Name, fmt.Sprint(total), fmt.Sprint(r.NeedingAttention), fmt.Sprint(r.Unlisted), strings.Join(counts, ", ")})
	}
	if _, err := fmt.Fprintln(w); err != nil {
		return err
	}
	return printer.WriteTable(w, []string{"NAMESPACE", "REPOSITORY", "PEERINGS", "NEED ATTENTION", "UNLISTED", "BY ROLE AND PHASE"}, rows)
}

func stamp(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.Format(time.RFC3339)
}
