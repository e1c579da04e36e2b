package scheduling

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
)

// smallCatalog: 1,2,4,8,16 vCPU general types (4 GiB/vCPU, amd64), two
// arm64 types, one GPU type; spot at half price in zones a,b, on-demand in a,b,c.
func smallCatalog() []*catalog.InstanceType {
	var out []*catalog.InstanceType
	mk := func(name, arch string, cpu, memGi int64, gpu int64, price float64) {
		it := &catalog.InstanceType{
			Name:   name,
			Labels: map[string]string{corev1.LabelInstanceTypeStable: name, corev1.LabelArchStable: arch, corev1.LabelOSStable: "linux", "test/cpu": fmt.Sprint(cpu)},
			Capacity: corev1.ResourceList{
				corev1.ResourceCPU:              *resource.NewQuantity(cpu, resource.DecimalSI),
				corev1.ResourceMemory:           *resource.NewQuantity(memGi<<30, resource.BinarySI),
				corev1.ResourcePods:             *resource.NewQuantity(110, resource.DecimalSI),
				corev1.ResourceEphemeralStorage: resource.MustParse("20Gi"),
			},
			Overhead: catalog.Overhead{KubeReserved: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("256Mi")}},
		}
		if gpu > 0 {
			it.Capacity["nvidia.com/gpu"] = *resource.NewQuantity(gpu, resource.DecimalSI)
			it.Labels["test/gpu"] = "true"
		}
		for _, z := range []string{"zone-a", "zone-b"} {
			it.Offerings = append(it.Offerings, catalog.Offering{Zone: z, CapacityType: nsv1.CapacityTypeSpot, Price: price / 2, Available: true})
		}
		for _, z := range []string{"zone-a", "zone-b", "zone-c"} {
			it.Offerings = append(it.Offerings, catalog.Offering{Zone: z, CapacityType: nsv1.CapacityTypeOnDemand, Price: price, Available: true})
		}
		out = append(out, it)
	}
	for _, c := range []int64{1, 2, 4, 8, 16} {
		mk(fmt.Sprintf("m.%dx", c), "amd64", c, 4*c, 0, 0.05*float64(c))
	}
	mk("g.2x", "arm64", 2, 8, 0, 0.08)
	mk("g.8x", "arm64", 8, 32, 0, 0.32)
	mk("p.8x", "amd64", 8, 64, 2, 3.0)
	return out
}

type podOpt func(*corev1.Pod)

func mkPod(name, cpu, mem string, opts ...podOpt) *corev1.Pod {
	p := pod(name, cpu, mem)
	for _, o := range opts {
		o(p)
	}
	return p
}

func pods(n int, prefix, cpu, mem string, opts ...podOpt) []*corev1.Pod {
	var out []*corev1.Pod
	for i := 0; i < n; i++ {
		out = append(out, mkPod(fmt.Sprintf("%s-%d", prefix, i), cpu, mem, opts...))
	}
	return out
}

func withLabel(k, v string) podOpt { return func(p *corev1.Pod) { p.Labels[k] = v } }
func withSelector(k, v string) podOpt {
	return func(p *corev1.Pod) {
		if p.Spec.NodeSelector == nil {
			p.Spec.NodeSelector = map[string]string{}
		}
		p.Spec.NodeSelector[k] = v
	}
}
func withToleration(key string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists})
	}
}
func withRequest(name corev1.ResourceName, q string) podOpt {
	return func(p *corev1.Pod) { p.Spec.Containers[0].Resources.Requests[name] = resource.MustParse(q) }
}
func withNodeAffinity(terms ...[]corev1.NodeSelectorRequirement) podOpt {
	return func(p *corev1.Pod) {
		ns := &corev1.NodeSelector{}
		for _, t := range terms {
			ns.NodeSelectorTerms = append(ns.NodeSelectorTerms, corev1.NodeSelectorTerm{MatchExpressions: t})
		}
		ensureAffinity(p).NodeAffinity = &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: ns}
	}
}
func withPreferred(weight int32, reqs ...corev1.NodeSelectorRequirement) podOpt {
	return func(p *corev1.Pod) {
		a := ensureAffinity(p)
		if a.NodeAffinity == nil {
			a.NodeAffinity = &corev1.NodeAffinity{}
		}
		a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution,
			corev1.PreferredSchedulingTerm{Weight: weight, Preference: corev1.NodeSelectorTerm{MatchExpressions: reqs}})
	}
}
func ensureAffinity(p *corev1.Pod) *corev1.Affinity {
	if p.Spec.Affinity == nil {
		p.Spec.Affinity = &corev1.Affinity{}
	}
	return p.Spec.Affinity
}
func req(k string, op corev1.NodeSelectorOperator, v ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: k, Operator: op, Values: v}
}
func sel(app string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
}
func withSpread(key string, skew int32, when corev1.UnsatisfiableConstraintAction, app string, minDomains *int32) podOpt {
	return func(p *corev1.Pod) {
		p.Labels["app"] = app
		p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, corev1.TopologySpreadConstraint{MaxSkew: skew, TopologyKey: key, WhenUnsatisfiable: when, LabelSelector: sel(app), MinDomains: minDomains})
	}
}
func withAnti(key, app string) podOpt {
	return func(p *corev1.Pod) {
		a := ensureAffinity(p)
		if a.PodAntiAffinity == nil {
			a.PodAntiAffinity = &corev1.PodAntiAffinity{}
		}
		a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution, corev1.PodAffinityTerm{TopologyKey: key, LabelSelector: sel(app)})
	}
}
func withAffinity(key, app string) podOpt {
	return func(p *corev1.Pod) {
		a := ensureAffinity(p)
		if a.PodAffinity == nil {
			a.PodAffinity = &corev1.PodAffinity{}
		}
		a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution, corev1.PodAffinityTerm{TopologyKey: key, LabelSelector: sel(app)})
	}
}
func withHostPort(port int32) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: port, HostPort: port}}
	}
}

