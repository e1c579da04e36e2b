package scheduling

import (
	"fmt"
	"math/rand"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
)

var propZones = []string{"z-a", "z-b", "z-c"}

func randomCatalog(r *rand.Rand) []*catalog.InstanceType {
	n := 3 + r.Intn(25)
	var out []*catalog.InstanceType
	for i := 0; i < n; i++ {
		cpu := int64(1 << r.Intn(7))
		memPerCPU := int64(2 << r.Intn(3))
		arch := []string{"amd64", "arm64"}[r.Intn(2)]
		name := fmt.Sprintf("t%d.%dx%d", i, cpu, memPerCPU)
		it := &catalog.InstanceType{
			Name:   name,
			Labels: map[string]string{corev1.LabelInstanceTypeStable: name, corev1.LabelArchStable: arch, corev1.LabelOSStable: "linux", "test/cpu": fmt.Sprint(cpu)},
			Capacity: corev1.ResourceList{
				corev1.ResourceCPU:    *resource.NewQuantity(cpu, resource.DecimalSI),
				corev1.ResourceMemory: *resource.NewQuantity(cpu*memPerCPU<<30, resource.BinarySI),
				corev1.ResourcePods:   *resource.NewQuantity(int64(8+r.Intn(100)), resource.DecimalSI),
			},
			Overhead: catalog.Overhead{KubeReserved: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("80m"), corev1.ResourceMemory: resource.MustParse("300Mi")}},
		}
		if r.Intn(6) == 0 {
			it.Capacity["nvidia.com/gpu"] = *resource.NewQuantity(int64(1+r.Intn(4)), resource.DecimalSI)
		}
		base := 0.02*float64(cpu) + 0.005*float64(cpu*memPerCPU)
		for _, z := range propZones {
			for _, ct := range []string{nsv1.CapacityTypeSpot, nsv1.CapacityTypeOnDemand} {
				if r.Intn(4) == 0 {
					continue
				}
				price := base
				if ct == nsv1.CapacityTypeSpot {
					price *= 0.3 + 0.5*r.Float64()
				}
				it.Offerings = append(it.Offerings, catalog.Offering{Zone: z, CapacityType: ct, Price: price, Available: r.Intn(8) != 0})
			}
		}
		out = append(out, it)
	}
	return out
}

func randomPools(r *rand.Rand, types []*catalog.InstanceType) []*NodePool {
	n := 1 + r.Intn(3)
	var out []*NodePool
	for i := 0; i < n; i++ {
		np := &NodePool{Name: fmt.Sprintf("pool-%d", i), Weight: int32(r.Intn(3)), Requirements: Requirements{}, InstanceTypes: types, Labels: map[string]string{}}
		switch r.Intn(5) {
		case 0:
			np.Requirements.Add(NewRequirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64"))
		case 1:
			np.Requirements.Add(NewRequirement(nsv1.LabelCapacityType, corev1.NodeSelectorOpIn, nsv1.CapacityTypeOnDemand))
		case 2:
			np.Requirements.Add(NewRequirement("test/cpu", nsv1.NodeSelectorOpLte, "16"))
		case 3:
			np.Labels["team"] = []string{"a", "b"}[r.Intn(2)]
		case 4:
			// Launches must span two sizes: claims are capped, not failed.
			sizes := NewRequirement("test/cpu", corev1.NodeSelectorOpExists)
			sizes.MinValues = ptr.To(2)
			np.Requirements.Add(sizes)
		}
		if r.Intn(4) == 0 {
			np.Taints = []corev1.Taint{{Key: "dedicated", Value: "x", Effect: corev1.TaintEffectNoSchedule}}
		}
		if r.Intn(3) == 0 {
			np.Limits = corev1.ResourceList{corev1.ResourceCPU: *resource.NewQuantity(int64(8+r.Intn(200)), resource.DecimalSI)}
			if r.Intn(2) == 0 {
				np.Limits[nsv1.ResourceNodes] = *resource.NewQuantity(int64(1+r.Intn(10)), resource.DecimalSI)
			}
		}
		out = append(out, np)
	}
	return out
}

// randomPods draws classes of pods. Every pod carries app=app-<class> and
// tier=<t0..t2>; a class's topology selector picks its own app, another
// class's app or a tier, so selectors also count pods of other classes
// (plain ones, spreading ones, ones bound to a zone or a node) as they do
// in real clusters.
func randomPods(r *rand.Rand) []*corev1.Pod {
	nClasses := 1 + r.Intn(8)
	var out []*corev1.Pod
	for c := 0; c < nClasses; c++ {
		count := 1 + r.Intn(25)
		cpu := []string{"50m", "250m", "900m", "1500m", "3"}[r.Intn(5)]
		mem := []string{"64Mi", "512Mi", "2Gi", "6Gi"}[r.Intn(4)]
		app := fmt.Sprintf("app-%d", c)
		tier := fmt.Sprintf("t%d", r.Intn(3))
		kind := r.Intn(15)
		skew := int32(1 + r.Intn(2))
		selLabels := map[string]string{"app": app}
		switch r.Intn(3) {
		case 1:
			selLabels = map[string]string{"app": fmt.Sprintf("app-%d", r.Intn(nClasses))}
		case 2:
			selLabels = map[string]string{"tier": fmt.Sprintf("t%d", r.Intn(3))}
		}
		for i := 0; i < count; i++ {
			p := pod(fmt.Sprintf("c%d-p%d", c, i), cpu, mem)
			p.Labels["app"] = app
			p.Labels["tier"] = tier
			sel := &metav1.LabelSelector{MatchLabels: selLabels}
			switch kind {
			case 1:
				p.Spec.NodeSelector = map[string]string{corev1.LabelArchStable: "arm64"}
			case 2:
				p.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
			case 3:
				p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: skew, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: sel}}
			case 4:
				p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: skew, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: sel}}
			case 5:
				p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: corev1.LabelHostname, LabelSelector: sel}}}}
			case 6:
				p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: corev1.LabelTopologyZone, LabelSelector: sel}}}}
			case 7:
				p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080}}
			case 8:
				p.Spec.Containers[0].Resources.Requests["nvidia.com/gpu"] = resource.MustParse("1")
				p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}
				p.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
			case 9:
				p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
					{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"z-b"}}, {Key: "test/cpu", Operator: corev1.NodeSelectorOpGt, Values: []string{"2"}}}},
				}}}}
			case 10:
				p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: corev1.LabelTopologyZone, LabelSelector: sel}}}}
			case 11:
				p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: skew, TopologyKey: nsv1.LabelCapacityType, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: sel}}
			case 12:
				p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: corev1.LabelInstanceTypeStable, LabelSelector: sel}}}}
			case 13:
				// Only some pools carry a team label (randomPools).
				p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: skew, TopologyKey: "team", WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: sel}}
			case 14:
				p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: corev1.LabelArchStable, LabelSelector: sel}}}}
				p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: nsv1.LabelCapacityType, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: sel, MinDomains: ptr.To(int32(2))}}
			}
			out = append(out, p)
		}
	}
	return out
}

