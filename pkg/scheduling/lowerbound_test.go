package scheduling

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
)

// boundType builds a type whose allocatable is its capacity, offered in one
// zone at price (on-demand) and, when spot > 0, at spot.
func lbType(name string, milli, memMi, pods int64, price, spot float64) *catalog.InstanceType {
	it := &catalog.InstanceType{
		Name:   name,
		Labels: map[string]string{corev1.LabelInstanceTypeStable: name},
		Capacity: corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewMilliQuantity(milli, resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(memMi<<20, resource.BinarySI),
			corev1.ResourcePods:   *resource.NewQuantity(pods, resource.DecimalSI),
		},
		Offerings: catalog.Offerings{{Zone: "z", CapacityType: nsv1.CapacityTypeOnDemand, Price: price, Available: true}},
	}
	if spot > 0 {
		it.Offerings = append(it.Offerings, catalog.Offering{Zone: "z", CapacityType: nsv1.CapacityTypeSpot, Price: spot, Available: true})
	}
	return it
}

func lbPods(milli, memMi int64, n int) []*corev1.Pod {
	var out []*corev1.Pod
	for i := 0; i < n; i++ {
		out = append(out, pod(fmt.Sprintf("p-%d-%d-%d", milli, memMi, i), fmt.Sprintf("%dm", milli), fmt.Sprintf("%dMi", memMi)))
	}
	return out
}

// bruteForce is the cheapest integer plan: every partition of the pods into
// nodes, each node the cheapest type holding its pods.
func bruteForce(types []*catalog.InstanceType, pods []*corev1.Pod) float64 {
	type cap struct{ c, m, p, price float64 }
	var caps []cap
	for _, it := range types {
		o, ok := it.Offerings.Available().Cheapest()
		if !ok {
			continue
		}
		a := it.Allocatable()
		c, m, p := a[corev1.ResourceCPU], a[corev1.ResourceMemory], a[corev1.ResourcePods]
		caps = append(caps, cap{float64(c.MilliValue()), float64(m.Value()), float64(p.Value()), o.Price})
	}
	cpu := make([]float64, len(pods))
	mem := make([]float64, len(pods))
	for i, p := range pods {
		cpu[i] = float64(p.Spec.Containers[0].Resources.Requests.Cpu().MilliValue())
		mem[i] = float64(p.Spec.Containers[0].Resources.Requests.Memory().Value())
	}
	nodeCost := func(block []int) float64 {
		var c, m float64
		for _, i := range block {
			c, m = c+cpu[i], m+mem[i]
		}
		best := math.Inf(1)
		for _, t := range caps {
			if c <= t.c && m <= t.m && float64(len(block)) <= t.p {
				best = math.Min(best, t.price)
			}
		}
		return best
	}
	best := math.Inf(1)
	var blocks [][]int
	var rec func(i int)
	rec = func(i int) {
		if i == len(pods) {
			total := 0.0
			for _, b := range blocks {
				total += nodeCost(b)
			}
			best = math.Min(best, total)
			return
		}
		for j := range blocks {
			blocks[j] = append(blocks[j], i)
			rec(i + 1)
			blocks[j] = blocks[j][:len(blocks[j])-1]
		}
		blocks = append(blocks, []int{i})
		rec(i + 1)
		blocks = blocks[:len(blocks)-1]
	}
	rec(0)
	return best
}