func mkPool(name string, weight int32, opts ...func(*NodePool)) *NodePool {
	np := &NodePool{Name: name, Weight: weight, Requirements: Requirements{}, InstanceTypes: smallCatalog(), Labels: map[string]string{}}
	for _, o := range opts {
		o(np)
	}
	return np
}
func poolReq(k string, op corev1.NodeSelectorOperator, v ...string) func(*NodePool) {
	return func(np *NodePool) { np.Requirements.Add(NewRequirement(k, op, v...)) }
}
func poolTaint(key string) func(*NodePool) {
	return func(np *NodePool) {
		np.Taints = append(np.Taints, corev1.Taint{Key: key, Value: "true", Effect: corev1.TaintEffectNoSchedule})
	}
}
func poolSoftTaint(key string) func(*NodePool) {
	return func(np *NodePool) {
		np.Taints = append(np.Taints, corev1.Taint{Key: key, Value: "true", Effect: corev1.TaintEffectPreferNoSchedule})
	}
}
func poolLimit(name corev1.ResourceName, q string) func(*NodePool) {
	return func(np *NodePool) {
		if np.Limits == nil {
			np.Limits = corev1.ResourceList{}
		}
		np.Limits[name] = resource.MustParse(q)
	}
}

func mkNode(name, zone, cpu, mem string, pods ...*corev1.Pod) *ExistingNode {
	return &ExistingNode{
		Name:        name,
		Labels:      map[string]string{corev1.LabelHostname: name, corev1.LabelTopologyZone: zone, corev1.LabelArchStable: "amd64", corev1.LabelOSStable: "linux"},
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem), corev1.ResourcePods: resource.MustParse("110")},
		Pods:        pods,
	}
}

func concat(ps ...[]*corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range ps {
		out = append(out, p...)
	}
	return out
}

func claimZones(plan *Plan) map[string]int {
	out := map[string]int{}
	for _, c := range plan.NewClaims {
		out[c.Options[0].Zone] += len(c.Pods)
	}
	return out
}

type solveCase struct {
	name      string
	in        Input
	claims    int // -1: any
	noms      int
	unsched   int
	reason    string // substring every unschedulable reason must contain
	check     func(t *testing.T, plan *Plan)
	skipCheck bool // the case builds existing skew the final-state checker would flag
}

