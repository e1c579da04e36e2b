package scheduling

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
)

// TestSolveUsesLimitsWell holds the limited pools on the real
// catalog: what fits in the limit is placed, and no claim's options, charged
// at the largest, break it (the checker).
func TestSolveUsesLimitsWell(t *testing.T) {
	cat, err := catalog.Load(catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	types := cat.Types()
	noMinValues := func(np *NodePool) *NodePool {
		np.Requirements[awsv1.LabelInstanceFamily].MinValues = nil
		return np
	}
	cases := []struct {
		name      string
		pool      *NodePool
		pods      []*corev1.Pod
		minPlaced int
	}{
		// The lab's burst asks for 125Gi of a 2,000Gi limit, but its
		// cpu-shaped nodes, with a third family's options, are charged far
		// more: sized by limit share, it all fits in one plan.
		{"lab burst", labPool(types), pods(1000, "w", "500m", "128Mi"), 1000},
		// The example: the LP bound is 1,537 pods.
		{"1,500 + 40 pods, 1,000 cpu / 1,000Gi", noMinValues(spotFleetPool(types)), limitedPods(), 1400},
		// With minValues 3, a claim of these 2 GiB/vCPU pods must keep a
		// 4 GiB/vCPU family's options and is charged for them: no plan
		// keeping minValues places more than 1,077 (limitedUpperBoundMinValues).
		{"1,500 + 40 pods, minValues 3", spotFleetPool(types), limitedPods(), 1020},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{Pods: tc.pods, NodePools: []*NodePool{tc.pool}}
			plan, err := Solve(in)
			if err != nil {
				t.Fatal(err)
			}
			if n := plan.PodCount(); n < tc.minPlaced {
				t.Errorf("%d pods placed, want at least %d", n, tc.minPlaced)
			}
			for _, u := range plan.Unschedulable {
				if !strings.Contains(u.Reason, "limit") {
					t.Errorf("pod refused for something else than the limit: %s", u.Reason)
					break
				}
			}
			checkPlan(t, in, plan)
		})
	}
}

// TestSolveKeepsLeanMinValuesOptions: under a binding limit, a claim of a
// pool with minValues 3 families keeps, for each family, the size that
// holds its pods with the least share of the limit, so minValues costs
// (almost) nothing in the binding resource: the pods fit a limit that only
// the lean option set stays within. Price order picks c6g.2xlarge claims
// of 27 small pods whose third family is charged twice their memory.
func TestSolveKeepsLeanMinValuesOptions(t *testing.T) {
	cat, err := catalog.Load(catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	limited := func(cpu, mem string) *NodePool {
		np := spotFleetPool(cat.Types())
		np.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
		return np
	}
	cases := []struct {
		name   string
		pool   *NodePool
		pods   []*corev1.Pod
		claims int // at most
	}{
		// 7.75 vCPU / 15.5Gi: c6g.4xlarge, c5.4xlarge (16 vCPU / 29.5Gi),
		// m6g.2xlarge and m5.2xlarge (8 / 29.5Gi) all stay within 30Gi; any
		// r option or a larger m does not.
		{"memory binds, 2 GiB/vCPU pods", limited("1000", "30Gi"), pods(31, "web", "250m", "512Mi"), 1},
		// 1.75 vCPU / 49Gi: r6g.2xlarge, r5.2xlarge (8 vCPU / 59Gi) and
		// m6g.4xlarge (16 / 59Gi) stay within 60Gi as one claim; two claims
		// of xlarge r options and 2xlarge m options (29.5Gi each) too.
		{"memory binds, memory-heavy pods", limited("1000", "60Gi"), pods(7, "cache", "250m", "7Gi"), 2},
		// 15 vCPU / 15Gi: c6g.4xlarge, c5.4xlarge, m6g.4xlarge, m5.4xlarge are
		// 16 vCPU; r options of 16 vCPU would be too, but no 8-vCPU option
		// holds the pods, and nothing larger fits 16 cpu.
		{"cpu binds", limited("16", "4000Gi"), pods(15, "batch", "1", "1Gi"), 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{Pods: tc.pods, NodePools: []*NodePool{tc.pool}}
			plan, err := Solve(in)
			if err != nil {
				t.Fatal(err)
			}
			if len(plan.Unschedulable) > 0 {
				t.Fatalf("%d pods refused, first: %s", len(plan.Unschedulable), plan.Unschedulable[0].Reason)
			}
			if len(plan.NewClaims) > tc.claims {
				t.Errorf("%d claims, want at most %d", len(plan.NewClaims), tc.claims)
			}
			for _, c := range plan.NewClaims {
				fams := map[string]bool{}
				for _, o := range c.Options {
					fams[o.InstanceType.Labels[awsv1.LabelInstanceFamily]] = true
				}
				if len(fams) < 3 {
					t.Errorf("%s: options span %d families, want 3", c.Name, len(fams))
				}
			}
			checkPlan(t, in, plan)
		})
	}
}

