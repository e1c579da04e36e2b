package messages

import (
	"strings"
	"testing"
)

// BenchmarkParse parses a mix of every kind, as a queue delivers them.
func BenchmarkParse(b *testing.B) {
	bodies := []string{spotWarning, rebalanceRec, strings.Replace(stateTmpl, "STATE", "stopping", 1),
		strings.Replace(stateTmpl, "STATE", "running", 1), healthRetire, snsWrap(spotWarning), "not json", asgLifecycle}
	n := 0
	for b.Loop() {
		if m := Parse(bodies[n%len(bodies)]); m.Kind == "" {
			b.Fatal("no kind")
		}
		n++
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "msgs/s")
}