func TestPackingLowerBound(t *testing.T) {
	cases := []struct {
		name     string
		types    []*catalog.InstanceType
		pods     []*corev1.Pod
		want     float64 // exact LP optimum
		aggBelow float64 // CostLowerBound must be below this (it is weaker)
	}{
		{
			name: "cheap cpu no pod can use is not counted",
			// The burstable type's 2 cpu cost almost nothing but its 128Mi
			// hold none of the pods; every pod needs the general type.
			types: []*catalog.InstanceType{lbType("burst", 2000, 128, 4, 0.001, 0), lbType("general", 2000, 8192, 110, 0.1, 0)},
			pods:  lbPods(1000, 1024, 4),
			want:  0.2, aggBelow: 0.06,
		},
		{
			name:  "pod slots bind before cpu and memory",
			types: []*catalog.InstanceType{lbType("eni", 10000, 10240, 2, 0.1, 0)},
			pods:  lbPods(100, 100, 6),
			want:  0.3, aggBelow: 0.01,
		},
		{
			name:  "the cheapest offering of each type prices it",
			types: []*catalog.InstanceType{lbType("a", 4000, 8192, 110, 0.4, 0.1)},
			pods:  lbPods(1000, 2048, 8),
			want:  0.2, aggBelow: 0.2 + 1e-9,
		},
		{
			name: "an unavailable offering does not price the type",
			types: []*catalog.InstanceType{func() *catalog.InstanceType {
				it := lbType("a", 4000, 8192, 110, 0.4, 0.1)
				it.Offerings[1].Available = false // spot is out of capacity
				return it
			}()},
			pods: lbPods(1000, 2048, 8),
			want: 0.8, aggBelow: 0.8 + 1e-9,
		},
		{
			name: "cpu-heavy and memory-heavy pods share the balanced type",
			types: []*catalog.InstanceType{
				lbType("c", 4000, 4096, 110, 0.1, 0), lbType("r", 1000, 16384, 110, 0.1, 0), lbType("m", 4000, 16384, 110, 0.25, 0),
			},
			// 4 × (1 cpu, 1Gi) fill c exactly; 4 × (250m, 4Gi) fill r exactly.
			pods: append(lbPods(1000, 1024, 4), lbPods(250, 4096, 4)...),
			want: 0.2, aggBelow: 0.2 + 1e-9,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := PackingLowerBound(tc.types, tc.pods)
			if math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("PackingLowerBound = %.6f, want %.6f", got, tc.want)
			}
			cpu, mem := totalRequests(tc.pods)
			if agg := CostLowerBound(tc.types, cpu, mem); agg >= tc.aggBelow {
				t.Errorf("CostLowerBound = %.6f, want below %.6f", agg, tc.aggBelow)
			}
			if opt := bruteForce(tc.types, tc.pods); got > opt+1e-9 {
				t.Errorf("bound %.6f above the integer optimum %.6f", got, opt)
			}
		})
	}
}

// TestLowerBoundsNeverExceedTheOptimum checks both bounds against the
// brute-force integer optimum of random tiny instances, and that the
// packing bound is at least the aggregate one.
func TestLowerBoundsNeverExceedTheOptimum(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	cpus := []int64{250, 500, 1000, 1500}
	mems := []int64{128, 256, 512, 1024, 2048, 3072}
	tight := 0
	for i := 0; i < 300; i++ {
		var types []*catalog.InstanceType
		for j := 0; j < 2+r.Intn(3); j++ {
			price := 0.01 + r.Float64()
			spot := 0.0
			if r.Intn(2) == 0 {
				spot = price * (0.2 + 0.6*r.Float64())
			}
			// Large types (more than wholeFillPods pods fit) take the
			// fractional fills, small ones the whole-pod search.
			types = append(types, lbType(fmt.Sprintf("t%d", j), []int64{1000, 2000, 4000, 16000}[r.Intn(4)], []int64{512, 1024, 4096, 8192, 32768}[r.Intn(5)], []int64{2, 4, 8, 110}[r.Intn(4)], price, spot))
		}
		var pods []*corev1.Pod
		for j := 0; j < 1+r.Intn(6); j++ {
			pods = append(pods, lbPods(cpus[r.Intn(len(cpus))], mems[r.Intn(len(mems))], 1)...)
			pods[len(pods)-1].Name = fmt.Sprintf("p%d", j)
		}
		opt := bruteForce(types, pods)
		pb := PackingLowerBound(types, pods)
		cpu, mem := totalRequests(pods)
		agg := CostLowerBound(types, cpu, mem)
		if math.IsInf(opt, 1) {
			if !math.IsInf(pb, 1) {
				t.Errorf("instance %d: no plan exists but the packing bound is %.4f", i, pb)
			}
			continue
		}
		if pb > opt*(1+1e-9) || agg > opt*(1+1e-9) {
			t.Errorf("instance %d: bounds %.6f (packing) %.6f (aggregate) above the optimum %.6f", i, pb, agg, opt)
		}
		if pb < agg*(1-1e-9) {
			t.Errorf("instance %d: packing bound %.6f below the aggregate %.6f", i, pb, agg)
		}
		if pb >= opt*(1-1e-9) {
			tight++
		}
	}
	t.Logf("packing bound met the optimum in %d of 300 instances", tight)
	if tight == 0 {
		t.Error("the packing bound never met the optimum: it is suspiciously weak")
	}
}

