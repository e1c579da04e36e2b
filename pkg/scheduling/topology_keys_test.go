package scheduling

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

// podsByValue counts the plan's pods (claims and nominations) per value
// of key, read from each claim's labels, options and requirements the
// way its node will be labelled: the capacity type and instance-type
// labels from the options (which must agree), other keys from the
// claim's labels.
func podsByValue(t *testing.T, in Input, plan *Plan, key string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, c := range plan.NewClaims {
		vals := map[string]bool{}
		for _, o := range c.Options {
			switch {
			case key == nsv1.LabelCapacityType:
				vals[o.CapacityType] = true
			case o.InstanceType.Labels[key] != "":
				vals[o.InstanceType.Labels[key]] = true
			}
		}
		if v, ok := c.Labels[key]; ok {
			vals = map[string]bool{v: true}
		}
		if len(vals) != 1 {
			t.Fatalf("claim %s has %d values of %s: %v", c.Name, len(vals), key, vals)
		}
		for v := range vals {
			out[v] += len(c.Pods)
		}
	}
	for _, nom := range plan.Nominations {
		for _, n := range in.Nodes {
			if n.Name == nom.Node {
				out[n.Labels[key]]++
			}
		}
	}
	return out
}

func wantSplit(t *testing.T, in Input, plan *Plan, key string, want map[string]int) {
	t.Helper()
	got := podsByValue(t, in, plan, key)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("pods per %s = %v, want %v", key, got, want)
			return
		}
	}
	if len(got) != len(want) {
		t.Errorf("pods per %s = %v, want %v", key, got, want)
	}
}

func withPolicies(affinity, taints *corev1.NodeInclusionPolicy) podOpt {
	return func(p *corev1.Pod) {
		for i := range p.Spec.TopologySpreadConstraints {
			p.Spec.TopologySpreadConstraints[i].NodeAffinityPolicy = affinity
			p.Spec.TopologySpreadConstraints[i].NodeTaintsPolicy = taints
		}
	}
}

func withMatchLabelKeys(keys ...string) podOpt {
	return func(p *corev1.Pod) {
		for i := range p.Spec.TopologySpreadConstraints {
			p.Spec.TopologySpreadConstraints[i].MatchLabelKeys = keys
		}
	}
}

func poolLabel(k, v string) func(*NodePool) {
	return func(np *NodePool) { np.Labels[k] = v }
}

