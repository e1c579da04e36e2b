package scheduler

import (
	"fmt"
	"testing"
)

// BenchmarkSchedule places a mixed workload (see genPods: default-spread
// Deployments, bare pods, zone spreading, hostname anti-affinity, preferred
// affinity, node selectors) one pod at a time, binding each that fits, as
// the simulator does.
func BenchmarkSchedule(b *testing.B) {
	for _, c := range []struct{ pods, nodes int }{{5000, 200}, {10000, 500}} {
		b.Run(fmt.Sprintf("pods=%d/nodes=%d", c.pods, c.nodes), func(b *testing.B) {
			pods := genPods(c.pods, 1)
			nodes := genNodes(c.nodes)
			var unplaced int
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				s := cluster(nodes, dbPods()...)
				unplaced = 0
				for _, n := range runDirect(s, pods) {
					if n == "" {
						unplaced++
					}
				}
			}
			b.ReportMetric(float64(c.pods*b.N)/b.Elapsed().Seconds(), "pods/s")
			b.ReportMetric(float64(unplaced), "unplaced")
		})
	}
}
