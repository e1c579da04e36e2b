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

// mixedPods builds the "diverse" benchmark workload: five equal groups —
// plain, zone spread, hostname spread, zone self-affinity and hostname
// anti-affinity — with requests drawn from a fixed seed.
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
