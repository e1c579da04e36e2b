package scheduling

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodesmith/nodesmith/pkg/catalog"
)

// pcoPrice is the price of the option the simulated AWS (pkg/fakeaws,
// fleet.go) launches under price-capacity-optimized, given each option's
// spare capacity: among the pools whose spare capacity is within 10% of
// the deepest, the cheapest (the first of equals).
func pcoPrice(opts []LaunchOption, spare []int) float64 {
	deepest := 0
	for _, s := range spare {
		deepest = max(deepest, s)
	}
	floor := int(math.Ceil(0.9 * float64(deepest)))
	best := -1
	for i, o := range opts {
		if spare[i] >= floor && (best < 0 || o.Price < opts[best].Price) {
			best = i
		}
	}
	return opts[best].Price
}

// pcoExpected is a claim's expected price under that rule when the pools'
// spare capacity is unknown: each option's pool depth drawn uniformly from
// 1..1000 per launch, averaged over trials. (With every pool equally deep,
// as in the fake's default world, the rule launches the cheapest option.)
func pcoExpected(opts []LaunchOption, r *rand.Rand, trials int) float64 {
	spare := make([]int, len(opts))
	sum := 0.0
	for t := 0; t < trials; t++ {
		for i := range spare {
			spare[i] = 1 + r.Intn(1000)
		}
		sum += pcoPrice(opts, spare)
	}
	return sum / float64(trials)
}

// labPool is the e2e lab's pool: examples/spot-fleet.yaml with the lab's
// 2,000Gi memory limit.
func labPool(types []*catalog.InstanceType) *NodePool {
	np := spotFleetPool(types)
	np.Limits[corev1.ResourceMemory] = resource.MustParse("2000Gi")
	return np
}

// BenchmarkOptionPrices reports, for the lab's workload (1,000 pods of
// 500m/128Mi on its spot-fleet pool) and the real-catalog benchmarks, the
// plan's price at each claim's cheapest option against its expected price
// under the simulated AWS's price-capacity-optimized rule with random pool
// depths, with the default 2× option price ceiling and without one. With
// -v it lists each claim of the lab workload.
func BenchmarkOptionPrices(b *testing.B) {
	cat, err := catalog.Load(catalog.Options{})
	if err != nil {
		b.Fatal(err)
	}
	types := cat.Types()
	workloads := []struct {
		name string
		in   func() Input
	}{
		{"lab", func() Input {
			return Input{Pods: pods(1000, "w", "500m", "128Mi"), NodePools: []*NodePool{labPool(types)}}
		}},
		{"catalog-plain-1000", func() Input { return Input{Pods: plainPods(1000, 42), NodePools: []*NodePool{defaultPool(types)}} }},
		{"catalog-karpenter-1000", func() Input { return Input{Pods: karpenterPods(1000, 42), NodePools: []*NodePool{defaultPool(types)}} }},
	}
	for _, w := range workloads {
		for _, ceiling := range []float64{DefaultOptionPriceCeiling, 1e9} {
			name := fmt.Sprintf("%s/ceiling=%g", w.name, ceiling)
			if ceiling > 1e6 {
				name = w.name + "/ceiling=none"
			}
			b.Run(name, func(b *testing.B) {
				in := w.in()
				in.Options.OptionPriceCeiling = ceiling
				var plan *Plan
				for i := 0; i < b.N; i++ {
					if plan, err = Solve(in); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				if errs := planViolations(in, plan); len(errs) > 0 {
					b.Fatalf("%d violations, first: %s", len(errs), errs[0])
				}
				r := rand.New(rand.NewSource(1))
				cheapest, expected, worst, opts := 0.0, 0.0, 0.0, 0
				for _, c := range plan.NewClaims {
					e := pcoExpected(c.Options, r, 2000)
					cheapest += c.Price()
					expected += e
					worst = math.Max(worst, e/c.Price())
					opts += len(c.Options)
					if testing.Verbose() && w.name == "lab" {
						b.Logf("%s %d pods: cheapest %s/%s $%.4f/h, expected $%.4f/h (%.2f×), %d options up to %s $%.4f/h", c.Name, len(c.Pods),
							c.Options[0].InstanceType.Name, c.Options[0].Zone, c.Price(), e, e/c.Price(), len(c.Options),
							c.Options[len(c.Options)-1].InstanceType.Name, c.Options[len(c.Options)-1].Price)
					}
				}
				b.ReportMetric(cheapest, "usd/h")
				b.ReportMetric(expected, "pco-usd/h")
				b.ReportMetric(expected/cheapest, "pco-ratio")
				b.ReportMetric(worst, "worst-claim-ratio")
				b.ReportMetric(float64(opts)/float64(len(plan.NewClaims)), "options/claim")
				b.ReportMetric(float64(len(plan.NewClaims)), "nodes")
			})
		}
	}
}
