package status

import (
	"io"
	"time"

	"github.com/gitpeer/gitpeer/cmd/gitpeer/internal/printer"
)

// Print writes the peerings as a table, or as a JSON or YAML list.
func Print(w io.Writer, peerings []Row, format string) error {
	if format != printer.Table {
		if peerings == nil {
			peerings = []Row{}
		}
		return printer.WriteStructured(w, format, peerings)
	}
	rows := make([][]string, 0, len(peerings))
	for _, p := range peerings {
		rows = append(rows, []string{p.Namespace, p.Repository, string(p.Role), p.Peer, p.Phase, stamp(p.Since),
			p.Object, p.Condition, stamp(p.Expires), p.Message})
	}
	return printer.WriteTable(w, []string{"NAMESPACE", "REPOSITORY", "ROLE", "PEER", "PHASE", "SINCE", "OBJECT", "CONDITION", "CERT EXPIRES", "MESSAGE"}, rows)
}

func stamp(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.Format(time.RFC3339)
}
