package scheduling

import (
	"fmt"
	"sort"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
)

// spotFleetPool is examples/spot-fleet.yaml as the solver sees it: six
// families (minValues 3), no nano/micro/small sizes, spot only, limited to
// 1,000 cpu and 1,000Gi of launched capacity.
func spotFleetPool(types []*catalog.InstanceType) *NodePool {
	fam := NewRequirement(awsv1.LabelInstanceFamily, corev1.NodeSelectorOpIn, "c5", "c6g", "m5", "m6g", "r5", "r6g")
	fam.MinValues = ptr.To(3)
	np := &NodePool{Name: "spot-fleet", Weight: 50, Labels: map[string]string{"fleet": "spot"}, InstanceTypes: types, Requirements: Requirements{}}
	np.Requirements.Add(fam)
	np.Requirements.Add(NewRequirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64", "arm64"))
	np.Requirements.Add(NewRequirement(awsv1.LabelInstanceSize, corev1.NodeSelectorOpNotIn, "nano", "micro", "small"))
	np.Requirements.Add(NewRequirement(nsv1.LabelCapacityType, corev1.NodeSelectorOpIn, nsv1.CapacityTypeSpot))
	np.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1000"), corev1.ResourceMemory: resource.MustParse("1000Gi")}
	return np
}

// limitedPods is the example: 1,500 pods of 250m/512Mi and 40 of 500m/6Gi.
func limitedPods() []*corev1.Pod {
	return append(pods(1500, "small", "250m", "512Mi"), pods(40, "large", "500m", "6Gi")...)
}

// limitedUpperBound is the most pods any plan can place in the pool: the LP
//
//	max Σ y_kt  s.t.  Σ_t capacity_rt·x_t ≤ limit_r (r ∈ cpu, memory),
//	Σ_k req_rk·y_kt ≤ alloc_rt·x_t (r ∈ cpu, memory, pods),  Σ_t y_kt ≤ n_k
//
// over fractional nodes x_t of the pool's types (those its requirements
// admit with an available offering in its capacity types) and pods y_kt of
// each class k on them. It ignores minValues.
func limitedUpperBound(np *NodePool, pods []*corev1.Pod) float64 {
	var kinds []nodeKind
	for _, it := range limitedPoolTypes(np) {
		kinds = append(kinds, typeKind(it))
	}
	return limitedLP(np, kinds, pods)
}

// limitedUpperBoundMinValues is limitedUpperBound for a pool whose
// instance families carry minValues n, under the solver's limit rule: a
// claim may launch any of its options, so it is charged in each resource
// the largest capacity among them, and its options come from at least n
// families, each holding its pods. The LP's nodes are then claims, not
// types: a claim whose options span families S, holding content (c, m),
// costs at least the claim made of each family's smallest type holding
// (c, m); and (c, m) can be taken to be the smallest allocatable among
// the kept types, in each dimension, so a value some type has. So the
// kinds are, for every n families and every (c, m) of the pool's
// allocatable cpu and memory values, the n smallest such types: allocatable
// their minimum, charge their maximum capacity, pod slots relaxed to the
// pool's largest. Every claim the solver can plan is at least as
// expensive as one of these kinds and holds no more, so the LP is an
// upper bound on what any plan keeping minValues places.
func limitedUpperBoundMinValues(np *NodePool, pods []*corev1.Pod) (float64, error) {
	r := np.Requirements.Get(awsv1.LabelInstanceFamily)
	if r == nil || r.MinValues == nil {
		return limitedUpperBound(np, pods), nil
	}
	n := *r.MinValues
	types := limitedPoolTypes(np)
	byFamily := map[string][]*catalog.InstanceType{}
	var families []string
	var cpus, mems []int64
	maxPods := int64(0)
	for _, it := range types {
		f := it.Labels[awsv1.LabelInstanceFamily]
		if _, ok := byFamily[f]; !ok {
			families = append(families, f)
		}
		byFamily[f] = append(byFamily[f], it)
		a := it.Allocatable()
		cpus = append(cpus, a.Cpu().MilliValue())
		mems = append(mems, a.Memory().Value())
		maxPods = max(maxPods, a.Pods().Value())
	}
	sort.Strings(families)
	// The argument needs each family's types to be a chain: the smallest
	// type holding (c, m) is no larger than any other that does.
	for _, f := range families {
		ts := byFamily[f]
		for _, a := range ts {
			for _, b := range ts {
				ca, cb := a.Capacity, b.Capacity
				if ca.Cpu().Cmp(*cb.Cpu()) < 0 && ca.Memory().Cmp(*cb.Memory()) > 0 {
					return 0, fmt.Errorf("family %s is not a chain: %s and %s", f, a.Name, b.Name)
				}
			}
		}
	}
	smallest := func(f string, c, m int64) *catalog.InstanceType {
		var best *catalog.InstanceType
		for _, it := range byFamily[f] {
			a := it.Allocatable()
			if a.Cpu().MilliValue() < c || a.Memory().Value() < m {
				continue
			}
			if best == nil || it.Capacity.Cpu().Cmp(*best.Capacity.Cpu()) < 0 || it.Capacity.Cpu().Cmp(*best.Capacity.Cpu()) == 0 && it.Capacity.Memory().Cmp(*best.Capacity.Memory()) < 0 {
				best = it
			}
		}
		return best
	}
	seen := map[nodeKind]bool{}
	var kinds []nodeKind
	var subsets func(from int, chosen []string)
	subsets = func(from int, chosen []string) {
		if len(chosen) == n {
			for _, c := range cpus {
				for _, m := range mems {
					var k nodeKind
					ok := true
					for i, f := range chosen {
						it := smallest(f, c, m)
						if it == nil {
							ok = false
							break
						}
						tk := typeKind(it)
						if i == 0 {
							k = tk
							continue
						}
						for r := 0; r < 2; r++ {
							k.alloc[r] = min(k.alloc[r], tk.alloc[r])
							k.charge[r] = max(k.charge[r], tk.charge[r])
						}
					}
					if !ok {
						continue
					}
					k.alloc[2] = float64(maxPods)
					if !seen[k] {
						seen[k] = true
						kinds = append(kinds, k)
					}
				}
			}
			return
		}
		for i := from; i < len(families); i++ {
			subsets(i+1, append(chosen, families[i]))
		}
	}
	subsets(0, nil)
	if len(families) < n {
		return 0, nil
	}
	// Drop kinds another holds as much with no more charge (kinds are
	// distinct, so two cannot drop each other).
	var kept []nodeKind
	for i, a := range kinds {
		dominated := false
		for j, b := range kinds {
			if i == j {
				continue
			}
			if b.alloc[0] >= a.alloc[0] && b.alloc[1] >= a.alloc[1] && b.charge[0] <= a.charge[0] && b.charge[1] <= a.charge[1] {
				dominated = true
				break
			}
		}
		if !dominated {
			kept = append(kept, a)
		}
	}
	return limitedLP(np, kept, pods), nil
}

// nodeKind is a column of the limited LPs: what a node holds (cpu, memory,
// pod slots) and what the limits count for it (cpu, memory).
type nodeKind struct {
	alloc  [3]float64
	charge [2]float64
}

func typeKind(it *catalog.InstanceType) nodeKind {
	a := it.Allocatable()
	return nodeKind{
		alloc:  [3]float64{float64(a.Cpu().MilliValue()), float64(a.Memory().Value()), float64(a.Pods().Value())},
		charge: [2]float64{float64(it.Capacity.Cpu().MilliValue()), float64(it.Capacity.Memory().Value())},
	}
}

// limitedPoolTypes are the pool's types: those its requirements admit with
// an available offering in its capacity types.
func limitedPoolTypes(np *NodePool) []*catalog.InstanceType {
	ct := np.Requirements.Get(nsv1.LabelCapacityType)
	var types []*catalog.InstanceType
	for _, it := range np.InstanceTypes {
		ok := true
		for _, k := range np.Requirements.Keys() {
			if k == nsv1.LabelCapacityType || k == corev1.LabelTopologyZone {
				continue
			}
			v, present := it.Labels[k]
			ok = ok && np.Requirements[k].Matches(v, present)
		}
		offered := false
		for _, o := range it.Offerings {
			offered = offered || o.Available && (ct == nil || ct.Has(o.CapacityType))
		}
		if ok && offered {
			types = append(types, it)
		}
	}
	return types
}

// limitedLP is the LP of limitedUpperBound over the given node kinds.
func limitedLP(np *NodePool, kinds []nodeKind, pods []*corev1.Pod) float64 {
	type class struct {
		req [3]float64
		n   float64
	}
	var cls []class
	index := map[[3]float64]int{}
	for _, p := range pods {
		var r [3]float64
		for _, c := range p.Spec.Containers {
			r[0] += float64(c.Resources.Requests.Cpu().MilliValue())
			r[1] += float64(c.Resources.Requests.Memory().Value())
		}
		r[2] = 1
		k, ok := index[r]
		if !ok {
			k = len(cls)
			index[r] = k
			cls = append(cls, class{req: r})
		}
		cls[k].n++
	}
	// Columns: x_t, then y_kt.
	nt, nk := len(kinds), len(cls)
	col := func(k, t int) int { return nt + k*nt + t }
	n := nt + nk*nt
	obj := make([]float64, n)
	for k := 0; k < nk; k++ {
		for t := 0; t < nt; t++ {
			obj[col(k, t)] = 1
		}
	}
	var a [][]float64
	var b []float64
	for r, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		lim := np.Limits[name]
		row := make([]float64, n)
		for t, kd := range kinds {
			row[t] = kd.charge[r]
		}
		a, b = append(a, row), append(b, float64(quantityValue(name, lim)))
	}
	for t, kd := range kinds {
		for r := 0; r < 3; r++ {
			row := make([]float64, n)
			row[t] = -kd.alloc[r]
			for k := range cls {
				row[col(k, t)] = cls[k].req[r]
			}
			a, b = append(a, row), append(b, 0)
		}
		for k := range cls {
			// A pod that does not fit the node whole does not go there.
			for r := 0; r < 2; r++ {
				if cls[k].req[r] > kd.alloc[r] {
					row := make([]float64, n)
					row[col(k, t)] = 1
					a, b = append(a, row), append(b, 0)
				}
			}
		}
	}
	for k := range cls {
		row := make([]float64, n)
		for t := 0; t < nt; t++ {
			row[col(k, t)] = 1
		}
		a, b = append(a, row), append(b, cls[k].n)
	}
	_, v := simplexMax(obj, a, b)
	return v
}