// TestSolveLimitsEveryNamedResource: a pool's limits cap the capacity of
// its claims in every resource they name, whether or not a pending pod asks
// for it (extended resources, pods, ephemeral-storage) and the number of
// nodes; the refused pods' reason quotes the resource, the limit and what
// the pool already counts.
func TestSolveLimitsEveryNamedResource(t *testing.T) {
	const widget = corev1.ResourceName("example.com/widget")
	// benchTypes(8): 1–8 vCPU, 10 pods per vCPU; each also brings one
	// widget, one GPU and 20Gi of ephemeral storage.
	types := func() []*catalog.InstanceType {
		out := benchTypes(8)
		for _, it := range out {
			it.Capacity = it.Capacity.DeepCopy()
			it.Capacity[widget] = resource.MustParse("1")
			it.Capacity["nvidia.com/gpu"] = resource.MustParse("1")
			it.Capacity[corev1.ResourceEphemeralStorage] = resource.MustParse("20Gi")
		}
		return out
	}
	// Each pod of 5 cpu needs a node of its own (6–8 vCPU).
	big := func() []*corev1.Pod { return pods(3, "big", "5", "1Gi") }
	cases := []struct {
		name   string
		limits corev1.ResourceList
		usage  corev1.ResourceList
		pods   []*corev1.Pod
		claims int
		reason []string
	}{
		{name: "GPU limit 0 on a pool whose types all carry a GPU, pods asking for none",
			limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("0")}, pods: pods(1, "small", "500m", "1Gi"),
			reason: []string{`pool "default"`, "limit nvidia.com/gpu: 0", "counts 0"}},
		{name: "extended resource no pod requests",
			limits: corev1.ResourceList{widget: resource.MustParse("2")}, pods: big(), claims: 2,
			reason: []string{"limit example.com/widget: 2", "counts 2"}},
		{name: "extended resource already used up by launched claims",
			limits: corev1.ResourceList{widget: resource.MustParse("3")}, usage: corev1.ResourceList{widget: resource.MustParse("3")},
			pods: big(), reason: []string{"limit example.com/widget: 3", "counts 3"}},
		{name: "pods, counted as the types' pod capacity",
			limits: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("130")}, pods: big(), claims: 2,
			reason: []string{"limit pods: 130"}},
		{name: "ephemeral-storage",
			limits: corev1.ResourceList{corev1.ResourceEphemeralStorage: resource.MustParse("50Gi")}, pods: big(), claims: 2,
			reason: []string{"limit ephemeral-storage: 50Gi", "counts 40Gi"}},
		{name: "node count",
			limits: corev1.ResourceList{"nodes": resource.MustParse("2")}, pods: big(), claims: 2,
			reason: []string{"limit nodes: 2", "counts 2"}},
		{name: "node count with nodes already launched",
			limits: corev1.ResourceList{"nodes": resource.MustParse("4")}, usage: corev1.ResourceList{"nodes": resource.MustParse("3")},
			pods: big(), claims: 1, reason: []string{"limit nodes: 4", "counts 4"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			np := defaultPool(types())
			np.Limits, np.Usage = tc.limits, tc.usage
			in := Input{Pods: tc.pods, NodePools: []*NodePool{np}}
			plan, err := Solve(in)
			if err != nil {
				t.Fatal(err)
			}
			if len(plan.NewClaims) != tc.claims {
				t.Errorf("%d claims, want %d", len(plan.NewClaims), tc.claims)
			}
			if want := len(tc.pods) - tc.claims; len(plan.Unschedulable) != want {
				t.Fatalf("%d pods unschedulable, want %d", len(plan.Unschedulable), want)
			}
			for _, u := range plan.Unschedulable {
				t.Log(u.Reason)
				for _, w := range tc.reason {
					if !strings.Contains(u.Reason, w) {
						t.Errorf("reason %q does not say %q", u.Reason, w)
					}
				}
			}
			checkPlan(t, in, plan)
		})
	}
}

