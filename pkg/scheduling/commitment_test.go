package scheduling

import (
	"fmt"
	"math"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
)

func TestSolveCommitments(t *testing.T) {
	// Each pod fills an m.16x, the largest type, alone: on-demand 0.80/h,
	// spot 0.40/h.
	big := func(n int) []*corev1.Pod { return pods(n, "w", "15", "1Gi") }
	compute := func(h float64) []catalog.Commitment { return []catalog.Commitment{{Name: "sp", Hourly: h}} }
	running := func(n int) []*ExistingNode {
		var out []*ExistingNode
		for i := range n {
			out = append(out, &ExistingNode{Name: fmt.Sprintf("od-%d", i),
				Labels:      map[string]string{corev1.LabelInstanceTypeStable: "m.16x", nsv1.LabelCapacityType: nsv1.CapacityTypeOnDemand, corev1.LabelTopologyZone: "zone-a"},
				Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("100Mi"), corev1.ResourcePods: resource.MustParse("10")}})
		}
		return out
	}
	tests := []struct {
		name        string
		pods        int
		commitments []catalog.Commitment
		nodes       []*ExistingNode
		// want: claims by capacity type, and the dollars covered in all.
		onDemand, spot int
		covered        float64
	}{
		{name: "no commitment: spot, the cheaper", pods: 4, spot: 4},
		{name: "a commitment for two m.16x: two on-demand, then spot", pods: 4, commitments: compute(1.7), onDemand: 2, spot: 2, covered: 1.6},
		{name: "a commitment larger than the need: all on-demand", pods: 3, commitments: compute(20), onDemand: 3, covered: 2.4},
		{name: "running on-demand nodes use the commitment first", pods: 3, commitments: compute(1.7), nodes: running(1), onDemand: 1, spot: 2, covered: 0.8},
		{name: "a commitment used up by running nodes buys spot", pods: 2, commitments: compute(1.6), nodes: running(2), spot: 2},
		{name: "a commitment covering under half an instance leaves spot cheaper", pods: 1, commitments: compute(0.3), spot: 1},
		{name: "one covering over half an instance makes on-demand cheaper", pods: 1, commitments: compute(0.5), onDemand: 1, covered: 0.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan, err := Solve(Input{Pods: big(tt.pods), Nodes: tt.nodes, NodePools: []*NodePool{mkPool("p", 1)}, Commitments: tt.commitments})
			if err != nil {
				t.Fatal(err)
			}
			od, spot, covered := 0, 0, 0.0
			for _, c := range plan.NewClaims {
				switch c.Options[0].CapacityType {
				case nsv1.CapacityTypeOnDemand:
					od++
				case nsv1.CapacityTypeSpot:
					spot++
				}
				covered += c.Committed
			}
			if od != tt.onDemand || spot != tt.spot || math.Abs(covered-tt.covered) > 1e-9 || len(plan.Unschedulable) > 0 {
				t.Errorf("on-demand %d spot %d covered %.2f unschedulable %d, want %d %d %.2f 0", od, spot, covered, len(plan.Unschedulable), tt.onDemand, tt.spot, tt.covered)
			}
		})
	}
}
