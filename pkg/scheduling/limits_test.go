package scheduling

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

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
		// 4 GiB/vCPU family's options and is charged for them.
		{"1,500 + 40 pods, minValues 3", spotFleetPool(types), limitedPods(), 880},
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