func TestSolve(t *testing.T) {
	def := func() []*NodePool { return []*NodePool{mkPool("default", 1)} }
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "agent"}, Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: pod("agent", "500m", "1Gi").Spec}}}
	cases := []solveCase{
		// Resources.
		{name: "one small pod gets the cheapest fitting type", in: Input{Pods: pods(1, "a", "500m", "1Gi"), NodePools: def()}, claims: 1,
			check: func(t *testing.T, p *Plan) { wantType(t, p, 0, "m.1x") }},
		{name: "cpu larger than any type is unschedulable with the largest allowance", in: Input{Pods: pods(1, "a", "96", "1Gi"), NodePools: def()}, claims: 0, unsched: 1,
			reason: "needs 96 cpu but the largest allows 15.9 cpu"},
		{name: "memory larger than any type is unschedulable", in: Input{Pods: pods(1, "a", "1", "200Gi"), NodePools: def()}, unsched: 1, reason: "memory but the largest allows"},
		{name: "gpu pod lands on the gpu type", in: Input{Pods: pods(1, "a", "1", "1Gi", withRequest("nvidia.com/gpu", "1")), NodePools: def()}, claims: 1,
			check: func(t *testing.T, p *Plan) { wantType(t, p, 0, "p.8x") }},
		{name: "too many gpus is unschedulable naming the resource", in: Input{Pods: pods(1, "a", "1", "1Gi", withRequest("nvidia.com/gpu", "4")), NodePools: def()}, unsched: 1, reason: "nvidia.com/gpu"},
		{name: "ephemeral storage beyond every type is unschedulable", in: Input{Pods: pods(1, "a", "1", "1Gi", withRequest(corev1.ResourceEphemeralStorage, "50Gi")), NodePools: def()}, unsched: 1, reason: "ephemeral-storage"},
		{name: "many pods share one amd64 node", in: Input{Pods: pods(30, "a", "250m", "512Mi", withSelector(corev1.LabelArchStable, "amd64")), NodePools: def()}, claims: 1,
			check: func(t *testing.T, p *Plan) { wantType(t, p, 0, "m.8x") }},
		{name: "init container peak sizes the node", in: Input{Pods: []*corev1.Pod{mkPod("a", "100m", "100Mi", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "init", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")}}}}
		})}, NodePools: def()}, claims: 1, check: func(t *testing.T, p *Plan) { wantType(t, p, 0, "m.4x") }},
		{name: "sidecar adds to the containers", in: Input{Pods: []*corev1.Pod{mkPod("a", "1", "100Mi", func(p *corev1.Pod) {
			always := corev1.ContainerRestartPolicyAlways
			p.Spec.InitContainers = []corev1.Container{{Name: "side", RestartPolicy: &always, Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}
		})}, NodePools: def()}, claims: 1, check: func(t *testing.T, p *Plan) { wantType(t, p, 0, "m.4x") }},
		// Taints and tolerations.
		{name: "untolerated pool taint is named", in: Input{Pods: pods(1, "a", "1", "1Gi"), NodePools: []*NodePool{mkPool("gpu", 1, poolTaint("nvidia.com/gpu"))}}, unsched: 1,
			reason: `pool "gpu": taint nvidia.com/gpu=true:NoSchedule not tolerated`},
		{name: "tolerated pool taint schedules", in: Input{Pods: pods(1, "a", "1", "1Gi", withToleration("nvidia.com/gpu")), NodePools: []*NodePool{mkPool("gpu", 1, poolTaint("nvidia.com/gpu"))}}, claims: 1},
		{name: "pod without toleration skips the tainted heavier pool", in: Input{Pods: pods(1, "a", "1", "1Gi"), NodePools: []*NodePool{mkPool("tainted", 50, poolTaint("x")), mkPool("open", 1)}}, claims: 1,
			check: func(t *testing.T, p *Plan) { wantPool(t, p, "open") }},
		// PreferNoSchedule: a pool whose soft taint the pod does not
		// tolerate is used only once nothing else fits (Karpenter's last
		// relaxation), whatever its weight.
		{name: "pod without toleration skips the heavier pool of a PreferNoSchedule taint", in: Input{Pods: pods(1, "a", "1", "1Gi"),
			NodePools: []*NodePool{mkPool("soft", 50, poolSoftTaint("x")), mkPool("open", 1)}}, claims: 1,
			check: func(t *testing.T, p *Plan) { wantPool(t, p, "open") }},
		{name: "pod tolerating the PreferNoSchedule taint takes the heavier pool", in: Input{Pods: pods(1, "a", "1", "1Gi", withToleration("x")),
			NodePools: []*NodePool{mkPool("soft", 50, poolSoftTaint("x")), mkPool("open", 1)}}, claims: 1,
			check: func(t *testing.T, p *Plan) { wantPool(t, p, "soft") }},
		{name: "a PreferNoSchedule pool is used when no other fits", in: Input{Pods: pods(1, "a", "1", "1Gi"),
			NodePools: []*NodePool{mkPool("soft", 1, poolSoftTaint("x"))}}, claims: 1,
			check: func(t *testing.T, p *Plan) { wantPool(t, p, "soft") }},
		{name: "a PreferNoSchedule pool is relaxed to only after the pod's preferences", in: Input{Pods: pods(1, "a", "1", "1Gi",
			withPreferred(10, corev1.NodeSelectorRequirement{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"zone-b"}})),
			NodePools: []*NodePool{mkPool("soft", 50, poolSoftTaint("x")), mkPool("open", 1, poolReq(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "zone-a"))}}, claims: 1,
			check: func(t *testing.T, p *Plan) { wantPool(t, p, "open") }},
		{name: "tainted existing node is skipped", in: Input{Pods: pods(1, "a", "1", "1Gi"), NodePools: def(), Nodes: []*ExistingNode{func() *ExistingNode {
			n := mkNode("n1", "zone-a", "8", "32Gi")
			n.Taints = []corev1.Taint{{Key: "x", Effect: corev1.TaintEffectNoSchedule}}
			return n
		}()}}, claims: 1, noms: 0},
		// Selectors and node affinity.
		{name: "arm64 node selector picks an arm64 type", in: Input{Pods: pods(1, "a", "1", "1Gi", withSelector(corev1.LabelArchStable, "arm64")), NodePools: def()}, claims: 1,
			check: func(t *testing.T, p *Plan) { wantType(t, p, 0, "g.2x") }},
		{name: "instance type not offered is named", in: Input{Pods: pods(1, "a", "1", "1Gi", withSelector(corev1.LabelInstanceTypeStable, "p3.2xlarge")), NodePools: def()}, unsched: 1,
			reason: "requirement node.kubernetes.io/instance-type In [p3.2xlarge] matches none of its"},
		{name: "zone In narrows options to the zone", in: Input{Pods: pods(1, "a", "1", "1Gi", withNodeAffinity([]corev1.NodeSelectorRequirement{req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "zone-b")})), NodePools: def()}, claims: 1,
			check: func(t *testing.T, p *Plan) { wantAllZones(t, p, "zone-b") }},
		{name: "zone NotIn excludes zones", in: Input{Pods: pods(1, "a", "1", "1Gi", withNodeAffinity([]corev1.NodeSelectorRequirement{req(corev1.LabelTopologyZone, corev1.NodeSelectorOpNotIn, "zone-a")})), NodePools: def()}, claims: 1,
			check: func(t *testing.T, p *Plan) { wantAllZones(t, p, "zone-b") }},
		{name: "on-demand requirement gives on-demand options", in: Input{Pods: pods(1, "a", "1", "1Gi", withSelector(nsv1.LabelCapacityType, nsv1.CapacityTypeOnDemand)), NodePools: def()}, claims: 1,
			check: func(t *testing.T, p *Plan) { wantCapacityType(t, p, nsv1.CapacityTypeOnDemand) }},
		{name: "Gt on a numeric label", in: Input{Pods: pods(1, "a", "1", "1Gi", withNodeAffinity([]corev1.NodeSelectorRequirement{req("test/cpu", corev1.NodeSelectorOpGt, "4"), req(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64"), req("test/gpu", corev1.NodeSelectorOpDoesNotExist)})), NodePools: def()}, claims: 1,
			check: func(t *testing.T, p *Plan) { wantType(t, p, 0, "m.8x") }},
		{name: "Lt with nothing below is unschedulable", in: Input{Pods: pods(1, "a", "1", "1Gi", withNodeAffinity([]corev1.NodeSelectorRequirement{req("test/cpu", corev1.NodeSelectorOpLt, "1")})), NodePools: def()}, unsched: 1, reason: "test/cpu Lt 1"},
		{name: "second OR term is used when the first cannot be met", in: Input{Pods: pods(1, "a", "1", "1Gi", withNodeAffinity(
			[]corev1.NodeSelectorRequirement{req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "nope")},
			[]corev1.NodeSelectorRequirement{req(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "arm64")})), NodePools: def()}, claims: 1,
			check: func(t *testing.T, p *Plan) { wantType(t, p, 0, "g.2x") }},
		{name: "preferred node affinity is honoured when possible", in: Input{Pods: pods(1, "a", "1", "1Gi", withPreferred(10, req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "zone-b"))), NodePools: def()}, claims: 1,
			check: func(t *testing.T, p *Plan) { wantAllZones(t, p, "zone-b") }},
		{name: "impossible preference is relaxed", in: Input{Pods: pods(1, "a", "1", "1Gi", withPreferred(10, req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "zone-x"))), NodePools: def()}, claims: 1},
		{name: "preferences ignored under the Ignore policy", in: Input{Pods: pods(1, "a", "1", "1Gi", withPreferred(10, req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "zone-b"))), NodePools: def(), Options: Options{PreferencePolicy: PreferenceIgnore}}, claims: 1,
			check: func(t *testing.T, p *Plan) {
				if z := p.NewClaims[0].Options[0].Zone; z != "zone-a" {
					t.Errorf("cheapest option in %s; the ignored preference should not pin zone-b", z)
				}
			}},
		{name: "custom label set by the pool satisfies the selector", in: Input{Pods: pods(1, "a", "1", "1Gi", withSelector("team", "a")), NodePools: []*NodePool{mkPool("team-a", 1, func(np *NodePool) { np.Labels["team"] = "a" })}}, claims: 1,
			check: func(t *testing.T, p *Plan) {
				if p.NewClaims[0].Labels["team"] != "a" {
					t.Errorf("claim labels %v", p.NewClaims[0].Labels)
				}
			}},
		{name: "custom label missing from the pool is named", in: Input{Pods: pods(1, "a", "1", "1Gi", withSelector("team", "a")), NodePools: def()}, unsched: 1, reason: "pool sets no label team"},
		{name: "multi-valued pool requirement narrows per claim", in: Input{Pods: concat(pods(1, "a", "1", "1Gi", withSelector("team", "a")), pods(1, "b", "1", "1Gi", withSelector("team", "b"))), NodePools: []*NodePool{mkPool("teams", 1, poolReq("team", corev1.NodeSelectorOpIn, "a", "b"))}}, claims: 2},
		{name: "nodepool label selects the pool", in: Input{Pods: pods(1, "a", "1", "1Gi", withSelector(nsv1.LabelNodePool, "second")), NodePools: []*NodePool{mkPool("first", 10), mkPool("second", 1)}}, claims: 1,
			check: func(t *testing.T, p *Plan) { wantPool(t, p, "second") }},
		{name: "hostname selector nominates the named node", in: Input{Pods: pods(1, "a", "1", "1Gi", withSelector(corev1.LabelHostname, "n2")), NodePools: def(), Nodes: []*ExistingNode{mkNode("n1", "zone-a", "8", "32Gi"), mkNode("n2", "zone-a", "8", "32Gi")}}, noms: 1,
			check: func(t *testing.T, p *Plan) {
				if p.Nominations[0].Node != "n2" {
					t.Errorf("nominated to %s", p.Nominations[0].Node)
				}
			}},
		// Capacity types, availability.
		{name: "spot preferred when cheaper", in: Input{Pods: pods(1, "a", "1", "1Gi"), NodePools: def()}, claims: 1,
			check: func(t *testing.T, p *Plan) { wantCapacityType(t, p, nsv1.CapacityTypeSpot) }},
		{name: "spot shortage (ICE) falls back to on-demand", in: Input{Pods: pods(1, "a", "1", "1Gi"), NodePools: []*NodePool{mkPool("p", 1, func(np *NodePool) {
			for _, it := range np.InstanceTypes {
				for i := range it.Offerings {
					if it.Offerings[i].CapacityType == nsv1.CapacityTypeSpot {
						it.Offerings[i].Available = false
					}
				}
			}
		})}}, claims: 1, check: func(t *testing.T, p *Plan) { wantCapacityType(t, p, nsv1.CapacityTypeOnDemand) }},
		{name: "no available offering is explained", in: Input{Pods: pods(1, "a", "1", "1Gi"), NodePools: []*NodePool{mkPool("p", 1, func(np *NodePool) {
			for _, it := range np.InstanceTypes {
				for i := range it.Offerings {
					it.Offerings[i].Available = false
				}
			}
		})}}, unsched: 1, reason: "no available offering"},
		{name: "options are price ordered, one capacity type, at most the cap", in: Input{Pods: pods(1, "a", "100m", "100Mi"), NodePools: def(), Options: Options{MaxOptionsPerClaim: 4}}, claims: 1,
			check: func(t *testing.T, p *Plan) {
				if n := len(p.NewClaims[0].Options); n != 4 {
					t.Errorf("%d options, want 4", n)
				}
			}},
		// Existing nodes.
		{name: "pod fits an existing node", in: Input{Pods: pods(2, "a", "1", "1Gi"), NodePools: def(), Nodes: []*ExistingNode{mkNode("n1", "zone-a", "4", "16Gi")}}, noms: 2},
		{name: "full existing node leads to a claim", in: Input{Pods: pods(1, "a", "1", "1Gi"), NodePools: def(), Nodes: []*ExistingNode{mkNode("n1", "zone-a", "4", "16Gi", pods(1, "old", "3500m", "1Gi")...)}}, claims: 1},
		{name: "in-flight claim takes pods", in: Input{Pods: pods(1, "a", "1", "1Gi"), NodePools: def(), Nodes: []*ExistingNode{func() *ExistingNode {
			n := mkNode("nc-1", "zone-a", "4", "16Gi")
			n.InFlight = true
			n.Taints = []corev1.Taint{nsv1.UnregisteredTaint}
			return n
		}()}}, noms: 1},
		{name: "node marked for deletion takes no pods", in: Input{Pods: pods(1, "a", "1", "1Gi"), NodePools: def(), Nodes: []*ExistingNode{func() *ExistingNode {
			n := mkNode("n1", "zone-a", "4", "16Gi")
			n.MarkedForDeletion = true
			return n
		}()}}, claims: 1},
		{name: "no pool and no node explains itself", in: Input{Pods: pods(1, "a", "1", "1Gi")}, unsched: 1, reason: "no NodePool exists"},
		// Topology spread.
		{name: "zone spread spreads evenly", in: Input{Pods: pods(6, "a", "1", "1Gi", withSpread(corev1.LabelTopologyZone, 1, corev1.DoNotSchedule, "web", nil)), NodePools: def()}, claims: -1,
			check: func(t *testing.T, p *Plan) {
				if z := claimZones(p); z["zone-a"] != 2 || z["zone-b"] != 2 || z["zone-c"] != 2 {
					t.Errorf("zones %v", z)
				}
			}},
		{name: "zone spread fills the emptier zone first", skipCheck: true, in: Input{Pods: pods(2, "a", "1", "1Gi", withSpread(corev1.LabelTopologyZone, 1, corev1.DoNotSchedule, "web", nil)), NodePools: def(),
			Nodes: []*ExistingNode{mkNode("n1", "zone-a", "1", "1Gi", pods(1, "old", "100m", "100Mi", withLabel("app", "web"))...), mkNode("n2", "zone-b", "1", "1Gi", pods(1, "old2", "100m", "100Mi", withLabel("app", "web"))...)}}, claims: -1,
			check: func(t *testing.T, p *Plan) {
				if z := claimZones(p); z["zone-c"] < 1 {
					t.Errorf("zones %v", z)
				}
			}},
		{name: "hostname spread puts one pod per node", in: Input{Pods: pods(4, "a", "100m", "100Mi", withSpread(corev1.LabelHostname, 1, corev1.DoNotSchedule, "web", nil)), NodePools: def()}, claims: 4},
		{name: "hostname spread maxSkew 2 pairs pods", in: Input{Pods: pods(4, "a", "100m", "100Mi", withSpread(corev1.LabelHostname, 2, corev1.DoNotSchedule, "web", nil)), NodePools: def()}, claims: 2},
		{name: "minDomains above the zone count caps each zone", in: Input{Pods: pods(5, "a", "100m", "100Mi", withSpread(corev1.LabelTopologyZone, 1, corev1.DoNotSchedule, "web", ptr32(5))), NodePools: def()}, claims: -1, unsched: 2,
			reason: "topology spread maxSkew 1"},
		{name: "zone spread counts pods it does not carry: the emptiest zones take the spreaders", in: Input{
			Pods: concat(
				pods(2, "spreader", "100m", "100Mi", withLabel("app", "x"), func(p *corev1.Pod) {
					p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule,
						LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "db"}}}}
				}),
				pods(4, "db", "100m", "100Mi", withLabel("tier", "db"))),
			NodePools: def(),
			Nodes:     []*ExistingNode{mkNode("n1", "zone-a", "1", "1Gi", pods(2, "old", "100m", "100Mi", withLabel("tier", "db"))...)}}, claims: -1, noms: 2,
			check: func(t *testing.T, p *Plan) {
				// zone-a already holds 2 tier=db pods: the new ones level
				// zones b and c, and the spreaders (which the selector does
				// not count) may go anywhere, n1 included.
				db := map[string]int{}
				for _, c := range p.NewClaims {
					for _, pod := range c.Pods {
						if pod.Labels["tier"] == "db" {
							db[c.Options[0].Zone]++
						}
					}
				}
				if db["zone-b"] != 2 || db["zone-c"] != 2 {
					t.Errorf("new tier=db pods by zone %v, want 2 in zone-b and 2 in zone-c", db)
				}
			}},
		{name: "hostname spread counts plain pods on the node", in: Input{
			Pods: concat(
				pods(3, "spreader", "100m", "100Mi", withLabel("app", "x"), func(p *corev1.Pod) {
					p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.DoNotSchedule,
						LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "db"}}}}
				}),
				pods(6, "db", "100m", "100Mi", withLabel("tier", "db"))),
			NodePools: def()}, claims: -1,
			check: func(t *testing.T, p *Plan) {
				for _, c := range p.NewClaims {
					spreaders, db := 0, 0
					for _, pod := range c.Pods {
						if pod.Labels["tier"] == "db" {
							db++
						} else {
							spreaders++
						}
					}
					if spreaders > 0 && db > 1 {
						t.Errorf("claim %s holds %d spreaders and %d tier=db pods", c.Name, spreaders, db)
					}
				}
			}},
		{name: "ScheduleAnyway spread never blocks", in: Input{Pods: pods(4, "a", "100m", "100Mi", withSpread(corev1.LabelHostname, 1, corev1.ScheduleAnyway, "web", nil)), NodePools: []*NodePool{mkPool("p", 1, poolLimit(nsv1.ResourceNodes, "1"))}}, claims: 1},
		{name: "a topology key no pool sets is named", in: Input{Pods: pods(1, "a", "100m", "100Mi", withSpread("rack", 1, corev1.DoNotSchedule, "web", nil)), NodePools: def()}, unsched: 1, reason: `pool "default": its nodes have no rack label, which topology spread maxSkew 1 app=web on rack needs`},
		// Pod affinity and anti-affinity.
		{name: "hostname anti-affinity: one per node", in: Input{Pods: pods(3, "a", "100m", "100Mi", withLabel("app", "db"), withAnti(corev1.LabelHostname, "db")), NodePools: def()}, claims: 3},
		{name: "anti-affinity avoids the node with a matching pod", in: Input{Pods: pods(1, "a", "100m", "100Mi", withLabel("app", "db"), withAnti(corev1.LabelHostname, "db")), NodePools: def(),
			Nodes: []*ExistingNode{mkNode("n1", "zone-a", "8", "32Gi", pods(1, "old", "100m", "100Mi", withLabel("app", "db"))...)}}, claims: 1, noms: 0},
		{name: "existing pod's anti-affinity repels the new pod", in: Input{Pods: pods(1, "a", "100m", "100Mi", withLabel("app", "web")), NodePools: def(),
			Nodes: []*ExistingNode{mkNode("n1", "zone-a", "8", "32Gi", pods(1, "old", "100m", "100Mi", withAnti(corev1.LabelHostname, "web"))...)}}, claims: 1, noms: 0},
		{name: "zone self-affinity keeps a group in one zone", in: Input{Pods: pods(12, "a", "1500m", "1Gi", withLabel("app", "cache"), withAffinity(corev1.LabelTopologyZone, "cache")), NodePools: def()}, claims: -1,
			check: func(t *testing.T, p *Plan) {
				if z := claimZones(p); len(z) != 1 {
					t.Errorf("zones %v", z)
				}
			}},
		{name: "zone affinity follows an existing pod", in: Input{Pods: pods(2, "a", "1", "1Gi", withAffinity(corev1.LabelTopologyZone, "db")), NodePools: def(),
			Nodes: []*ExistingNode{mkNode("n1", "zone-b", "1", "1Gi", pods(1, "db", "500m", "100Mi", withLabel("app", "db"))...)}}, claims: -1,
			check: func(t *testing.T, p *Plan) { wantAllZones(t, p, "zone-b") }},
		{name: "hostname affinity joins the existing pod's node", in: Input{Pods: pods(1, "a", "1", "1Gi", withAffinity(corev1.LabelHostname, "db")), NodePools: def(),
			Nodes: []*ExistingNode{mkNode("n0", "zone-a", "8", "32Gi"), mkNode("n1", "zone-b", "8", "32Gi", pods(1, "db", "500m", "100Mi", withLabel("app", "db"))...)}}, noms: 1,
			check: func(t *testing.T, p *Plan) {
				if p.Nominations[0].Node != "n1" {
					t.Errorf("nominated to %s", p.Nominations[0].Node)
				}
			}},
		{name: "affinity to pods that exist nowhere is unschedulable", in: Input{Pods: pods(1, "a", "1", "1Gi", withAffinity(corev1.LabelTopologyZone, "ghost")), NodePools: def()}, unsched: 1, reason: "pod affinity"},
		{name: "zone self anti-affinity allows one per zone", in: Input{Pods: pods(4, "a", "100m", "100Mi", withLabel("app", "db"), withAnti(corev1.LabelTopologyZone, "db")), NodePools: def()}, claims: 3, unsched: 1, reason: "pod anti-affinity"},
		// Host ports.
		{name: "same host port needs separate nodes", in: Input{Pods: pods(2, "a", "100m", "100Mi", withHostPort(8080)), NodePools: def()}, claims: 2},
		{name: "host port taken on the existing node", in: Input{Pods: pods(1, "a", "100m", "100Mi", withHostPort(8080)), NodePools: def(),
			Nodes: []*ExistingNode{mkNode("n1", "zone-a", "8", "32Gi", pods(1, "old", "100m", "100Mi", withHostPort(8080))...)}}, claims: 1, noms: 0},
		// Limits and weights.
		{name: "cpu limit caps what is launched and names the limit", in: Input{Pods: pods(10, "a", "1", "1Gi", withLabel("app", "db"), withAnti(corev1.LabelHostname, "db")), NodePools: []*NodePool{mkPool("p", 1, poolLimit(corev1.ResourceCPU, "4"))}}, claims: 2, unsched: 8, reason: `pool "p": limit cpu`},
		{name: "node limit caps the claim count", in: Input{Pods: pods(3, "a", "100m", "100Mi", withLabel("app", "db"), withAnti(corev1.LabelHostname, "db")), NodePools: []*NodePool{mkPool("p", 1, poolLimit(nsv1.ResourceNodes, "2"))}}, claims: 2, unsched: 1, reason: "limit nodes: 2 reached"},
		{name: "launched usage counts against the limit", in: Input{Pods: pods(1, "a", "1", "1Gi"), NodePools: []*NodePool{mkPool("p", 1, poolLimit(corev1.ResourceCPU, "10"), func(np *NodePool) {
			np.Usage = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10")}
		})}}, unsched: 1, reason: "limit"},
		{name: "higher weight pool first even when dearer", in: Input{Pods: pods(1, "a", "1", "1Gi"), NodePools: []*NodePool{mkPool("cheap", 1), mkPool("od", 50, poolReq(nsv1.LabelCapacityType, corev1.NodeSelectorOpIn, nsv1.CapacityTypeOnDemand))}}, claims: 1,
			check: func(t *testing.T, p *Plan) { wantPool(t, p, "od") }},
		{name: "limited heavy pool overflows to the next", in: Input{Pods: pods(3, "a", "100m", "100Mi", withLabel("app", "db"), withAnti(corev1.LabelHostname, "db")), NodePools: []*NodePool{mkPool("first", 50, poolLimit(nsv1.ResourceNodes, "1")), mkPool("second", 1)}}, claims: 3},
		// DaemonSets, minValues, determinism.
		{name: "daemon overhead sizes the node", in: Input{Pods: pods(1, "a", "500m", "1Gi"), NodePools: def(), DaemonSets: []*appsv1.DaemonSet{ds}}, claims: 1,
			check: func(t *testing.T, p *Plan) {
				wantType(t, p, 0, "g.2x") // 1.5 cpu with the daemon: the 2-vCPU arm64 type is cheapest
				if cpu := p.NewClaims[0].Requests.Cpu().MilliValue(); cpu != 1000 {
					t.Errorf("claim requests cpu %dm, want 1000m", cpu)
				}
			}},
		{name: "daemon that does not tolerate the pool taint adds nothing", in: Input{Pods: pods(1, "a", "500m", "1Gi", withToleration("x")), NodePools: []*NodePool{mkPool("t", 1, poolTaint("x"))}, DaemonSets: []*appsv1.DaemonSet{ds}}, claims: 1,
			check: func(t *testing.T, p *Plan) { wantType(t, p, 0, "m.1x") }},
		{name: "minValues keeps enough instance types", in: Input{Pods: pods(1, "a", "500m", "1Gi"), NodePools: []*NodePool{mkPool("p", 1, func(np *NodePool) {
			r := NewRequirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpExists)
			three := 3
			r.MinValues = &three
			np.Requirements.Add(r)
		})}}, claims: 1,
			check: func(t *testing.T, p *Plan) {
				if vals := p.NewClaims[0].Requirements.Get(corev1.LabelInstanceTypeStable).Values(); len(vals) < 3 {
					t.Errorf("instance types %v", vals)
				}
			}},
		{name: "minValues that cannot be met is explained", in: Input{Pods: pods(1, "a", "10", "1Gi"), NodePools: []*NodePool{mkPool("p", 1, func(np *NodePool) {
			r := NewRequirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpExists)
			three := 3
			r.MinValues = &three
			np.Requirements.Add(r)
		})}}, unsched: 1, reason: "minValues 3"},
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
				t.Errorf("unschedulable = %d, want %d: %v", len(plan.Unschedulable), tc.unsched, plan.Unschedulable)
			}
			for _, u := range plan.Unschedulable {
				if !strings.Contains(u.Reason, tc.reason) {
					t.Errorf("reason %q does not contain %q", u.Reason, tc.reason)
				}
			}
			if tc.check != nil && len(plan.NewClaims)+len(plan.Nominations) > 0 {
				tc.check(t, plan)
			}
			if !tc.skipCheck {
				checkPlan(t, tc.in, plan)
			}
		})
	}
}

