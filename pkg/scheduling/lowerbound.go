package scheduling

import (
	"math"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/nodesmith/nodesmith/pkg/catalog"
)

// CostLowerBound is the optimum of the linear relaxation
//
//	min Σ price_t·x_t  s.t.  Σ cpu_t·x_t ≥ cpu,  Σ mem_t·x_t ≥ mem,  x ≥ 0
//
// over fractional instance counts x, with each type's allocatable capacity
// and cheapest available offering. No plan that places the requests can
// cost less. With two constraints an optimal basis has at most two types,
// so every single type and every pair is tried.
func CostLowerBound(types []*catalog.InstanceType, cpuMilli, memBytes int64) float64 {
	type point struct{ c, m, p float64 }
	var pts []point
	for _, it := range types {
		o, ok := it.Offerings.Available().Cheapest()
		if !ok {
			continue
		}
		a := it.Allocatable()
		c, m := a[corev1.ResourceCPU], a[corev1.ResourceMemory]
		pc, pm := float64(c.MilliValue()), float64(m.Value())
		if pc <= 0 || pm <= 0 {
			continue
		}
		pts = append(pts, point{pc, pm, o.Price})
	}
	C, M := float64(cpuMilli), float64(memBytes)
	best := math.Inf(1)
	for _, a := range pts {
		best = math.Min(best, a.p*math.Max(C/a.c, M/a.m))
	}
	for i, a := range pts {
		for _, b := range pts[i+1:] {
			det := a.c*b.m - b.c*a.m
			if det == 0 {
				continue
			}
			xa := (C*b.m - b.c*M) / det
			xb := (a.c*M - C*a.m) / det
			if xa >= 0 && xb >= 0 {
				best = math.Min(best, xa*a.p+xb*b.p)
			}
		}
	}
	return best
}

// PackingLowerBound is a lower bound on the $/h of any plan that places the
// pods on new nodes of the given types, stronger than CostLowerBound on real
// catalogs. It is the linear relaxation of assigning pods to types where a
// pod may only go to a type it fits on whole and each type covers cpu,
// memory and pod slots:
//
//	min Σ_t price_t·y_t  s.t.  Σ_t z_kt = n_k,  Σ_k req_rk·z_kt ≤ alloc_rt·y_t (r ∈ cpu, memory, pods),
//	z_kt = 0 where one pod of class k does not fit type t
//
// (classes k: pods with equal cpu and memory requests), strengthened where
// it matters most: on types that hold at most wholeFillPods pods, a node's
// fill is a whole number of pods of each class (a configuration LP), since
// fractions of a pod flatter a 2-vCPU node far more than a 64-vCPU one.
// CostLowerBound's relaxation can buy the cpu of a 0.5 GiB burstable type
// and the memory of a memory-optimised type separately, which no pod can
// use; this one cannot. It is solved by cutting planes on the dual (max Σ n_k·u_k, pod
// prices u that no fractional fill of any type beats): every iterate u,
// scaled down by its worst violation, is dual feasible, so the value
// returned is a valid bound even when the iteration cap stops it early.
func PackingLowerBound(types []*catalog.InstanceType, pods []*corev1.Pod) float64 {
	lb, _ := packingLP(types, pods)
	return lb
}

// lpPattern is one fractional node fill of the packing LP's solution.
type lpPattern struct {
	t     *boundType
	w     []float64 // pods per class on one node
	nodes float64
}

func packingLP(types []*catalog.InstanceType, pods []*corev1.Pod) (float64, []lpPattern) {
	cls := boundClasses(pods)
	if len(cls) == 0 {
		return 0, nil
	}
	tys := boundTypes(types, cls)
	if len(tys) == 0 {
		return math.Inf(1), nil
	}
	// The aggregate cpu+memory LP is a relaxation of this one, hence also
	// a bound; it covers the iteration cap on near-proportional catalogs,
	// where cutting planes converge slowly.
	var cpu, mem float64
	for _, c := range cls {
		cpu += c.cpu * c.n
		mem += c.mem * c.n
	}
	return solveConfigLP(cls, tys, CostLowerBound(types, int64(cpu), int64(mem)), 60)
}

func boundClasses(pods []*corev1.Pod) []boundClass {
	idx := map[[2]int64]int{}
	var out []boundClass
	for _, p := range pods {
		r := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
		c, m := r[corev1.ResourceCPU], r[corev1.ResourceMemory]
		key := [2]int64{c.MilliValue(), m.Value()}
		i, ok := idx[key]
		if !ok {
			i = len(out)
			idx[key] = i
			out = append(out, boundClass{cpu: float64(key[0]), mem: float64(key[1])})
		}
		out[i].n++
	}
	return out
}

// boundTypes keeps the types with an available offering, their cheapest
// price and allocatable cpu, memory and pods, and drops types another type
// beats in every dimension per dollar while fitting every class they fit
// (they add no cut the other does not).
func boundTypes(types []*catalog.InstanceType, cls []boundClass) []*boundType {
	var all []*boundType
	for _, it := range types {
		o, ok := it.Offerings.Available().Cheapest()
		if !ok || o.Price <= 0 {
			continue
		}
		a := it.Allocatable()
		c, m, p := a[corev1.ResourceCPU], a[corev1.ResourceMemory], a[corev1.ResourcePods]
		t := &boundType{name: it.Name, cpu: float64(c.MilliValue()), mem: float64(m.Value()), pods: float64(p.Value()), price: o.Price, fits: make([]bool, len(cls))}
		if t.cpu <= 0 || t.mem <= 0 || t.pods < 1 {
			continue
		}
		any := false
		for k, cl := range cls {
			t.fits[k] = cl.cpu <= t.cpu && cl.mem <= t.mem
			any = any || t.fits[k]
		}
		if !any {
			continue
		}
		// Few pods fit: fills are searched in whole pods, which is exact
		// where fractions would flatter the type most.
		t.whole = t.maxPods(cls) <= wholeFillPods
		all = append(all, t)
	}
	return pruneDominated(all)
}
