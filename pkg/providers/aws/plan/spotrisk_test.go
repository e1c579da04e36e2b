package plan

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
)

// A simulated month of spot capacity on the real catalog, to measure
// interruption-aware spot choice against lowest-price selection.
//
// The fleet: 40 node slots, each holding one node for a workload whose
// size (1–16 vCPUs, 2–8 GiB per vCPU) and lifetime (exponential, mean
// 24 h) are drawn from a seeded stream shared by both strategies. The pool
// is examples/default-nodepool.yaml's (c, m, r; generation > 4; amd64 and
// arm64), spot only, over the six us-east-1 zones.
//
// The world: each (type, zone) pool is interrupted at a monthly rate drawn
// once, uniformly within its Spot Instance Advisor range (<5% → 0–5%, …,
// >20% → 20–40%; 10–15% when the advisor has no entry), so true rates are
// not the ratings our selection uses. An interrupted node is replaced at
// once by a new launch for the same workload; the interrupted offering is
// ICE-marked for 3 minutes, and with interruption-aware choice the
// interruption is recorded in the history, as the controller does.
//
// The strategies, through this package's Make over the same types:
//   - lowest price: the cheapest option Make offers (types not rated);
//   - interruption-aware: types rated by catalog.WithSpotRisk with the
//     pool's ceiling, options ordered by risk-weighted price (Option.Cost)
//     and cut to 60, and EC2 modelled as taking the cheapest option sent —
//     no credit is given for price-capacity-optimized steering to deep pools.
type monthResult struct {
	launches, interruptions int
	// expected is the interruptions the month's choices should see on
	// average: Σ node-hours × the pool's true hourly rate. It is the figure
	// compared (the sampled count is noisy at a few dozen events).
	expected        float64
	nodeHours, cost float64
}

func (r monthResult) perKiloHours() float64 { return 1000 * r.expected / r.nodeHours }

type workload struct {
	requests corev1.ResourceList
	lifetime time.Duration
}

const (
	month         = 30 * 24 * time.Hour
	slots         = 40
	hoursPerMonth = 730.0
	meanLifetime  = 24 * time.Hour
	iceTTL        = 3 * time.Minute
	spotriskSeed  = 7
)

