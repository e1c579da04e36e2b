package e2e

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/scheduling"
)

// scaleTo100Consolidates scales the 1,000-pod burst down to 100 and waits
// until the fleet costs within 10 % of what a fresh plan for the 100 pods
// costs (the lab turns the SpotToSpotConsolidation gate on: its pool is
// spot only), with every pod Running at the end.
func scaleTo100Consolidates(t *testing.T) {
	fresh, freshNodes := freshPlan(t, 100)
	start := time.Now()
	scale(t, "web", 100)
	var fleet float64
	var nodes int
	waitFor(t, 5*time.Minute, "the fleet within 10 % of a fresh plan", func() error {
		claims := claimsOf(t, spotPool)
		fleet, nodes = 0, 0
		for _, c := range claims {
			if !c.DeletionTimestamp.IsZero() {
				continue
			}
			p, err := strconv.ParseFloat(c.Status.Price, 64)
			if err != nil {
				return fmt.Errorf("nodeclaim %s price %q: %v", c.Name, c.Status.Price, err)
			}
			fleet += p
			nodes++
		}
		running, _, _ := podsOf(t, "web")
		if running != 100 || fleet > 1.10*fresh {
			return fmt.Errorf("%d nodeclaims at $%.4f/h (a fresh plan: $%.4f/h), %d pods running", nodes, fleet, fresh, running)
		}
		return nil
	})
	took := time.Since(start)
	t.Logf("1,000 → 100 pods: within 10 %% of a fresh plan %s after the scale-down: %d nodes at $%.4f/h; a fresh plan costs $%.4f/h on %d nodes (%+.1f %%)",
		took.Round(time.Second), nodes, fleet, fresh, freshNodes, 100*(fleet/fresh-1))
	results.set("consolidated", took)
}

// freshPlan is what the solver would launch for n web pods on an empty
// cluster from the lab's spot pool, with the lab's catalog.
func freshPlan(t *testing.T, n int) (float64, int) {
	np := &nsv1.NodePool{}
	if err := kube().Get(ctx(), types.NamespacedName{Name: spotPool}, np); err != nil {
		t.Fatal(err)
	}
	sp := scheduling.NodePoolFromAPI(np, lab.Catalog.Types())
	sp.Labels[nsv1.LabelNodePool] = np.Name
	var pods []*corev1.Pod
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("fresh-%d", i)
		pods = append(pods, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(name), Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{NodeSelector: map[string]string{"fleet": "spot"}, Containers: []corev1.Container{{Name: "pause",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("128Mi")}}}}},
		})
	}
	plan, err := scheduling.Solve(scheduling.Input{Pods: pods, NodePools: []*scheduling.NodePool{sp}})
	if err != nil || len(plan.Unschedulable) > 0 {
		t.Fatalf("fresh plan: %v, %d unplaced", err, len(plan.Unschedulable))
	}
	total := 0.0
	for _, c := range plan.NewClaims {
		total += c.Price()
	}
	return total, len(plan.NewClaims)
}
