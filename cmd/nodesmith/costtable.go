package main

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/nodesmith/nodesmith/pkg/cost"
)

// dollars formats a $/h figure the same way everywhere the CLI prints one.
func dollars(v float64) string { return fmt.Sprintf("$%.4f", v) }

// tabulate lays out the rows fill writes (tab-separated) as aligned
// columns, without trailing blanks.
func tabulate(w io.Writer, fill func(tw io.Writer)) {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	fill(tw)
	tw.Flush()
	for _, line := range strings.SplitAfter(buf.String(), "\n") {
		if line == "" {
			continue
		}
		fmt.Fprintln(w, strings.TrimRight(line, " \n"))
	}
}

// plural is "1 pod", "2 pods".
func plural(n int, one string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %ss", n, one)
}

// writeBreakdown prints a cost breakdown, one line per NodePool, capacity
// type and instance type, and its total, indented by indent.
func writeBreakdown(w io.Writer, indent string, b cost.Breakdown) {
	tabulate(w, func(tw io.Writer) {
		fmt.Fprintf(tw, "%sNODEPOOL\tCAPACITY\tINSTANCE TYPE\tNODES\t$/H\n", indent)
		for _, l := range b.Lines {
			fmt.Fprintf(tw, "%s%s\t%s\t%s\t%d\t%s\n", indent, l.NodePool, l.CapacityType, l.InstanceType, l.Nodes, dollars(l.PerHour))
		}
		fmt.Fprintf(tw, "%stotal\t\t\t%d\t%s\n", indent, b.Nodes, dollars(b.PerHour))
	})
}