// TestSolveTopologyKeys covers spreads and pod (anti-)affinity on keys
// other than zone and hostname: the capacity type, instance-type labels
// and NodePool labels, with minDomains, the node inclusion policies,
// matchLabelKeys and ScheduleAnyway. Every plan is also judged by the
// independent checker (checkPlan), which knows nothing of the solver.
func TestSolveTopologyKeys(t *testing.T) {
	ct := nsv1.LabelCapacityType
	def := func() []*NodePool { return []*NodePool{mkPool("default", 1)} }
	ignore, honor := corev1.NodeInclusionPolicyIgnore, corev1.NodeInclusionPolicyHonor
	odNode := func(name, cpu string, ps ...*corev1.Pod) *ExistingNode {
		n := mkNode(name, "zone-a", cpu, "32Gi", ps...)
		n.Labels[ct] = nsv1.CapacityTypeOnDemand
		return n
	}
	cases := []solveCase{
		{name: "capacity-type spread puts half on spot and half on on-demand",
			in: Input{Pods: pods(10, "w", "1", "1Gi", withSpread(ct, 1, corev1.DoNotSchedule, "web", nil)), NodePools: def()}, claims: -1,
			check: func(t *testing.T, p *Plan) {
				wantSplit(t, Input{}, p, ct, map[string]int{nsv1.CapacityTypeSpot: 5, nsv1.CapacityTypeOnDemand: 5})
			}},
		{name: "capacity-type spread maxSkew 2 with an odd count",
			in: Input{Pods: pods(7, "w", "1", "1Gi", withSpread(ct, 2, corev1.DoNotSchedule, "web", nil)), NodePools: def()}, claims: -1,
			check: func(t *testing.T, p *Plan) {
				got := podsByValue(t, Input{}, p, ct)
				if d := got[nsv1.CapacityTypeSpot] - got[nsv1.CapacityTypeOnDemand]; d > 2 || d < -2 || got[nsv1.CapacityTypeSpot]+got[nsv1.CapacityTypeOnDemand] != 7 {
					t.Errorf("split %v", got)
				}
			}},
		{name: "capacity-type spread counts pods on existing on-demand nodes",
			in: Input{Pods: pods(4, "w", "1", "1Gi", withSpread(ct, 1, corev1.DoNotSchedule, "web", nil)), NodePools: def(),
				Nodes: []*ExistingNode{odNode("n1", "500m", pods(3, "old", "100m", "100Mi", withLabel("app", "web"))...)}}, claims: -1,
			check: func(t *testing.T, p *Plan) {
				// 3 on-demand already: 4 new pods make 4 spot / 3 on-demand.
				wantSplit(t, Input{}, p, ct, map[string]int{nsv1.CapacityTypeSpot: 4})
			}},
		{name: "capacity-type spread with minDomains beyond the two capacity types",
			in: Input{Pods: pods(4, "w", "1", "1Gi", withSpread(ct, 1, corev1.DoNotSchedule, "web", ptr32(3))), NodePools: def()}, claims: -1, unsched: 2, reason: "capacity-type",
			check: func(t *testing.T, p *Plan) {
				wantSplit(t, Input{}, p, ct, map[string]int{nsv1.CapacityTypeSpot: 1, nsv1.CapacityTypeOnDemand: 1})
			}},
		{name: "minDomains met by the capacity types changes nothing",
			in: Input{Pods: pods(4, "w", "1", "1Gi", withSpread(ct, 1, corev1.DoNotSchedule, "web", ptr32(2))), NodePools: def()}, claims: -1,
			check: func(t *testing.T, p *Plan) {
				wantSplit(t, Input{}, p, ct, map[string]int{nsv1.CapacityTypeSpot: 2, nsv1.CapacityTypeOnDemand: 2})
			}},
		{name: "a pool that only allows on-demand has one capacity-type domain",
			in: Input{Pods: pods(4, "w", "1", "1Gi", withSpread(ct, 1, corev1.DoNotSchedule, "web", nil)), NodePools: []*NodePool{mkPool("od", 1, poolReq(ct, corev1.NodeSelectorOpIn, nsv1.CapacityTypeOnDemand))}}, claims: -1,
			check: func(t *testing.T, p *Plan) {
				wantSplit(t, Input{}, p, ct, map[string]int{nsv1.CapacityTypeOnDemand: 4})
			}},
		{name: "nodeAffinityPolicy Honor: a pod bound to on-demand spreads over on-demand alone",
			in: Input{Pods: pods(4, "w", "1", "1Gi", withSelector(ct, nsv1.CapacityTypeOnDemand), withSpread(ct, 1, corev1.DoNotSchedule, "web", nil), withPolicies(&honor, nil)), NodePools: def()}, claims: -1,
			check: func(t *testing.T, p *Plan) {
				wantSplit(t, Input{}, p, ct, map[string]int{nsv1.CapacityTypeOnDemand: 4})
			}},
		{name: "nodeAffinityPolicy Ignore: spot counts as an empty domain the pod cannot use",
			in: Input{Pods: pods(4, "w", "1", "1Gi", withSelector(ct, nsv1.CapacityTypeOnDemand), withSpread(ct, 1, corev1.DoNotSchedule, "web", nil), withPolicies(&ignore, nil)), NodePools: def()}, claims: -1, unsched: 3, reason: "exceed the skew",
			check: func(t *testing.T, p *Plan) {
				wantSplit(t, Input{}, p, ct, map[string]int{nsv1.CapacityTypeOnDemand: 1})
			}},
		{name: "nodeTaintsPolicy Ignore counts a tainted pool's values, Honor does not",
			in: Input{Pods: concat(
				pods(3, "ign", "1", "1Gi", withSpread("team", 1, corev1.DoNotSchedule, "ign", nil)),
				pods(3, "hon", "1", "1Gi", withSpread("team", 1, corev1.DoNotSchedule, "hon", nil), withPolicies(nil, &honor)),
			), NodePools: []*NodePool{mkPool("a", 1, poolLabel("team", "a")), mkPool("b", 1, poolLabel("team", "b"), poolTaint("dedicated"))}}, claims: -1, unsched: 2, reason: "exceed the skew",
			check: func(t *testing.T, p *Plan) {
				// ign: team b is a domain (taints ignored) it cannot use: one pod; hon: b is no domain: all three.
				wantSplit(t, Input{}, p, "team", map[string]int{"a": 4})
			}},
		{name: "ScheduleAnyway capacity-type spread is kept while it can be",
			in: Input{Pods: pods(4, "w", "1", "1Gi", withSpread(ct, 1, corev1.ScheduleAnyway, "web", nil)), NodePools: def()}, claims: -1,
			check: func(t *testing.T, p *Plan) {
				wantSplit(t, Input{}, p, ct, map[string]int{nsv1.CapacityTypeSpot: 2, nsv1.CapacityTypeOnDemand: 2})
			}},
		{name: "ScheduleAnyway capacity-type spread never blocks",
			in: Input{Pods: pods(4, "w", "1", "1Gi", withSelector(ct, nsv1.CapacityTypeOnDemand), withSpread(ct, 1, corev1.ScheduleAnyway, "web", nil), withPolicies(&ignore, nil)), NodePools: def()}, claims: -1},
		{name: "matchLabelKeys spreads each version on its own",
			in: Input{Pods: concat(
				pods(2, "v1", "1", "1Gi", withLabel("version", "1"), withSpread(ct, 1, corev1.DoNotSchedule, "web", nil), withMatchLabelKeys("version")),
				pods(4, "v2", "1", "1Gi", withLabel("version", "2"), withSpread(ct, 1, corev1.DoNotSchedule, "web", nil), withMatchLabelKeys("version")),
			), NodePools: def()}, claims: -1,
			check: func(t *testing.T, p *Plan) {
				for _, v := range []string{"1", "2"} {
					got := map[string]int{}
					for _, c := range p.NewClaims {
						for _, pod := range c.Pods {
							if pod.Labels["version"] == v {
								got[c.Options[0].CapacityType]++
							}
						}
					}
					if got[nsv1.CapacityTypeSpot] != got[nsv1.CapacityTypeOnDemand] {
						t.Errorf("version %s split %v", v, got)
					}
				}
			}},
		{name: "spread on a custom label a NodePool requirement lists",
			in: Input{Pods: pods(6, "w", "1", "1Gi", withSpread("team", 1, corev1.DoNotSchedule, "web", nil)), NodePools: []*NodePool{mkPool("p", 1, poolReq("team", corev1.NodeSelectorOpIn, "a", "b", "c"))}}, claims: -1,
			check: func(t *testing.T, p *Plan) {
				wantSplit(t, Input{}, p, "team", map[string]int{"a": 2, "b": 2, "c": 2})
				for _, c := range p.NewClaims {
					if r := c.Requirements.Get("team"); r == nil || len(r.Values()) != 1 || r.Values()[0] != c.Labels["team"] {
						t.Errorf("claim %s: team requirement %v, label %q", c.Name, r, c.Labels["team"])
					}
				}
			}},
		{name: "spread on a custom label of two NodePools' templates",
			in: Input{Pods: pods(6, "w", "1", "1Gi", withSpread("team", 1, corev1.DoNotSchedule, "web", nil)), NodePools: []*NodePool{mkPool("a", 10, poolLabel("team", "a")), mkPool("b", 1, poolLabel("team", "b"))}}, claims: -1,
			check: func(t *testing.T, p *Plan) {
				wantSplit(t, Input{}, p, "team", map[string]int{"a": 3, "b": 3})
			}},
		{name: "spread on a label with no listed values is refused with the reason",
			in: Input{Pods: pods(2, "w", "1", "1Gi", withSpread("team", 1, corev1.DoNotSchedule, "web", nil)), NodePools: []*NodePool{mkPool("p", 1, poolReq("team", corev1.NodeSelectorOpExists))}}, unsched: 2,
			reason: `pool "p": its requirement team Exists lists no values`},
		{name: "spread on architecture",
			in: Input{Pods: pods(4, "w", "1", "1Gi", withSpread(corev1.LabelArchStable, 1, corev1.DoNotSchedule, "web", nil)), NodePools: def()}, claims: -1,
			check: func(t *testing.T, p *Plan) {
				wantSplit(t, Input{}, p, corev1.LabelArchStable, map[string]int{"amd64": 2, "arm64": 2})
				// An in-flight claim shows its value: the requirement is single-valued.
				for _, c := range p.NewClaims {
					if r := c.Requirements.Get(corev1.LabelArchStable); r == nil || len(r.Values()) != 1 {
						t.Errorf("claim %s: arch requirement %v", c.Name, r)
					}
				}
			}},
		{name: "self anti-affinity on instance type: one pod per type",
			in: Input{Pods: pods(3, "db", "1", "1Gi", withLabel("app", "db"), withAnti(corev1.LabelInstanceTypeStable, "db")), NodePools: def()}, claims: 3,
			check: func(t *testing.T, p *Plan) {
				got := podsByValue(t, Input{}, p, corev1.LabelInstanceTypeStable)
				if len(got) != 3 {
					t.Errorf("pods per instance type %v", got)
				}
			}},
		{name: "anti-affinity on instance type runs out of types",
			in: Input{Pods: pods(9, "db", "100m", "100Mi", withLabel("app", "db"), withAnti(corev1.LabelInstanceTypeStable, "db")), NodePools: def()}, claims: 8, unsched: 1, reason: "anti-affinity"},
		{name: "pod affinity on capacity type follows the existing pod",
			in: Input{Pods: pods(2, "f", "1", "1Gi", withAffinity(ct, "db")), NodePools: def(),
				Nodes: []*ExistingNode{odNode("n1", "8", pods(1, "db", "7500m", "100Mi", withLabel("app", "db"))...)}}, claims: -1,
			check: func(t *testing.T, p *Plan) {
				wantSplit(t, Input{}, p, ct, map[string]int{nsv1.CapacityTypeOnDemand: 2})
			}},
		{name: "self affinity on capacity type keeps a group on the cheaper one",
			in: Input{Pods: pods(6, "c", "1", "1Gi", withLabel("app", "cache"), withAffinity(ct, "cache")), NodePools: def()}, claims: -1,
			check: func(t *testing.T, p *Plan) {
				wantSplit(t, Input{}, p, ct, map[string]int{nsv1.CapacityTypeSpot: 6})
			}},
		{name: "existing pod's capacity-type anti-affinity keeps matching pods off on-demand",
			in: Input{Pods: pods(2, "w", "1", "1Gi", withLabel("app", "web")), NodePools: def(),
				Nodes: []*ExistingNode{odNode("n1", "16", pods(1, "old", "7500m", "100Mi", withAnti(ct, "web"))...)}}, claims: -1,
			check: func(t *testing.T, p *Plan) {
				wantSplit(t, Input{}, p, ct, map[string]int{nsv1.CapacityTypeSpot: 2})
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan, err := Solve(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if tc.claims >= 0 && len(plan.NewClaims) != tc.claims {
				t.Errorf("claims = %d, want %d", len(plan.NewClaims), tc.claims)
			}
			if len(plan.Nominations) != tc.noms {
				t.Errorf("nominations = %d, want %d", len(plan.Nominations), tc.noms)
			}
			if len(plan.Unschedulable) != tc.unsched {
				var why []string
				for _, u := range plan.Unschedulable {
					why = append(why, u.Reason)
				}
				t.Errorf("unschedulable = %d, want %d: %v", len(plan.Unschedulable), tc.unsched, why)
			}
			for _, u := range plan.Unschedulable {
				if !strings.Contains(u.Reason, tc.reason) {
					t.Errorf("reason %q does not contain %q", u.Reason, tc.reason)
				}
			}
			if tc.check != nil {
				tc.check(t, plan)
			}
			checkPlan(t, tc.in, plan)
		})
	}
}

// TestExplainNamesAnUnusableTopologyKey: explain gives the same reason a
// FailedProvisioning event does for a key no pool can give a value.
func TestExplainNamesAnUnusableTopologyKey(t *testing.T) {
	p := mkPod("w", "1", "1Gi", withSpread("rack", 1, corev1.DoNotSchedule, "web", nil))
	ex, err := ExplainPod(Input{Pods: []*corev1.Pod{p}, NodePools: []*NodePool{mkPool("default", 1)}}, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(ex.Pools) != 1 || ex.Pools[0].Fits || !strings.Contains(ex.Pools[0].Reason, "its nodes have no rack label") {
		t.Errorf("pools %+v", ex.Pools)
	}
	if !strings.Contains(ex.Unschedulable, "its nodes have no rack label") {
		t.Errorf("unschedulable %q", ex.Unschedulable)
	}
}

// BenchmarkSolveCapacityTypeSpread: the mixed benchmark workload with a
// capacity-type spread (maxSkew 1) added to every fifth pod, so the
// per-value quotas, claim pinning and the final-state reconcile run at
// scale; the plan is held to the checker.
func BenchmarkSolveCapacityTypeSpread(b *testing.B) {
	for _, n := range []int{1000, 5000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			pods := mixedPods(n, 42)
			for i, p := range pods {
				if i%5 == 0 {
					p.Labels["ct-group"] = fmt.Sprint(i % 3)
					p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, corev1.TopologySpreadConstraint{
						MaxSkew: 1, TopologyKey: nsv1.LabelCapacityType, WhenUnsatisfiable: corev1.DoNotSchedule,
						LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"ct-group": p.Labels["ct-group"]}},
					})
				}
			}
			runSolveBench(b, benchTypes(400), pods, false)
		})
	}
}
