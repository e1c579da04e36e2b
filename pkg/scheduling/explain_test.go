package scheduling

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestExplainPod(t *testing.T) {
	types := benchTypes(8) // 1–8 vCPU, spot in zones 1–2, on-demand in 1–3
	tainted := defaultPool(types)
	tainted.Name = "gpu"
	tainted.Weight = 10
	tainted.Taints = []corev1.Taint{{Key: "gpu", Effect: corev1.TaintEffectNoSchedule}}
	limited := defaultPool(types)
	limited.Name = "limited"
	limited.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
	limited.Usage = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
	// Every type of this pool carries a GPU and the pool may have none.
	noGPU := defaultPool(benchTypes(8))
	noGPU.Name = "no-gpu"
	for i, it := range noGPU.InstanceTypes {
		cp := *it
		cp.Capacity = it.Capacity.DeepCopy()
		cp.Capacity["nvidia.com/gpu"] = resource.MustParse("1")
		noGPU.InstanceTypes[i] = &cp
	}
	noGPU.Limits = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("0")}
	full := &ExistingNode{Name: "full", Labels: map[string]string{corev1.LabelTopologyZone: "test-zone-1"},
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("4Gi")},
		Pods:        []*corev1.Pod{pod("running", "900m", "1Gi")}}
	roomy := &ExistingNode{Name: "roomy", Labels: map[string]string{corev1.LabelTopologyZone: "test-zone-2"},
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi")}}

	small, huge := pod("small", "500m", "1Gi"), pod("huge", "64", "1Gi")
	tests := []struct {
		name  string
		in    Input
		pod   *corev1.Pod
		check func(*PodExplanation) string
	}{
		{name: "nominated to the existing node with room", pod: small,
			in: Input{Pods: []*corev1.Pod{small}, Nodes: []*ExistingNode{full, roomy}, NodePools: []*NodePool{defaultPool(types)}},
			check: func(e *PodExplanation) string {
				if e.Node != "roomy" || e.Claim != nil || e.Unschedulable != "" {
					return "want nominated to roomy"
				}
				if e.Nodes[0].Fits || !strings.Contains(e.Nodes[0].Reason, "needs 0.5 cpu but 0.1 cpu is free") || !e.Nodes[1].Fits {
					return "node accounts wrong"
				}
				return ""
			}},
		{name: "a new claim; a tainted pool says its taint, the plain one lists its types", pod: small,
			in: Input{Pods: []*corev1.Pod{small}, NodePools: []*NodePool{defaultPool(types), tainted}},
			check: func(e *PodExplanation) string {
				if e.Claim == nil || e.Claim.NodePool != "default" {
					return "want a claim of pool default"
				}
				gpu, def := e.Pools[0], e.Pools[1]
				if gpu.NodePool != "gpu" || gpu.Fits || gpu.Reason != `pool "gpu": taint gpu:NoSchedule not tolerated` {
					return "gpu pool account wrong"
				}
				if def.NodePool != "default" || !def.Fits || len(def.InstanceTypes) != 8 || def.InstanceTypes[0].Name != "fake-it-0" ||
					def.InstanceTypes[0].Price != 0.3147483648 {
					return "default pool account wrong"
				}
				return ""
			}},
		{name: "too big for any type", pod: huge, in: Input{Pods: []*corev1.Pod{huge}, NodePools: []*NodePool{defaultPool(types)}},
			check: func(e *PodExplanation) string {
				if !strings.Contains(e.Unschedulable, "no NodePool can satisfy it") || e.Pools[0].Fits ||
					!strings.Contains(e.Pools[0].Reason, "needs 64 cpu but the largest allows 7.9 cpu") || len(e.Pools[0].InstanceTypes) != 0 {
					return "want too big"
				}
				return ""
			}},
		{name: "a limit is noted against its pool", pod: small, in: Input{Pods: []*corev1.Pod{small}, NodePools: []*NodePool{limited}},
			check: func(e *PodExplanation) string {
				p := e.Pools[0]
				if e.Unschedulable == "" || !p.Fits || len(p.Blocked) == 0 || !strings.Contains(p.Blocked[0], `pool "limited"`) {
					return "want the limit in Blocked"
				}
				return ""
			}},
		{name: "a limit on a resource the pod does not ask for is quoted", pod: small, in: Input{Pods: []*corev1.Pod{small}, NodePools: []*NodePool{noGPU}},
			check: func(e *PodExplanation) string {
				p := e.Pools[0]
				if e.Claim != nil || e.Unschedulable == "" || len(p.Blocked) == 0 ||
					!strings.Contains(p.Blocked[0], `pool "no-gpu": limit nvidia.com/gpu: 0 would be exceeded (the pool counts 0`) {
					return "want the GPU limit in Blocked"
				}
				return ""
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := ExplainPod(tt.in, tt.pod)
			if err != nil {
				t.Fatal(err)
			}
			if msg := tt.check(e); msg != "" {
				t.Errorf("%s: %+v", msg, e)
			}
		})
	}
	if _, err := ExplainPod(Input{NodePools: []*NodePool{defaultPool(types)}}, small); err == nil {
		t.Error("a pod that is not in the input is explained")
	}
}