// limitedMix is a workload of BenchmarkSolveLimited: pods and the limits
// of the spot-fleet pool they meet.
type limitedMix struct {
	name   string
	pods   func() []*corev1.Pod
	limits corev1.ResourceList
}

var limitedMixes = []limitedMix{
	// The example: small web pods (2 GiB per vCPU) and a memory-heavy
	// minority; memory binds.
	{"mixed", limitedPods, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1000"), corev1.ResourceMemory: resource.MustParse("1000Gi")}},
	// cpu binds: 2,500 pods of 500m/1Gi ask for 1,250 cpu; memory-optimised
	// types would spend the memory limit on nothing.
	{"cpu-bound", func() []*corev1.Pod { return pods(2500, "cpu", "500m", "1Gi") }, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1000"), corev1.ResourceMemory: resource.MustParse("4000Gi")}},
	// memory binds: 1,500 pods of 250m/2Gi ask for 3,000Gi.
	{"memory-bound", func() []*corev1.Pod { return pods(1500, "mem", "250m", "2Gi") }, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1000"), corev1.ResourceMemory: resource.MustParse("1000Gi")}},
}

// BenchmarkSolveLimited solves the spot-fleet pool (the examples' pool:
// six families, spot) under binding limits for three mixes (limitedMixes),
// with the pool's minValues 3 families and without, on the real catalog,
// with the product's limit rule (claims charged their expected launch,
// Options.ChargeExpectedLaunch) and, as "-largest-option", the earlier one
// (charged their largest option), and reports pods placed against the LP
// upper bound of pods that fit in the limit ignoring minValues (placed-ub,
// placed-ratio) and against the bound that keeps minValues under the
// largest-option rule (placed-ub-mv, placed-ratio-mv; the same bound
// without minValues; the expected-launch rule may pass it), the cost and
// the CPU time per solve.
func BenchmarkSolveLimited(b *testing.B) {
	cat, err := catalog.Load(catalog.Options{})
	if err != nil {
		b.Fatal(err)
	}
	for _, mix := range limitedMixes {
		for _, variant := range []struct {
			minValues, expected bool
			suffix              string
		}{{true, true, ""}, {false, true, "-without-minValues"}, {true, false, "-largest-option"}, {false, false, "-without-minValues-largest-option"}} {
			np := spotFleetPool(cat.Types())
			np.Limits = mix.limits
			name := "mix=" + mix.name + variant.suffix
			if !variant.minValues {
				np.Requirements[awsv1.LabelInstanceFamily].MinValues = nil
			}
			b.Run(name, func(b *testing.B) {
				ps := mix.pods()
				in := Input{Pods: ps, NodePools: []*NodePool{np}, Options: Options{ChargeExpectedLaunch: variant.expected}}
				var plan *Plan
				b.ReportAllocs()
				b.ResetTimer()
				cpu0 := cpuTime()
				for i := 0; i < b.N; i++ {
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
				ub := limitedUpperBound(np, ps)
				ubmv, err := limitedUpperBoundMinValues(np, ps)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(plan.PodCount()), "placed")
				b.ReportMetric(ub, "placed-ub")
				b.ReportMetric(float64(plan.PodCount())/ub, "placed-ratio")
				b.ReportMetric(ubmv, "placed-ub-mv")
				b.ReportMetric(float64(plan.PodCount())/ubmv, "placed-ratio-mv")
				b.ReportMetric(float64(len(plan.NewClaims)), "nodes")
				b.ReportMetric(plan.Cost(), "usd/h")
			})
		}
	}
}
