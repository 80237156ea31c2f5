package status

import (
	"fmt"
	"io"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
	"github.com/gitpeer/gitpeer/cmd/gitpeer/internal/printer"
)

// Print writes the report as two tables, the peerings (more columns when
// format is wide) then the PeeringRepositories' counts, and a warning per
// PeeringRepository no agent watches; as a JSON or YAML object; or, with
// name, the Tenants and Identities of the peerings as kind.group/name.
func Print(w io.Writer, report *Report, format string) error {
	switch format {
	case printer.Name:
		return printNames(w, report)
	case printer.Table, printer.Wide:
	default:
		return printer.WriteStructured(w, format, report)
	}
	if err := printTables(w, report, format == printer.Wide); err != nil {
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
func printTables(w io.Writer, report *Report, wide bool) error {
	header := []string{"NAMESPACE", "REPOSITORY", "ROLE", "PEER", "PHASE", "CERT EXPIRES", "MESSAGE"}
	if wide {
		header = []string{"NAMESPACE", "REPOSITORY", "ROLE", "PEER", "PHASE", "SINCE", "OBJECT", "CONDITION", "CERT EXPIRES", "REASON", "MESSAGE"}
	}
	rows := make([][]string, 0, len(report.Peerings))
	for _, p := range report.Peerings {
		if wide {
			rows = append(rows, []string{p.Namespace, p.Repository, string(p.Role), p.Peer, p.Phase, stamp(p.Since),
				p.Object, p.Condition, stamp(p.Expires), p.Reason, p.Message})
			continue
		}
		rows = append(rows, []string{p.Namespace, p.Repository, string(p.Role), p.Peer, p.Phase, stamp(p.Expires), p.Message})
	}
	if err := printer.WriteTable(w, header, rows); err != nil {
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

// printNames writes the Tenant (provider role) or Identity (consumer role) of
// each peering that has one, as kubectl get -o name does.
func printNames(w io.Writer, report *Report) error {
	var objs []runtime.Object
	for _, p := range report.Peerings {
		ns, name, ok := strings.Cut(p.Object, "/")
		if !ok {
			continue
		}
		kind := "Tenant"
		if p.Role == gitpeerv1alpha1.ConsumerRole {
			kind = "Identity"
		}
		o := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		o.SetGroupVersionKind(authv1beta1.GroupVersion.WithKind(kind))
		objs = append(objs, o)
	}
	return printer.WriteNames(w, objs...)
}

func stamp(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.Format(time.RFC3339)
}
