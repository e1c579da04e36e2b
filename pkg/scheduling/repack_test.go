package scheduling

import (
	"math"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
)

// repackCatalog: a large node and a small one at a higher price per cpu,
// no overhead, one zone, on-demand only, so costs are exact.
func repackCatalog() []*catalog.InstanceType {
	mk := func(name string, cpu, memGi int64, price float64) *catalog.InstanceType {
		return &catalog.InstanceType{
			Name:   name,
			Labels: map[string]string{corev1.LabelInstanceTypeStable: name, corev1.LabelArchStable: "amd64", corev1.LabelOSStable: "linux"},
			Capacity: corev1.ResourceList{
				corev1.ResourceCPU:    *resource.NewQuantity(cpu, resource.DecimalSI),
				corev1.ResourceMemory: *resource.NewQuantity(memGi<<30, resource.BinarySI),
				corev1.ResourcePods:   *resource.NewQuantity(110, resource.DecimalSI),
			},
			Offerings: catalog.Offerings{{Zone: "zone-a", CapacityType: nsv1.CapacityTypeOnDemand, Price: price, Available: true}},
		}
	}
	return []*catalog.InstanceType{mk("big", 8, 32, 1.0), mk("small", 2, 8, 0.3)}
}

// repackFixture builds a solver over the pods and hand-made bins: bins[i]
// holds the next sizes[i] pods on a node of type types[i]. It returns the
// solver, the pool and the items of the first round.
func repackFixture(t *testing.T, ps []*corev1.Pod, types []string, sizes []int) (*solver, *pool, []*item) {
	t.Helper()
	in := Input{Pods: ps, NodePools: []*NodePool{defaultPool(repackCatalog())}}
	s := &solver{in: in, opts: in.Options.withDefaults(), state: map[*podClass]*classState{}}
	if err := s.prepare(); err != nil {
		t.Fatal(err)
	}
	p := s.pools[0]
	var items []*item
	byPod := map[*corev1.Pod]*item{}
	for _, c := range s.classes {
		v := c.variants[0]
		v.fits = []*poolFit{s.fitPool(c, v, p)}
		it := &item{c: c, v: v, f: v.fits[0], st: s.state[c]}
		items = append(items, it)
		for _, pod := range c.pods {
			byPod[pod] = it
		}
	}
	typeIndex := map[string]int{}
	for ti, pt := range p.types {
		typeIndex[pt.it.Name] = ti
	}
	next := 0
	for i, n := range sizes {
		var b *bin
		for _, pod := range ps[next : next+n] {
			it := byPod[pod]
			if b == nil {
				b = s.open(p, it, typeIndex[types[i]])
			}
			// Put this very pod first so the bins hold the pods asked for.
			for k, q := range it.st.left {
				if q == pod {
					it.st.left[0], it.st.left[k] = it.st.left[k], it.st.left[0]
				}
			}
			if !s.tryAdd(b, it, false) {
				t.Fatalf("fixture: pod %s does not fit bin %d", pod.Name, i)
			}
		}
		next += n
	}
	return s, p, items
}

func binsCost(s *solver) float64 {
	cost := 0.0
	for _, b := range s.bins {
		if len(b.pods) > 0 {
			cost += s.binCost(b)
		}
	}
	return cost
}

