package scheduling

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestPlaceOnExistingByShape: pods go to the existing node whose spare
// room has their cpu:memory shape, then to the tightest of equal shapes;
// registered nodes before in-flight claims; name order only breaks ties.
func TestPlaceOnExistingByShape(t *testing.T) {
	types := benchTypes(8)
	node := func(name, cpu, mem string, inFlight bool) *ExistingNode {
		return &ExistingNode{Name: name, Labels: map[string]string{corev1.LabelTopologyZone: "test-zone-1", corev1.LabelHostname: name},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)},
			InFlight:    inFlight}
	}
	pods := func(prefix string, n int, cpu, mem string) []*corev1.Pod {
		var out []*corev1.Pod
		for i := 0; i < n; i++ {
			out = append(out, pod(fmt.Sprintf("%s-%d", prefix, i), cpu, mem))
		}
		return out
	}
	tests := []struct {
		name  string
		nodes []*ExistingNode
		pods  []*corev1.Pod
		want  map[string]int // pods per node
	}{
		{name: "memory-heavy pods take the memory-shaped room, not the first node's",
			// a-cpu has 8 cpu / 8Gi (first fit would put all four there and
			// strand 7.6 of its cpus); b-mem has 2 cpu / 16Gi.
			nodes: []*ExistingNode{node("a-cpu", "8", "8Gi", false), node("b-mem", "2", "16Gi", false)},
			pods:  pods("mem", 4, "100m", "2Gi"),
			want:  map[string]int{"b-mem": 4}},
		{name: "cpu-heavy pods take the cpu-shaped room",
			nodes: []*ExistingNode{node("a-mem", "2", "16Gi", false), node("b-cpu", "8", "2Gi", false)},
			pods:  pods("cpu", 4, "1", "256Mi"),
			want:  map[string]int{"b-cpu": 4}},
		{name: "equal shapes: the tightest node first, the roomier one for the overflow",
			nodes: []*ExistingNode{node("a-big", "8", "16Gi", false), node("b-small", "2", "4Gi", false)},
			pods:  pods("p", 6, "500m", "1Gi"),
			want:  map[string]int{"b-small": 4, "a-big": 2}},
		{name: "registered nodes before in-flight claims, whatever their shape",
			nodes: []*ExistingNode{node("a-inflight", "2", "16Gi", true), node("b-registered", "8", "8Gi", false)},
			pods:  pods("mem", 4, "100m", "2Gi"),
			want:  map[string]int{"b-registered": 4}},
		{name: "a class that asks for cpu only goes tightest first",
			nodes: []*ExistingNode{node("a-roomy", "8", "8Gi", false), node("b-tight", "1", "8Gi", false)},
			pods: []*corev1.Pod{{ObjectMeta: pod("cpu-only", "500m", "0").ObjectMeta, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}}}}}}},
			want: map[string]int{"b-tight": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan, err := Solve(Input{Pods: tt.pods, Nodes: tt.nodes, NodePools: []*NodePool{defaultPool(types)}})
			if err != nil {
				t.Fatal(err)
			}
			if len(plan.NewClaims) > 0 || len(plan.Unschedulable) > 0 {
				t.Fatalf("want every pod on an existing node, got %d new claims and %d unschedulable", len(plan.NewClaims), len(plan.Unschedulable))
			}
			got := map[string]int{}
			for _, n := range plan.Nominations {
				got[n.Node]++
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("pods per node = %v, want %v", got, tt.want)
			}
		})
	}
}