// TestPackingLPSolution checks the LP's primal side on the real catalog:
// the fills it ends with hold every pod, each fits its type, and their cost
// equals the bound (strong duality), so the bound is the LP's optimum and
// not an artefact of the dual iteration.
func TestPackingLPSolution(t *testing.T) {
	cat, err := catalog.Load(catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pods := plainPods(1000, 42)
	lb, pats := packingLP(cat.Types(), pods)
	cls := boundClasses(pods)
	covered := make([]float64, len(cls))
	cost := 0.0
	for _, p := range pats {
		var c, m, n float64
		for k, w := range p.w {
			covered[k] += w * p.nodes
			c, m, n = c+w*cls[k].cpu, m+w*cls[k].mem, n+w
			if w > 1e-9 && !p.t.fits[k] {
				t.Errorf("%s holds a class that does not fit it", p.t.name)
			}
		}
		if c > p.t.cpu*(1+1e-9) || m > p.t.mem*(1+1e-9) || n > p.t.pods*(1+1e-9) {
			t.Errorf("%s fill (%.0fm, %.0f bytes, %.2f pods) exceeds it", p.t.name, c, m, n)
		}
		if p.t.whole {
			for _, w := range p.w {
				if math.Abs(w-math.Round(w)) > 1e-9 {
					t.Errorf("%s takes whole pods but its fill has %.3f", p.t.name, w)
				}
			}
		}
		cost += p.nodes * p.t.price
	}
	for k, c := range cls {
		if covered[k] < c.n*(1-1e-6) {
			t.Errorf("class %.0fm/%.0f bytes: %.2f of %.0f pods covered", c.cpu, c.mem, covered[k], c.n)
		}
	}
	if math.Abs(cost-lb) > 1e-6*lb {
		t.Errorf("fills cost %.6f, bound %.6f: the LP did not converge", cost, lb)
	}
	cpu, mem := totalRequests(pods)
	if agg := CostLowerBound(cat.Types(), cpu, mem); lb < agg*1.5 {
		t.Errorf("packing bound %.3f not clearly above the aggregate %.3f on the real catalog", lb, agg)
	}
}

// TestManyShapes: with many distinct pod shapes the whole-pod search of
// small types hits its step cap and falls back to fractional fills, and
// the solver skips LP seeding above lpSeedClasses items. The bound must
// still sit between the aggregate LP and the plan, and the plan be valid.
func TestManyShapes(t *testing.T) {
	types := []*catalog.InstanceType{
		lbType("small", 2000, 4096, 20, 0.02, 0.008), lbType("medium", 4000, 8192, 24, 0.04, 0.015), lbType("large", 64000, 262144, 737, 0.6, 0.25),
	}
	for _, shapes := range []int{60, 200} {
		var ps []*corev1.Pod
		for i := 0; i < 2*shapes; i++ {
			s := i % shapes
			p := pod(fmt.Sprintf("p-%d", i), fmt.Sprintf("%dm", 50+7*s), fmt.Sprintf("%dMi", 64+13*s))
			ps = append(ps, p)
		}
		in := Input{Pods: ps, NodePools: []*NodePool{{Name: "p", Weight: 1, Requirements: Requirements{}, InstanceTypes: types}}}
		plan, err := Solve(in)
		if err != nil {
			t.Fatal(err)
		}
		if len(plan.Unschedulable) > 0 {
			t.Fatalf("%d shapes: %d unplaced: %s", shapes, len(plan.Unschedulable), plan.Unschedulable[0].Reason)
		}
		checkPlan(t, in, plan)
		lb := PackingLowerBound(types, ps)
		cpu, mem := totalRequests(ps)
		if agg := CostLowerBound(types, cpu, mem); lb < agg*(1-1e-9) || lb > plan.Cost()*(1+1e-9) {
			t.Errorf("%d shapes: bound %.4f outside [aggregate %.4f, plan %.4f]", shapes, lb, agg, plan.Cost())
		}
	}
}
