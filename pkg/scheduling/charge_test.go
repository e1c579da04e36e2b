package scheduling

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
)

func chargeType(name, family string, cpu, memGi int64) *catalog.InstanceType {
	return &catalog.InstanceType{
		Name:   name,
		Labels: map[string]string{corev1.LabelInstanceTypeStable: name, "test/family": family},
		Capacity: corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewQuantity(cpu, resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(memGi<<30, resource.BinarySI),
			corev1.ResourcePods:   *resource.NewQuantity(110, resource.DecimalSI),
		},
	}
}

func TestClaimCharge(t *testing.T) {
	c4 := chargeType("c.xlarge", "c", 4, 8)
	m4 := chargeType("m.xlarge", "m", 4, 16)
	for _, tc := range []struct {
		name string
		opts []LaunchOption
		want *catalog.InstanceType
	}{
		{"none", nil, nil},
		{"cheapest first", []LaunchOption{{InstanceType: c4, Price: 0.1}, {InstanceType: m4, Price: 0.2}}, c4},
		{"cheapest anywhere", []LaunchOption{{InstanceType: m4, Price: 0.3}, {InstanceType: c4, Price: 0.1}}, c4},
		{"tie goes to the first", []LaunchOption{{InstanceType: m4, Price: 0.1}, {InstanceType: c4, Price: 0.1}}, m4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ClaimCharge(tc.opts)
			if tc.want == nil {
				if got != nil {
					t.Fatalf("got %v, want nil", got)
				}
				return
			}
			if !equalLists(got, tc.want.Capacity) {
				t.Fatalf("got %v, want %s's capacity %v", got, tc.want.Name, tc.want.Capacity)
			}
		})
	}
}

func equalLists(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for k, q := range a {
		if q2, ok := b[k]; !ok || q.Cmp(q2) != 0 {
			return false
		}
	}
	return true
}

func TestTrimToLimit(t *testing.T) {
	c4 := chargeType("c.xlarge", "c", 4, 8)
	m4 := chargeType("m.xlarge", "m", 4, 16)
	r4 := chargeType("r.xlarge", "r", 4, 32)
	opts := []LaunchOption{{InstanceType: c4, Zone: "z-a", Price: 0.1}, {InstanceType: m4, Zone: "z-a", Price: 0.15}, {InstanceType: r4, Zone: "z-b", Price: 0.2}}
	pool := func(limits corev1.ResourceList, minValues int) *NodePool {
		np := &NodePool{Name: "p", Requirements: Requirements{}, Limits: limits}
		if minValues > 0 {
			r := NewRequirement("test/family", corev1.NodeSelectorOpExists)
			r.MinValues = ptr.To(minValues)
			np.Requirements.Add(r)
		}
		return np
	}
	gi := func(n int64) resource.Quantity { return *resource.NewQuantity(n<<30, resource.BinarySI) }
	cpu := func(n int64) resource.Quantity { return *resource.NewQuantity(n, resource.DecimalSI) }
	for _, tc := range []struct {
		name    string
		np      *NodePool
		counted corev1.ResourceList
		want    []string // kept types, nil: refused
		why     string   // part of the refusal
	}{
		{"no limit keeps all", pool(nil, 3), nil, []string{"c.xlarge", "m.xlarge", "r.xlarge"}, ""},
		{"node limit only keeps all", pool(corev1.ResourceList{nsv1.ResourceNodes: cpu(1)}, 0), nil, []string{"c.xlarge", "m.xlarge", "r.xlarge"}, ""},
		{"room for all", pool(corev1.ResourceList{corev1.ResourceMemory: gi(100)}, 3), corev1.ResourceList{corev1.ResourceMemory: gi(60)}, []string{"c.xlarge", "m.xlarge", "r.xlarge"}, ""},
		{"large options dropped", pool(corev1.ResourceList{corev1.ResourceMemory: gi(100)}, 2), corev1.ResourceList{corev1.ResourceMemory: gi(80)}, []string{"c.xlarge", "m.xlarge"}, ""},
		{"exactly the limit fits", pool(corev1.ResourceList{corev1.ResourceMemory: gi(100)}, 0), corev1.ResourceList{corev1.ResourceMemory: gi(92)}, []string{"c.xlarge"}, ""},
		{"minValues lost", pool(corev1.ResourceList{corev1.ResourceMemory: gi(100)}, 3), corev1.ResourceList{corev1.ResourceMemory: gi(80)}, nil, "minValues 3 for test/family"},
		{"nothing fits", pool(corev1.ResourceList{corev1.ResourceCPU: cpu(10)}, 0), corev1.ResourceList{corev1.ResourceCPU: cpu(7)}, nil, "limit cpu: 10 would be exceeded by every option"},
		{"zone minValues", func() *NodePool {
			np := pool(corev1.ResourceList{corev1.ResourceMemory: gi(100)}, 0)
			r := NewRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpExists)
			r.MinValues = ptr.To(2)
			np.Requirements.Add(r)
			return np
		}(), corev1.ResourceList{corev1.ResourceMemory: gi(80)}, nil, "minValues 2 for topology.kubernetes.io/zone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kept, why := TrimToLimit(tc.np, tc.counted, opts, "claim x")
			if tc.want == nil {
				if kept != nil || !strings.Contains(why, tc.why) {
					t.Fatalf("got %d options, %q; want refusal containing %q", len(kept), why, tc.why)
				}
				return
			}
			var names []string
			for _, o := range kept {
				names = append(names, o.InstanceType.Name)
			}
			if why != "" || fmt.Sprint(names) != fmt.Sprint(tc.want) {
				t.Fatalf("got %v, %q; want %v", names, why, tc.want)
			}
		})
	}
}

