package scheduling

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestSolveKarpenterShapedWorkload holds the solver to the bar on
// Karpenter's benchmark workload (and the variant with my-label on every
// pod) at 100 and 1,000 pods: every pod placed, the final state valid for
// any binding order (the independent checker), and at 1,000 pods the cost
// at most 0.8× the $338/h Karpenter's own scheduler buys for it.
func TestSolveKarpenterShapedWorkload(t *testing.T) {
	types := benchTypes(400)
	for _, tc := range []struct {
		name string
		pods []*corev1.Pod
	}{
		{"makeDiversePods 100", karpenterPods(100, 42)},
		{"every pod labelled 100", crossPods(100, 42)},
		{"makeDiversePods 1000", karpenterPods(1000, 42)},
		{"every pod labelled 1000", crossPods(1000, 42)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{Pods: tc.pods, NodePools: []*NodePool{defaultPool(types)}}
			plan, err := Solve(in)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(plan.Unschedulable); n > 0 {
				t.Errorf("%d pods unplaced, first: %s", n, plan.Unschedulable[0].Reason)
			}
			if cost, limit := plan.Cost(), 0.8*338; len(tc.pods) == 1000 && cost > limit {
				t.Errorf("plan costs $%.2f/h, above 0.8× Karpenter's ($%.2f/h)", cost, limit)
			}
			checkPlan(t, in, plan)
			t.Logf("%d claims, $%.2f/h", len(plan.NewClaims), plan.Cost())
		})
	}
}