func randomNodes(r *rand.Rand, types []*catalog.InstanceType) []*ExistingNode {
	var out []*ExistingNode
	for i := 0; i < r.Intn(4); i++ {
		it := types[r.Intn(len(types))]
		n := &ExistingNode{Name: fmt.Sprintf("node-%d", i), Labels: map[string]string{corev1.LabelHostname: fmt.Sprintf("node-%d", i), corev1.LabelTopologyZone: propZones[r.Intn(3)]}, Allocatable: it.Allocatable(), InFlight: r.Intn(3) == 0}
		for k, v := range it.Labels {
			n.Labels[k] = v
		}
		n.Labels[nsv1.LabelCapacityType] = []string{nsv1.CapacityTypeSpot, nsv1.CapacityTypeOnDemand}[r.Intn(2)]
		if r.Intn(2) == 0 {
			n.Labels["team"] = []string{"a", "b"}[r.Intn(2)]
		}
		for j := 0; j < r.Intn(3); j++ {
			p := pod(fmt.Sprintf("existing-%d-%d", i, j), "100m", "128Mi")
			p.Labels["app"] = "existing"
			p.Labels["tier"] = fmt.Sprintf("t%d", r.Intn(3))
			n.Pods = append(n.Pods, p)
		}
		out = append(out, n)
	}
	return out
}

// TestSolvePlansNeverViolateConstraints solves random (seeded) workloads
// with cross-matching selectors, catalogs, pools and clusters and
// re-checks the final state of every placement.
func TestSolvePlansNeverViolateConstraints(t *testing.T) {
	iterations := 300
	if testing.Short() {
		iterations = 60
	}
	for seed := int64(1); seed <= int64(iterations); seed++ {
		r := rand.New(rand.NewSource(seed))
		types := randomCatalog(r)
		in := Input{Pods: randomPods(r), NodePools: randomPools(r, types), Nodes: randomNodes(r, types)}
		if r.Intn(3) == 0 {
			in.DaemonSets = []*appsv1.DaemonSet{{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "agent"}, Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: pod("agent", "150m", "200Mi").Spec}}}}
		}
		plan, err := Solve(in)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if errs := planViolations(in, plan); len(errs) > 0 {
			t.Errorf("seed %d: %d violations, first: %s", seed, len(errs), errs[0])
		}
	}
}
