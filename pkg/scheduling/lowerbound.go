package scheduling

import (
	"math"
	"sort"

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
// (classes k: pods with equal cpu and memory requests). CostLowerBound's
// relaxation can buy the cpu of a 0.5 GiB burstable type and the memory of
// a memory-optimised type separately, which no pod can use; this one
// cannot. It is solved by cutting planes on the dual (max Σ n_k·u_k, pod
// prices u that no fractional fill of any type beats): every iterate u,
// scaled down by its worst violation, is dual feasible, so the value
// returned is a valid bound even when the iteration cap stops it early.
func PackingLowerBound(types []*catalog.InstanceType, pods []*corev1.Pod) float64 {
	cls := boundClasses(pods)
	if len(cls) == 0 {
		return 0
	}
	tys := boundTypes(types, cls)
	if len(tys) == 0 {
		return math.Inf(1)
	}
	nk := len(cls)
	count := make([]float64, nk)
	for k, c := range cls {
		count[k] = c.n
	}
	// Start with each class's cheapest homogeneous fill as a cut.
	var cutA [][]float64
	var cutB []float64
	addCut := func(w []float64, price float64) {
		r := make([]float64, nk)
		for k := range w {
			r[k] = w[k] / price // normalised so the right-hand side is 1
		}
		cutA, cutB = append(cutA, r), append(cutB, 1)
	}
	for k := range cls {
		best, bestW := math.Inf(1), 0.0
		for _, t := range tys {
			if !t.fits[k] {
				continue
			}
			w := t.homogeneous(cls[k])
			if t.price/w < best {
				best, bestW = t.price/w, w
			}
		}
		if math.IsInf(best, 1) {
			return math.Inf(1) // a pod fits no type: no plan exists
		}
		w := make([]float64, nk)
		w[k] = bestW
		addCut(w, bestW*best)
	}
	// The aggregate cpu+memory LP is a relaxation of this one, hence also
	// a bound; it covers the iteration cap on near-proportional catalogs,
	// where cutting planes converge slowly.
	var cpu, mem float64
	for _, c := range cls {
		cpu += c.cpu * c.n
		mem += c.mem * c.n
	}
	lb := CostLowerBound(types, int64(cpu), int64(mem))
	for iter := 0; iter < 60; iter++ {
		u, val := simplexMax(count, cutA, cutB)
		if u == nil {
			break
		}
		// Pricing: the fill of each type that is worth most at prices u.
		type viol struct {
			ratio float64
			w     []float64
			price float64
		}
		var worst []viol
		theta := 0.0
		for _, t := range tys {
			w, v := t.bestFill(cls, u)
			r := v / t.price
			theta = math.Max(theta, r)
			if r > 1+1e-9 {
				worst = append(worst, viol{r, w, t.price})
			}
		}
		if theta > 0 {
			lb = math.Max(lb, val/math.Max(theta, 1))
		}
		if len(worst) == 0 {
			break
		}
		sort.Slice(worst, func(i, j int) bool { return worst[i].ratio > worst[j].ratio })
		for _, v := range worst[:min(len(worst), 12)] {
			addCut(v.w, v.price)
		}
	}
	return lb
}

type boundClass struct {
	cpu, mem, n float64
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

type boundType struct {
	cpu, mem, pods, price float64
	fits                  []bool
}

// homogeneous is how many (fractional) pods of c fill the type.
func (t *boundType) homogeneous(c boundClass) float64 {
	w := t.pods
	if c.cpu > 0 {
		w = math.Min(w, t.cpu/c.cpu)
	}
	if c.mem > 0 {
		w = math.Min(w, t.mem/c.mem)
	}
	return w
}

// bestFill solves max u·w s.t. the fill w of fitting classes stays within
// the type's cpu, memory and pods.
func (t *boundType) bestFill(cls []boundClass, u []float64) ([]float64, float64) {
	var cols []int
	for k := range cls {
		if t.fits[k] && u[k] > 0 {
			cols = append(cols, k)
		}
	}
	c := make([]float64, len(cols))
	a := [][]float64{make([]float64, len(cols)), make([]float64, len(cols)), make([]float64, len(cols))}
	for j, k := range cols {
		c[j] = u[k]
		a[0][j], a[1][j], a[2][j] = cls[k].cpu, cls[k].mem, 1
	}
	// Scale rows to 1 so cpu (millicores) and memory (bytes) pivot alike.
	b := []float64{1, 1, 1}
	for j := range cols {
		a[0][j] /= t.cpu
		a[1][j] /= t.mem
		a[2][j] /= t.pods
	}
	x, v := simplexMax(c, a, b)
	w := make([]float64, len(cls))
	for j, k := range cols {
		w[k] = x[j]
	}
	return w, v
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
		t := &boundType{cpu: float64(c.MilliValue()), mem: float64(m.Value()), pods: float64(p.Value()), price: o.Price, fits: make([]bool, len(cls))}
		if t.cpu <= 0 || t.mem <= 0 || t.pods < 1 {
			continue
		}
		any := false
		for k, cl := range cls {
			t.fits[k] = cl.cpu <= t.cpu && cl.mem <= t.mem
			any = any || t.fits[k]
		}
		if any {
			all = append(all, t)
		}
	}
	dominated := func(t, o *boundType) bool {
		if o.cpu/o.price < t.cpu/t.price || o.mem/o.price < t.mem/t.price || o.pods/o.price < t.pods/t.price {
			return false
		}
		for k := range t.fits {
			if t.fits[k] && !o.fits[k] {
				return false
			}
		}
		return true
	}
	var out []*boundType
	for i, t := range all {
		keep := true
		for j, o := range all {
			// Of two identical types keep the first.
			if i != j && dominated(t, o) && (!dominated(o, t) || j < i) {
				keep = false
				break
			}
		}
		if keep {
			out = append(out, t)
		}
	}
	return out
}
