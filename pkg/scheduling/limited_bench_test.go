package scheduling

import (
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
// each class k on them.
func limitedUpperBound(np *NodePool, pods []*corev1.Pod) float64 {
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
	// Columns: x_t, then y_kt.
	nt, nk := len(types), len(cls)
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
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		lim := np.Limits[name]
		row := make([]float64, n)
		for t, it := range types {
			q := it.Capacity[name]
			row[t] = float64(quantityValue(name, q))
		}
		a, b = append(a, row), append(b, float64(quantityValue(name, lim)))
	}
	for t, it := range types {
		alloc := it.Allocatable()
		for r, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods} {
			row := make([]float64, n)
			row[t] = -float64(quantityValue(name, alloc[name]))
			for k := range cls {
				row[col(k, t)] = cls[k].req[r]
			}
			a, b = append(a, row), append(b, 0)
		}
		for k := range cls {
			// A pod that does not fit the type whole does not go there.
			for r, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				if cls[k].req[r] > float64(quantityValue(name, alloc[name])) {
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

// BenchmarkSolveLimited solves the limited pool (the examples'
// spot-fleet pool: six families, spot, 1,000 cpu / 1,000Gi) for 1,500 pods
// of 250m/512Mi and 40 of 500m/6Gi on the real catalog, with the pool's
// minValues 3 families and without, and reports pods placed against the
// LP upper bound of pods that fit in the limit, and the cost.
func BenchmarkSolveLimited(b *testing.B) {
	cat, err := catalog.Load(catalog.Options{})
	if err != nil {
		b.Fatal(err)
	}
	for _, minValues := range []bool{true, false} {
		np := spotFleetPool(cat.Types())
		name := "pool=spot-fleet"
		if !minValues {
			np.Requirements[awsv1.LabelInstanceFamily].MinValues = nil
			name = "pool=spot-fleet-without-minValues"
		}
		b.Run(name, func(b *testing.B) {
			ps := limitedPods()
			in := Input{Pods: ps, NodePools: []*NodePool{np}}
			var plan *Plan
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if plan, err = Solve(in); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if errs := planViolations(in, plan); len(errs) > 0 {
				b.Fatalf("%d violations, first: %s", len(errs), errs[0])
			}
			ub := limitedUpperBound(np, ps)
			b.ReportMetric(float64(plan.PodCount()), "placed")
			b.ReportMetric(ub, "placed-ub")
			b.ReportMetric(float64(plan.PodCount())/ub, "placed-ratio")
			b.ReportMetric(float64(len(plan.NewClaims)), "nodes")
			b.ReportMetric(plan.Cost(), "usd/h")
		})
	}
}
