package scheduling

import (
	"math"

	corev1 "k8s.io/api/core/v1"

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
