package scheduling

import "testing"

func TestSmokeMixed(t *testing.T) {
	types := benchTypes(400)
	for _, n := range []int{100, 1000} {
		for _, mixed := range []bool{false, true} {
			pods := plainPods(n, 42)
			if mixed {
				pods = mixedPods(n, 42)
			}
			plan, err := Solve(Input{Pods: pods, NodePools: []*NodePool{defaultPool(types)}})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("n=%d mixed=%v claims=%d cost=%.2f placed=%d unsched=%d", n, mixed, len(plan.NewClaims), plan.Cost(), plan.PodCount(), len(plan.Unschedulable))
			for i, u := range plan.Unschedulable {
				if i < 3 {
					t.Log(u.Reason)
				}
			}
		}
	}
}