func ptr32(v int32) *int32 { return &v }

func wantType(t *testing.T, p *Plan, i int, name string) {
	t.Helper()
	if len(p.NewClaims) <= i {
		t.Fatalf("no claim %d", i)
	}
	if got := p.NewClaims[i].Options[0].InstanceType.Name; got != name {
		t.Errorf("claim %d cheapest type %s, want %s", i, got, name)
	}
}

func wantPool(t *testing.T, p *Plan, name string) {
	t.Helper()
	for _, c := range p.NewClaims {
		if c.NodePool != name {
			t.Errorf("claim %s from pool %s, want %s", c.Name, c.NodePool, name)
		}
	}
}

func wantAllZones(t *testing.T, p *Plan, zone string) {
	t.Helper()
	for _, c := range p.NewClaims {
		for _, o := range c.Options {
			if o.Zone != zone {
				t.Errorf("claim %s option in %s, want %s", c.Name, o.Zone, zone)
				return
			}
		}
	}
}

func wantCapacityType(t *testing.T, p *Plan, ct string) {
	t.Helper()
	for _, c := range p.NewClaims {
		for _, o := range c.Options {
			if o.CapacityType != ct {
				t.Errorf("claim %s option %s, want %s", c.Name, o.CapacityType, ct)
				return
			}
		}
	}
}

func TestSolveIsDeterministic(t *testing.T) {
	in := Input{Pods: mixedPods(500, 7), NodePools: []*NodePool{defaultPool(benchTypes(50))}}
	a, err := Solve(in)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Solve(in)
	summary := func(p *Plan) []string {
		var out []string
		for _, c := range p.NewClaims {
			s := c.Name + " " + c.Options[0].InstanceType.Name + " " + c.Options[0].Zone
			for _, pod := range c.Pods {
				s += " " + pod.Name
			}
			out = append(out, s)
		}
		return out
	}
	if !reflect.DeepEqual(summary(a), summary(b)) {
		t.Error("two solves of the same input differ")
	}
	if len(a.NewClaims) == 0 {
		t.Error("no claims planned")
	}
}
