package status

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/gitpeer/gitpeer/cmd/gitpeer/internal/printer"
)

// Print writes the report as two tables, the peerings then the
// PeeringRepositories' counts, and a warning per PeeringRepository no agent
// watches; or as a JSON or YAML object.
func Print(w io.Writer, report *Report, format string) error {
	if format != printer.Table {
		return printer.WriteStructured(w, format, report)
	}
	if err := printTables(w, report); err != nil {
		return err
	}
	for _, u := range report.Unwatched {
		if _, err := fmt.Fprintf(w, "\nWarning: no gitpeer agent acts on PeeringRepository %s/%s: its namespace is not one the agents watch (%s); create it in the namespace of an agent\n",
			u.Namespace, u.Name, strings.Join(u.Agents, "; ")); err != nil {
			return err
		}
	}
	return nil
}

// printTables writes the peerings and the PeeringRepositories' counts.
func printTables(w io.Writer, report *Report) error {
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