// TestLimitRefusal: one more claim charged add fits a pool's limits while
// usage plus add stays at or below every limit the pool names (unnamed
// resources are free, a named one binds whether or not add lists it), and
// below limits.nodes in count; a refusal quotes the resource, the limit,
// what the pool counts and what the claim adds.
func TestLimitRefusal(t *testing.T) {
	const gpu = corev1.ResourceName("nvidia.com/gpu")
	list := func(kv ...string) corev1.ResourceList {
		out := corev1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return out
	}
	cases := []struct {
		name          string
		limits, usage corev1.ResourceList
		add           corev1.ResourceList
		want          []string // substrings of the refusal; none: fits
	}{
		{name: "no limits", usage: list("cpu", "1000"), add: list("cpu", "64")},
		{name: "within", limits: list("cpu", "100", "memory", "400Gi"), usage: list("cpu", "60", "memory", "200Gi"), add: list("cpu", "32", "memory", "128Gi")},
		{name: "exactly at the limit", limits: list("cpu", "100"), usage: list("cpu", "68"), add: list("cpu", "32")},
		{name: "no usage counted yet", limits: list("cpu", "32"), add: list("cpu", "32")},
		{name: "cpu past", limits: list("cpu", "100"), usage: list("cpu", "69"), add: list("cpu", "32"),
			want: []string{`pool "p": limit cpu: 100 would be exceeded`, "counts 69 launched", "the replacement adds 32"}},
		{name: "millicores count", limits: list("cpu", "100"), usage: list("cpu", "68500m"), add: list("cpu", "32"),
			want: []string{"limit cpu: 100", "counts 68500m"}},
		{name: "memory past, cpu within", limits: list("cpu", "100", "memory", "256Gi"), usage: list("cpu", "10", "memory", "200Gi"), add: list("cpu", "8", "memory", "64Gi"),
			want: []string{"limit memory: 256Gi", "counts 200Gi", "adds 64Gi"}},
		{name: "an unnamed resource is free", limits: list("cpu", "100"), usage: list("cpu", "10", "memory", "9000Gi"), add: list("cpu", "8", "memory", "64Gi")},
		{name: "a named resource the claim lacks", limits: list("cpu", "100", string(gpu), "0"), usage: list("cpu", "10"), add: list("cpu", "8")},
		{name: "a named resource the claim brings", limits: list("cpu", "100", string(gpu), "0"), usage: list("cpu", "10"), add: list("cpu", "8", string(gpu), "1"),
			want: []string{"limit nvidia.com/gpu: 0"}},
		{name: "nodes below", limits: list("nodes", "3"), usage: list("nodes", "2"), add: list("cpu", "8")},
		{name: "nodes reached", limits: list("nodes", "3", "cpu", "100"), usage: list("nodes", "3"), add: list("cpu", "8"),
			want: []string{`limit nodes: 3 reached`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			np := &NodePool{Name: "p", Limits: tc.limits, Usage: tc.usage}
			got := LimitRefusal(np, tc.add, "the replacement")
			if len(tc.want) == 0 {
				if got != "" {
					t.Fatalf("refused: %s", got)
				}
				return
			}
			if got == "" {
				t.Fatalf("fits, want a refusal with %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("refusal %q lacks %q", got, w)
				}
			}
		})
	}
}