func TestRepackMoves(t *testing.T) {
	cases := []struct {
		name  string
		pods  []*corev1.Pod
		types []string
		sizes []int
		// drain runs the drain move; otherwise the replace move runs on
		// the first bin.
		drain bool
		bins  int
		cost  float64
	}{
		{name: "small bins drain into the big bin's spare room", drain: true,
			pods: pods(10, "a", "500m", "1Gi"), types: []string{"big", "small", "small"}, sizes: []int{6, 2, 2}, bins: 1, cost: 1.0},
		{name: "a bin that does not fit the spare room stays", drain: true,
			pods: pods(17, "a", "500m", "1Gi"), types: []string{"big", "small"}, sizes: []int{15, 2}, bins: 2, cost: 1.3},
		{name: "host-port pods are not moved", drain: true,
			pods:  concat(pods(6, "a", "500m", "1Gi"), pods(1, "p", "500m", "1Gi", withHostPort(8080)), pods(1, "q", "500m", "1Gi", withHostPort(8081))),
			types: []string{"big", "small"}, sizes: []int{6, 2}, bins: 2, cost: 1.3},
		{name: "pods that share no small node still leave the big one",
			pods: pods(3, "a", "1500m", "1Gi"), types: []string{"big"}, sizes: []int{3}, bins: 3, cost: 0.9},
		{name: "two small bins would cost less than a big one",
			pods: pods(6, "a", "500m", "1Gi"), types: []string{"big"}, sizes: []int{6}, bins: 2, cost: 0.6},
		{name: "a full big bin stays: small ones cost more",
			pods: pods(15, "a", "500m", "1Gi"), types: []string{"big"}, sizes: []int{15}, bins: 1, cost: 1.0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, p, items := repackFixture(t, tc.pods, tc.types, tc.sizes)
			var free []*item
			byClass := map[*podClass]*item{}
			for _, it := range items {
				if repackable(it) {
					free = append(free, it)
					byClass[it.c] = it
				}
			}
			if tc.drain {
				s.drain(p, free, byClass, 0)
			} else {
				s.repackBin(p, s.bins[0], free, byClass)
			}
			n, placed := 0, 0
			for _, b := range s.bins {
				if len(b.pods) > 0 {
					n++
					placed += len(b.pods)
				}
			}
			if n != tc.bins {
				t.Errorf("%d bins, want %d", n, tc.bins)
			}
			if got := binsCost(s); math.Abs(got-tc.cost) > 1e-9 {
				t.Errorf("cost %.3f, want %.3f", got, tc.cost)
			}
			if placed != len(tc.pods) {
				t.Errorf("%d of %d pods placed", placed, len(tc.pods))
			}
			if s.nodesUsed[p.idx] != int64(n) {
				t.Errorf("pool counts %d nodes, %d bins hold pods", s.nodesUsed[p.idx], n)
			}
			for _, b := range s.bins {
				if len(b.pods) > 0 && !b.used.fits(p.types[b.cur].alloc) {
					t.Errorf("bin %d overflows its type %s", b.id, p.types[b.cur].it.Name)
				}
			}
		})
	}
}

// TestSolveRealCatalogNearPackingBound: on the embedded catalog, plain pods
// cost at most 5% above the packing lower bound, every pod is placed and
// the plan passes the independent checker; the mixed workload (whose pods
// partly take part in repacking) stays valid.
func TestSolveRealCatalogNearPackingBound(t *testing.T) {
	cat, err := catalog.Load(catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	types := cat.Types()
	cases := []struct {
		name     string
		pods     []*corev1.Pod
		maxRatio float64
	}{
		{"plain 1000", plainPods(1000, 42), 1.05},
		{"plain 5000", plainPods(5000, 42), 1.05},
		{"mixed 1000", mixedPods(1000, 42), 1.5},
		{"karpenter-shaped 1000", karpenterPods(1000, 42), 1.65},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{Pods: tc.pods, NodePools: []*NodePool{defaultPool(types)}}
			plan, err := Solve(in)
			if err != nil {
				t.Fatal(err)
			}
			if len(plan.Unschedulable) > 0 {
				t.Fatalf("%d pods unplaced: %s", len(plan.Unschedulable), plan.Unschedulable[0].Reason)
			}
			checkPlan(t, in, plan)
			lb := PackingLowerBound(types, tc.pods)
			ratio := plan.Cost() / lb
			if ratio < 1-1e-9 || ratio > tc.maxRatio {
				t.Errorf("plan $%.4f/h is %.4f× the packing bound $%.4f/h, want 1–%.2f", plan.Cost(), ratio, lb, tc.maxRatio)
			}
		})
	}
}
