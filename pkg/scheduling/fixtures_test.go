package scheduling

import (
	"fmt"
	"math/rand"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
)

// benchTypes builds the instance-type mix of Karpenter's scheduling
// benchmark: type i has i+1 vCPU, 2(i+1) GiB, 10(i+1) pods, allocatable =
// capacity − 100m cpu − 10Mi memory, price 0.3147483648(i+1), spot in
// zones 1–2 and on-demand in zones 1–3 at the same price.
func benchTypes(n int) []*catalog.InstanceType {
	out := make([]*catalog.InstanceType, 0, n)
	for i := 0; i < n; i++ {
		cpu := int64(i + 1)
		name := fmt.Sprintf("fake-it-%d", i)
		price := 0.3147483648 * float64(cpu)
		it := &catalog.InstanceType{
			Name: name,
			Labels: map[string]string{
				corev1.LabelInstanceTypeStable: name,
				corev1.LabelArchStable:         "amd64",
				corev1.LabelOSStable:           "linux",
			},
			VCPU: int(cpu), MemoryMiB: 2 * 1024 * cpu, OnDemandPrice: price,
			Capacity: corev1.ResourceList{
				corev1.ResourceCPU:    *resource.NewQuantity(cpu, resource.DecimalSI),
				corev1.ResourceMemory: *resource.NewQuantity(2*cpu<<30, resource.BinarySI),
				corev1.ResourcePods:   *resource.NewQuantity(10*cpu, resource.DecimalSI),
			},
			Overhead: catalog.Overhead{KubeReserved: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("100m"),
				corev1.ResourceMemory: resource.MustParse("10Mi"),
			}},
		}
		for _, z := range []string{"test-zone-1", "test-zone-2"} {
			it.Offerings = append(it.Offerings, catalog.Offering{Zone: z, CapacityType: nsv1.CapacityTypeSpot, Price: price, Available: true})
		}
		for _, z := range []string{"test-zone-1", "test-zone-2", "test-zone-3"} {
			it.Offerings = append(it.Offerings, catalog.Offering{Zone: z, CapacityType: nsv1.CapacityTypeOnDemand, Price: price, Available: true})
		}
		out = append(out, it)
	}
	return out
}

func pod(name string, cpu, mem string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(name), Labels: map[string]string{}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse(cpu),
			corev1.ResourceMemory: resource.MustParse(mem),
		}}}}},
	}
}

var (
	benchCPUs = []string{"100m", "250m", "500m", "1000m", "1500m"}
	benchMems = []string{"100Mi", "256Mi", "512Mi", "1024Mi", "2048Mi", "4096Mi"}
)

// mixedPods builds the earlier, self-selecting benchmark workload: five
// equal groups — plain, zone spread, hostname spread, zone self-affinity
// and hostname anti-affinity — each selecting only its own pods, with
// requests drawn from a fixed seed.
func mixedPods(n int, seed int64) []*corev1.Pod {
	r := rand.New(rand.NewSource(seed))
	out := make([]*corev1.Pod, 0, n)
	for i := 0; i < n; i++ {
		p := pod(fmt.Sprintf("pod-%05d", i), benchCPUs[r.Intn(len(benchCPUs))], benchMems[r.Intn(len(benchMems))])
		switch i % 5 {
		case 0:
		case 1:
			p.Labels["app"] = "zonal-spread"
			p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
				MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule,
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "zonal-spread"}},
			}}
		case 2:
			p.Labels["app"] = "host-spread"
			p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
				MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.DoNotSchedule,
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "host-spread"}},
			}}
		case 3:
			p.Labels["app"] = "zone-affinity"
			p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				TopologyKey: corev1.LabelTopologyZone, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "zone-affinity"}},
			}}}}
		case 4:
			p.Labels["app"] = "anti-affinity"
			p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "anti-affinity"}},
			}}}}
		}
		out = append(out, p)
	}
	return out
}

// karpenterPods builds the workload of Karpenter's scheduling benchmark
// (makeDiversePods), draw for draw in its order: five blocks of n/5 pods —
// plain, zone spread, hostname spread, zone self-affinity, hostname
// anti-affinity — and plain pods for the remainder. Plain and spread pods
// carry my-label=<a..g>; a spread pod's selector draws its own
// my-label=<a..g>, independently of the pod's label, so it also counts
// plain pods and the other spread kind. Affinity pods carry only
// my-affininity=<a..g> (Karpenter's spelling) and select it; anti-affinity
// pods carry app=nginx and select it.
func karpenterPods(n int, seed int64) []*corev1.Pod {
	return diversePods(n, seed, false)
}

// crossPods is karpenterPods with my-label=<a..g> on every pod (the
// affinity and anti-affinity pods too), so every spread selector also
// counts pods that are bound to one zone or one per node.
func crossPods(n int, seed int64) []*corev1.Pod {
	return diversePods(n, seed, true)
}

func diversePods(n int, seed int64, labelAll bool) []*corev1.Pod {
	r := rand.New(rand.NewSource(seed))
	value := func() string { return []string{"a", "b", "c", "d", "e", "f", "g"}[r.Intn(7)] }
	out := make([]*corev1.Pod, 0, n)
	add := func(lbls map[string]string, shape func(p *corev1.Pod)) {
		// The draw order is Karpenter's: labels, constraint, cpu, memory.
		var p *corev1.Pod
		hold := &corev1.Pod{}
		shape(hold)
		cpu, mem := benchCPUs[r.Intn(len(benchCPUs))], benchMems[r.Intn(len(benchMems))]
		p = pod(fmt.Sprintf("pod-%05d", len(out)), cpu, mem)
		p.Labels = lbls
		p.Spec.TopologySpreadConstraints = hold.Spec.TopologySpreadConstraints
		p.Spec.Affinity = hold.Spec.Affinity
		if labelAll {
			if _, ok := lbls["my-label"]; !ok {
				p.Labels["my-label"] = value()
			}
		}
		out = append(out, p)
	}
	spread := func(key string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
				MaxSkew: 1, TopologyKey: key, WhenUnsatisfiable: corev1.DoNotSchedule,
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"my-label": value()}},
			}}
		}
	}
	plain := func(*corev1.Pod) {}
	k := n / 5
	for i := 0; i < k; i++ {
		add(map[string]string{"my-label": value()}, plain)
	}
	for i := 0; i < k; i++ {
		add(map[string]string{"my-label": value()}, spread(corev1.LabelTopologyZone))
	}
	for i := 0; i < k; i++ {
		add(map[string]string{"my-label": value()}, spread(corev1.LabelHostname))
	}
	for i := 0; i < k; i++ {
		lbls := map[string]string{"my-affininity": value()}
		add(lbls, func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				TopologyKey: corev1.LabelTopologyZone, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"my-affininity": lbls["my-affininity"]}},
			}}}}
		})
	}
	for i := 0; i < k; i++ {
		add(map[string]string{"app": "nginx"}, func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "nginx"}},
			}}}}
		})
	}
	for len(out) < n {
		add(map[string]string{"my-label": value()}, plain)
	}
	return out
}

func plainPods(n int, seed int64) []*corev1.Pod {
	r := rand.New(rand.NewSource(seed))
	out := make([]*corev1.Pod, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, pod(fmt.Sprintf("pod-%05d", i), benchCPUs[r.Intn(len(benchCPUs))], benchMems[r.Intn(len(benchMems))]))
	}
	return out
}

func defaultPool(types []*catalog.InstanceType) *NodePool {
	return &NodePool{Name: "default", Weight: 1, Requirements: Requirements{}, InstanceTypes: types}
}