// TestSolveLimitedMixesNearTheirBound holds BenchmarkSolveLimited's mixes
// to the bound that applies to them: at least 95% of the LP maximum of pods
// any plan keeping the pool's minValues can place under the limit rule
// (without minValues, the plain LP over the pool's types), and never more
// than it — a plan above its bound would show the bound is not one.
func TestSolveLimitedMixesNearTheirBound(t *testing.T) {
	forEachLimitedMix(t, func(t *testing.T, np *NodePool, ps []*corev1.Pod) {
		in := Input{Pods: ps, NodePools: []*NodePool{np}}
		plan, err := Solve(in)
		if err != nil {
			t.Fatal(err)
		}
		checkPlan(t, in, plan)
		ub := limitedUpperBound(np, ps)
		ubmv, err := limitedUpperBoundMinValues(np, ps)
		if err != nil {
			t.Fatal(err)
		}
		if ubmv > ub*(1+1e-9) {
			t.Errorf("the minValues bound %.1f is above the plain one %.1f", ubmv, ub)
		}
		placed := float64(plan.PodCount())
		if placed > ubmv*(1+1e-9) {
			t.Errorf("%v pods placed, above the bound %.1f", placed, ubmv)
		}
		if placed < 0.95*ubmv {
			t.Errorf("%v pods placed, below 95%% of the bound %.1f", placed, ubmv)
		}
	})
}

// TestSolveLimitedMixesExpectedLaunch holds every mix, with the pool's
// minValues and without, to at least 95% of the LP over the pool's types
// (limitedUpperBound, which ignores minValues) when claims are charged
// their expected launch (Options.ChargeExpectedLaunch), and checks that
// the claims, launched in plan order as their cheapest options, each find
// their minValues within what the limit leaves (TrimToLimit).
func TestSolveLimitedMixesExpectedLaunch(t *testing.T) {
	forEachLimitedMix(t, func(t *testing.T, np *NodePool, ps []*corev1.Pod) {
		in := Input{Pods: ps, NodePools: []*NodePool{np}, Options: Options{ChargeExpectedLaunch: true}}
		plan, err := Solve(in)
		if err != nil {
			t.Fatal(err)
		}
		checkPlan(t, in, plan)
		ub := limitedUpperBound(np, ps)
		placed := float64(plan.PodCount())
		if placed > ub*(1+1e-9) {
			t.Errorf("%v pods placed, above the bound %.1f", placed, ub)
		}
		if placed < 0.95*ub {
			t.Errorf("%v pods placed, below 95%% of the bound %.1f", placed, ub)
		}
		launched := corev1.ResourceList{}
		for _, c := range plan.NewClaims {
			kept, why := TrimToLimit(np, launched, c.Options, c.Name)
			if why != "" {
				t.Fatalf("claim %s refused at its turn: %s", c.Name, why)
			}
			for name, q := range kept[0].InstanceType.Capacity {
				cur := launched[name]
				cur.Add(q)
				launched[name] = cur
			}
		}
	})
}

// forEachLimitedMix runs check, as a subtest, on every mix of
// limitedMixes with the spot-fleet pool under the mix's limits, with the
// pool's minValues and without.
func forEachLimitedMix(t *testing.T, check func(t *testing.T, np *NodePool, ps []*corev1.Pod)) {
	cat, err := catalog.Load(catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, mix := range limitedMixes {
		for _, minValues := range []bool{true, false} {
			np := spotFleetPool(cat.Types())
			np.Limits = mix.limits
			name := mix.name
			if !minValues {
				np.Requirements[awsv1.LabelInstanceFamily].MinValues = nil
				name += " without minValues"
			}
			t.Run(name, func(t *testing.T) { check(t, np, mix.pods()) })
		}
	}
}