func poolRequirements() []nsv1.NodeSelectorRequirementWithMinValues {
	return []nsv1.NodeSelectorRequirementWithMinValues{
		req("aws.nodesmith.sh/instance-category", corev1.NodeSelectorOpIn, "c", "m", "r"),
		req("aws.nodesmith.sh/instance-generation", corev1.NodeSelectorOpGt, "4"),
		req(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64", "arm64"),
		req(nsv1.LabelCapacityType, corev1.NodeSelectorOpIn, nsv1.CapacityTypeSpot),
	}
}

// workloads draws each slot's sequence of workloads for a month.
func workloads(rng *rand.Rand) [][]workload {
	out := make([][]workload, slots)
	for s := range out {
		for total := time.Duration(0); total < month; {
			vcpu := []int{1, 2, 4, 8, 16}[rng.Intn(5)]
			gib := float64(vcpu) * []float64{2, 4, 8}[rng.Intn(3)]
			w := workload{
				requests: corev1.ResourceList{
					corev1.ResourceCPU:    *resource.NewMilliQuantity(int64(vcpu)*900, resource.DecimalSI),
					corev1.ResourceMemory: *resource.NewQuantity(int64(gib*0.8*(1<<30)), resource.BinarySI),
				},
				lifetime: time.Duration(rng.ExpFloat64() * float64(meanLifetime)),
			}
			out[s] = append(out[s], w)
			total += w.lifetime
		}
	}
	return out
}

// advisorRange is the true monthly interruption rate range of a bucket, in percent.
var advisorRange = map[string][2]float64{"<5%": {0, 5}, "5-10%": {5, 10}, "10-15%": {10, 15}, "15-20%": {15, 20}, ">20%": {20, 40}, "": {10, 15}}

// trueRates draws every spot pool's monthly interruption rate once.
func trueRates(types []*catalog.InstanceType, rng *rand.Rand) map[string]float64 {
	out := map[string]float64{}
	for _, it := range types {
		r, ok := advisorRange[it.SpotInterruptionBucket]
		if !ok {
			r = advisorRange[""]
		}
		for _, o := range it.Offerings {
			if o.CapacityType == nsv1.CapacityTypeSpot {
				out[it.Name+"/"+o.Zone] = r[0] + rng.Float64()*(r[1]-r[0])
			}
		}
	}
	return out
}

// simulateMonth runs one strategy; ceiling nil with aware=false is
// lowest-price selection.
func simulateMonth(t testing.TB, types []*catalog.InstanceType, rates map[string]float64, work [][]workload, aware bool, ceiling *int32) monthResult {
	start := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(start)
	ice := catalog.NewUnavailableOfferings(clk, iceTTL)
	history := catalog.NewInterruptionHistory(clk, 0)
	rng := rand.New(rand.NewSource(spotriskSeed + 1))
	var subnets []Subnet
	for i, z := range catalog.DefaultZones {
		subnets = append(subnets, Subnet{ID: fmt.Sprintf("subnet-%d", i), Zone: z, FreeIPs: 1 << 20})
	}
	type event struct {
		at   time.Time
		slot int
	}
	// Each slot: index of its current workload, when it ends, its node.
	type node struct {
		key         string
		it, zone    string
		price       float64
		launched    time.Time
		interruptAt time.Time
	}
	cur := make([]int, slots)
	ends := make([]time.Time, slots)
	nodes := make([]*node, slots)
	var res monthResult
	hazard := func(key string) float64 { return -math.Log(1-rates[key]/100) / hoursPerMonth }
	account := func(key string, price, hours float64) {
		res.nodeHours += hours
		res.cost += hours * price
		res.expected += hours * hazard(key)
	}
	launch := func(s int, now time.Time) {
		w := work[s][cur[s]]
		view := catalog.WithAvailability(types, ice)
		if aware {
			view = catalog.WithSpotRisk(view, history, ceiling)
		}
		pl, err := Make(Input{Requirements: poolRequirements(), Requests: w.requests, InstanceTypes: view, Subnets: subnets})
		if err != nil {
			t.Fatalf("planning %v: %v", w.requests, err)
		}
		best := pl.Options[0]
		for _, o := range pl.Options[1:] {
			if o.Price < best.Price {
				best = o
			}
		}
		key := best.InstanceType.Name + "/" + best.Zone
		life := time.Duration(rng.ExpFloat64() / hazard(key) * float64(time.Hour))
		nodes[s] = &node{key: key, it: best.InstanceType.Name, zone: best.Zone, price: best.Price, launched: now, interruptAt: now.Add(life)}
		res.launches++
	}
	end := start.Add(month)
	for s := range slots {
		ends[s] = start.Add(work[s][0].lifetime)
		launch(s, start)
	}
	for {
		// The next event: a workload ending or a node interrupted.
		next, slot, interrupted := end, -1, false
		for s := range slots {
			if ends[s].Before(next) {
				next, slot, interrupted = ends[s], s, false
			}
			if nodes[s].interruptAt.Before(next) {
				next, slot, interrupted = nodes[s].interruptAt, s, true
			}
		}
		clk.SetTime(next)
		if slot < 0 {
			break
		}
		n := nodes[slot]
		account(n.key, n.price, next.Sub(n.launched).Hours())
		if interrupted {
			res.interruptions++
			ice.MarkUnavailable(n.it, n.zone, nsv1.CapacityTypeSpot, "interrupted")
			if aware {
				history.Record(n.it, n.zone)
			}
		} else {
			cur[slot]++
			ends[slot] = next.Add(work[slot][cur[slot]].lifetime)
		}
		launch(slot, next)
	}
	for _, n := range nodes {
		account(n.key, n.price, end.Sub(n.launched).Hours())
	}
	return res
}

// spotTypes are the catalog's types the pool may buy as spot. Make would
// filter the others out itself; leaving them out first only saves time.
func spotTypes(t testing.TB) []*catalog.InstanceType {
	cat, err := catalog.Load(catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewMatcher(poolRequirements())
	if err != nil {
		t.Fatal(err)
	}
	var out []*catalog.InstanceType
	for _, it := range cat.Types() {
		keep := false
		for _, o := range it.Offerings {
			keep = keep || (o.CapacityType == nsv1.CapacityTypeSpot && m.MatchesFunc(offeringLabels(it, o), definedKeys(m.Keys(), cat.Types())))
		}
		if keep && !exotic(it) {
			out = append(out, it)
		}
	}
	return out
}

// TestInterruptionAwareSpotChoice measures a month of each strategy and
// guards what the figures in docs/benchmarks.md (Interruption) show: the
// risk-weighted order alone costs nothing, a ceiling of 20 (no >20% pools)
// halves the interruptions of lowest-price selection, and a lower ceiling
// buys fewer interruptions with more money. The target — half the
// interruptions at no more than 5% more cost — is not reached on this
// catalog: the cheapest fit of several shapes is a >20% pool at least 25%
// cheaper than any calmer one (see the doc).
func TestInterruptionAwareSpotChoice(t *testing.T) {
	if testing.Short() {
		t.Skip("four simulated months of launches over the catalog")
	}
	types := spotTypes(t)
	rng := rand.New(rand.NewSource(spotriskSeed))
	rates := trueRates(types, rng)
	work := workloads(rng)
	base := simulateMonth(t, types, rates, work, false, nil)
	t.Logf("%d spot types; lowest price: %d launches, %d interruptions (%.1f expected), %.0f node-hours, %.3f per 1,000 node-hours, $%.2f",
		len(types), base.launches, base.interruptions, base.expected, base.nodeHours, base.perKiloHours(), base.cost)
	type ratios struct{ interruptions, cost float64 }
	got := map[string]ratios{}
	for _, row := range []struct {
		name    string
		ceiling *int32
	}{
		{"risk-weighted order", nil},
		{"ceiling 20", ptr.To[int32](20)},
		{"ceiling 10", ptr.To[int32](10)},
	} {
		r := simulateMonth(t, types, rates, work, true, row.ceiling)
		rt := ratios{r.perKiloHours() / base.perKiloHours(), (r.cost / r.nodeHours) / (base.cost / base.nodeHours)}
		got[row.name] = rt
		t.Logf("%-20s %d launches, %d interruptions (%.1f expected), %.3f per 1,000 node-hours (%.2f×), $%.2f (%.3f× per node-hour)",
			row.name+":", r.launches, r.interruptions, r.expected, r.perKiloHours(), rt.interruptions, r.cost, rt.cost)
	}
	if r := got["risk-weighted order"]; r.cost > 1.01 || r.interruptions > 1.0 {
		t.Errorf("the risk-weighted order alone: interruptions %.2f×, cost %.3f×; want no more of either", r.interruptions, r.cost)
	}
	if r := got["ceiling 20"]; r.interruptions > 0.6 {
		t.Errorf("ceiling 20: interruptions %.2f× of lowest price, want ≤ 0.6×", r.interruptions)
	}
	if a, b := got["ceiling 20"], got["ceiling 10"]; b.interruptions >= a.interruptions || b.cost <= a.cost {
		t.Errorf("ceiling 10 (%+v) should trade more cost for fewer interruptions than ceiling 20 (%+v)", b, a)
	}
}

// TestSpotRiskFrontier is the best any per-launch rule could do on this
// catalog and workload: for every workload shape it takes the option with
// the lowest price × (1 + rate/K) — EC2 assumed to take exactly that one —
// and reports, per K, the mean cost and interruption rate against the
// cheapest option, shapes weighted alike and each range rated at its
// middle (>20% at 30). docs/benchmarks.md quotes the figures; the test
// checks the frontier's shape (a smaller K never buys more risk for less).
func TestSpotRiskFrontier(t *testing.T) {
	types := spotTypes(t)
	var subnets []Subnet
	for i, z := range catalog.DefaultZones {
		subnets = append(subnets, Subnet{ID: fmt.Sprintf("subnet-%d", i), Zone: z, FreeIPs: 1 << 20})
	}
	rate := map[string]float64{"<5%": 2.5, "5-10%": 7.5, "10-15%": 12.5, "15-20%": 17.5, ">20%": 30, "": 12.5}
	type opt struct{ price, rate float64 }
	var shapes [][]opt
	for _, vcpu := range []int{1, 2, 4, 8, 16} {
		for _, gib := range []float64{2, 4, 8} {
			rq := corev1.ResourceList{
				corev1.ResourceCPU:    *resource.NewMilliQuantity(int64(vcpu)*900, resource.DecimalSI),
				corev1.ResourceMemory: *resource.NewQuantity(int64(float64(vcpu)*gib*0.8*(1<<30)), resource.BinarySI),
			}
			pl, err := Make(Input{Requirements: poolRequirements(), Requests: rq, InstanceTypes: types, Subnets: subnets, MaxOptions: 1 << 20})
			if err != nil {
				t.Fatal(err)
			}
			var os []opt
			for _, o := range pl.Options {
				os = append(os, opt{o.Price, rate[o.InstanceType.SpotInterruptionBucket]})
			}
			shapes = append(shapes, os)
		}
	}
	pick := func(k float64) (cost, risk float64) {
		for _, os := range shapes {
			best := os[0]
			for _, o := range os[1:] {
				if a, b := o.price*(1+o.rate/k), best.price*(1+best.rate/k); a < b || (a == b && o.price < best.price) {
					best = o
				}
			}
			cost += best.price
			risk += best.rate
		}
		return cost, risk
	}
	baseCost, baseRisk := pick(math.Inf(1))
	lastCost, lastRisk := 0.0, math.Inf(1)
	for _, k := range []float64{1000, 100, 50, 38, 30, 26, 20, 10, 1} {
		c, r := pick(k)
		t.Logf("K=%-5.0f interruptions %.2f×, cost %.3f×", k, r/baseRisk, c/baseCost)
		if c+1e-9 < lastCost || r > lastRisk+1e-9 {
			t.Errorf("K=%v: cost %.3f after %.3f, risk %.2f after %.2f: a smaller K must not buy more risk for less", k, c, lastCost, r, lastRisk)
		}
		lastCost, lastRisk = c, r
	}
}
