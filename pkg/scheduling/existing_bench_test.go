package scheduling

import (
	"fmt"
	"math/rand"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// BenchmarkSolveOntoNodes is a solve where most pods land on existing
// capacity: 1,000 registered nodes (8–64 vCPU types of BenchmarkSolve's
// mix, two zones) each filled to about half its cpu and memory with the plain request mix, and the
// Karpenter-benchmark pods (plain, spread and affinity) pending. It prices
// the placement onto existing nodes, which BenchmarkSolve (no nodes) never
// runs; "on-nodes" is how many pods it placed there.
func BenchmarkSolveOntoNodes(b *testing.B) {
	types := benchTypes(64)
	r := rand.New(rand.NewSource(42))
	var nodes []*ExistingNode
	running := plainPods(40000, 7)
	for i := 0; i < 1000; i++ {
		it := types[7+r.Intn(57)]
		name := fmt.Sprintf("node-%04d", i)
		n := &ExistingNode{Name: name, Allocatable: it.Allocatable(), Labels: map[string]string{
			corev1.LabelHostname: name, corev1.LabelTopologyZone: fmt.Sprintf("test-zone-%d", 1+i%2), corev1.LabelInstanceTypeStable: it.Name}}
		cpu, mem := n.Allocatable.Cpu().MilliValue()/2, n.Allocatable.Memory().Value()/2
		for len(running) > 0 {
			p := running[0]
			req := p.Spec.Containers[0].Resources.Requests
			if req.Cpu().MilliValue() > cpu || req.Memory().Value() > mem {
				break
			}
			running = running[1:]
			cpu, mem = cpu-req.Cpu().MilliValue(), mem-req.Memory().Value()
			p.Name, p.UID = "running-"+p.Name, "running-"+p.UID
			p.Spec.NodeName = name
			n.Pods = append(n.Pods, p)
		}
		nodes = append(nodes, n)
	}
	for _, size := range []int{1000, 5000} {
		pods := karpenterPods(size, 42)
		b.Run(fmt.Sprintf("pods=%d", size), func(b *testing.B) {
			in := Input{Pods: pods, Nodes: nodes, NodePools: []*NodePool{defaultPool(types)}}
			var plan *Plan
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuTime()
			for i := 0; i < b.N; i++ {
				var err error
				if plan, err = Solve(in); err != nil {
					b.Fatal(err)
				}
			}
			cpu := cpuTime() - cpu0
			b.StopTimer()
			b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
			if errs := planViolations(in, plan); len(errs) > 0 {
				b.Fatalf("%d violations, first: %s", len(errs), errs[0])
			}
			b.ReportMetric(float64(len(plan.Nominations)), "on-nodes")
			b.ReportMetric(float64(len(plan.Unschedulable)), "unplaced")
			b.ReportMetric(float64(len(plan.NewClaims)), "nodes")
			b.ReportMetric(plan.Cost(), "usd/h")
		})
	}
}