// TestLaunchesNeverExceedLimits plans random workloads into limited pools
// charging each claim its expected launch (Options.ChargeExpectedLaunch),
// then launches the claims one at a time as the launcher does: each
// re-trimmed to what the pool's launched capacity leaves (TrimToLimit) and
// launched as its cheapest remaining option or, as after insufficient-
// capacity fallbacks, any other; claims refused have their pods planned
// again in the next cycle against what launched. Whatever the order and
// the options EC2 picks, no pool's cpu, memory or node count ever passes
// its limit; launched in plan order as their cheapest options, no claim is
// refused (the plan's promise).
func TestLaunchesNeverExceedLimits(t *testing.T) {
	iterations := 200
	if testing.Short() {
		iterations = 40
	}
	refusedSome := false
	for seed := int64(1); seed <= int64(iterations); seed++ {
		r := rand.New(rand.NewSource(seed))
		types := randomCatalog(r)
		pools := randomPools(r, types)
		for _, np := range pools {
			np.Limits = corev1.ResourceList{
				corev1.ResourceCPU:    *resource.NewQuantity(int64(4+r.Intn(120)), resource.DecimalSI),
				corev1.ResourceMemory: *resource.NewQuantity(int64(8+r.Intn(400))<<30, resource.BinarySI),
			}
			if r.Intn(3) == 0 {
				np.Limits[nsv1.ResourceNodes] = *resource.NewQuantity(int64(1+r.Intn(12)), resource.DecimalSI)
			}
			if np.Requirements.Get("test/cpu") == nil && r.Intn(2) == 0 {
				sizes := NewRequirement("test/cpu", corev1.NodeSelectorOpExists)
				sizes.MinValues = ptr.To(2 + r.Intn(2))
				np.Requirements.Add(sizes)
			}
		}
		inPlanOrder := r.Intn(2) == 0
		cheapest := inPlanOrder && r.Intn(2) == 0
		pending := randomPods(r)
		launched := map[string]corev1.ResourceList{}
		nodes := map[string]int64{}
		for cycle := 0; cycle < 4 && len(pending) > 0; cycle++ {
			for _, np := range pools {
				np.Usage = launched[np.Name].DeepCopy()
				if np.Usage == nil {
					np.Usage = corev1.ResourceList{}
				}
				np.Usage[nsv1.ResourceNodes] = *resource.NewQuantity(nodes[np.Name], resource.DecimalSI)
			}
			in := Input{Pods: pending, NodePools: pools, Options: Options{ChargeExpectedLaunch: true}}
			plan, err := Solve(in)
			if err != nil {
				t.Fatalf("seed %d cycle %d: %v", seed, cycle, err)
			}
			if errs := planViolations(in, plan); len(errs) > 0 {
				t.Fatalf("seed %d cycle %d: %d violations, first: %s", seed, cycle, len(errs), errs[0])
			}
			order := r.Perm(len(plan.NewClaims))
			if inPlanOrder {
				for i := range order {
					order[i] = i
				}
			}
			pending = nil
			byName := map[string]*NodePool{}
			for _, np := range pools {
				byName[np.Name] = np
			}
			for _, i := range order {
				c := plan.NewClaims[i]
				np := byName[c.NodePool]
				nodes[np.Name]++ // a claim counts as a node from its creation
				kept, why := TrimToLimit(np, launched[np.Name], c.Options, c.Name)
				if why != "" {
					if cheapest && cycle == 0 {
						t.Fatalf("seed %d: claim %s refused at its turn in plan order: %s", seed, c.Name, why)
					}
					refusedSome = true
					nodes[np.Name]--
					pending = append(pending, c.Pods...)
					continue
				}
				if key, n, got := missingMinValues(np.Requirements, kept); key != "" {
					t.Fatalf("seed %d: claim %s launches with %d values of %s, minValues %d", seed, c.Name, got, key, n)
				}
				o := kept[0]
				if !cheapest {
					o = kept[r.Intn(len(kept))]
				}
				sum := launched[np.Name].DeepCopy()
				if sum == nil {
					sum = corev1.ResourceList{}
				}
				for name, q := range o.InstanceType.Capacity {
					cur := sum[name]
					cur.Add(q)
					sum[name] = cur
				}
				launched[np.Name] = sum
				for name, lim := range np.Limits {
					if name == nsv1.ResourceNodes {
						if nodes[np.Name] > lim.Value() {
							t.Fatalf("seed %d: pool %s has %d nodes, limit %s", seed, np.Name, nodes[np.Name], lim.String())
						}
						continue
					}
					if got := sum[name]; got.Cmp(lim) > 0 {
						t.Fatalf("seed %d: pool %s launched %s %s, limit %s", seed, np.Name, got.String(), name, lim.String())
					}
				}
			}
		}
	}
	if !refusedSome {
		t.Fatal("no launch was ever refused: the test does not reach the launch rule")
	}
}
