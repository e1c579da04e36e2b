package disruption

import (
	"fmt"
	"math/rand"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/provisioning"
	"github.com/nodesmith/nodesmith/pkg/scheduling"
)

// shrinkPod is one pod of a mixed fleet: half web pods (small, balanced),
// a quarter memory-heavy, a quarter cpu-heavy, each class its own
// ReplicaSet. With topology, the web pods spread over zones (maxSkew 1)
// and every 60th pod is a "spread" pod that keeps off the others' nodes.
func shrinkPod(i int, r *rand.Rand, topology bool) *corev1.Pod {
	var app, cpu, mem string
	switch k := r.Intn(4); {
	case k < 2:
		app = "web"
		cpu, mem = []string{"250m", "500m", "1"}[r.Intn(3)], []string{"512Mi", "1Gi", "2Gi"}[r.Intn(3)]
	case k == 2:
		app = "cache"
		cpu, mem = []string{"250m", "500m"}[r.Intn(2)], []string{"4Gi", "8Gi"}[r.Intn(2)]
	default:
		app = "batch"
		cpu, mem = []string{"2", "3"}[r.Intn(2)], []string{"1Gi", "2Gi"}[r.Intn(2)]
	}
	if topology && i%60 == 0 {
		app = "spread"
	}
	name := fmt.Sprintf("%s-%04d", app, i)
	ctrl := true
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(name), Labels: map[string]string{"app": app},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: app, Controller: &ctrl}}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem),
		}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	if !topology {
		return p
	}
	switch app {
	case "web":
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone,
			WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	case "spread":
		spreadOut(p)
	}
	return p
}

// shrinkFleet is a mixed fleet after a 1,500-pod burst shrank to 150
// pods: the solver's plan for the burst on a spot-and-on-demand pool of
// 4- to 48-vCPU types whose cpu and memory limits are 10 % above the
// capacity the burst needs (so the fleet it leaves is close to the
// limits), launched, then all but 150 pods,
// drawn at random, gone. The seed draws the pods and the survivors.
func shrinkFleet(tb testing.TB, topology bool, seed int64) (*world, []*corev1.Pod) {
	cat, err := catalog.Load(catalog.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	np := pool("shrink", budgets(nsv1.Budget{Nodes: "20%"}))
	np.Spec.Template.Spec.Requirements = []nsv1.NodeSelectorRequirementWithMinValues{
		{Key: awsv1.LabelInstanceCPU, Operator: corev1.NodeSelectorOpGt, Values: []string{"3"}},
		{Key: awsv1.LabelInstanceCPU, Operator: corev1.NodeSelectorOpLt, Values: []string{"49"}},
	}
	r := rand.New(rand.NewSource(seed))
	var pods []*corev1.Pod
	for i := 0; i < 1500; i++ {
		pods = append(pods, shrinkPod(i, r, topology))
	}
	w := newWorld(np)
	w.types[np.Name] = cat.Types()
	solve := func() *scheduling.Plan {
		sp := scheduling.NodePoolFromAPI(np, cat.Types())
		sp.Labels[nsv1.LabelNodePool] = np.Name
		plan, err := scheduling.Solve(scheduling.Input{Pods: pods, NodePools: []*scheduling.NodePool{sp}})
		if err != nil || len(plan.Unschedulable) > 0 {
			tb.Fatalf("the burst plan failed: %v, %d unplaced", err, len(plan.Unschedulable))
		}
		return plan
	}
	// The burst needs what its unlimited plan's claims are charged (their
	// largest option); the limits are 10 % above that, and the burst is
	// planned again within them.
	var cpu, mem resource.Quantity
	for _, cp := range solve().NewClaims {
		var its []*catalog.InstanceType
		for _, o := range cp.Options {
			its = append(its, o.InstanceType)
		}
		charged := provisioning.LargestCapacity(its)
		cpu.Add(charged[corev1.ResourceCPU])
		mem.Add(charged[corev1.ResourceMemory])
	}
	np.Spec.Limits = nsv1.Limits{
		corev1.ResourceCPU:    *resource.NewMilliQuantity(cpu.MilliValue()*11/10, resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(mem.Value()*11/10, resource.BinarySI),
	}
	plan := solve()
	r.Shuffle(len(pods), func(i, j int) { pods[i], pods[j] = pods[j], pods[i] })
	kept := map[*corev1.Pod]bool{}
	for _, p := range pods[:150] {
		kept[p] = true
	}
	return w, launchPlan(w, np, plan, kept)
}

// poolUsage is what the pool's claims in w count against its limits.
func poolUsage(w *world, pool string) corev1.ResourceList {
	var claims []*nsv1.NodeClaim
	for _, c := range w.snap.NodeClaims {
		if c.Labels[nsv1.LabelNodePool] == pool && c.DeletionTimestamp.IsZero() {
			claims = append(claims, c)
		}
	}
	used, _ := provisioning.Usage(claims, w.types[pool])
	return used
}

// over names the first of cpu and memory in which used is past the
// pool's limit, or "".
func over(np *nsv1.NodePool, used corev1.ResourceList) string {
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		lim, ok := np.Spec.Limits[name]
		if q := used[name]; ok && q.Cmp(lim) > 0 {
			return fmt.Sprintf("%s %s over the limit %s", name, q.String(), lim.String())
		}
	}
	return ""
}

// withinLimits is a converge check: each action of a round, taken in the
// plan's order, leaves its pool within its limits once its own
// candidates are gone, counting every earlier action's replacements
// (charged their largest option) and not their candidates' removal (a
// subset of a plan may be carried out); and the cluster a round leaves is
// within them.
func withinLimits(t *testing.T, label string) roundCheck {
	return func(round int, before *world, plan *Plan, after *world) {
		t.Helper()
		charged := map[string]corev1.ResourceList{}
		for name := range before.pools {
			charged[name] = poolUsage(before, name)
		}
		for _, a := range plan.Actions {
			for _, r := range a.Replacements {
				var its []*catalog.InstanceType
				for _, o := range r.Options {
					its = append(its, o.InstanceType)
				}
				for name, q := range provisioning.LargestCapacity(its) {
					cur := charged[r.NodePool][name]
					cur.Add(q)
					charged[r.NodePool][name] = cur
				}
			}
			byPool := map[string][]*nsv1.NodeClaim{}
			for _, c := range a.Candidates {
				byPool[c.NodePool] = append(byPool[c.NodePool], c.Claim)
			}
			for name, used := range charged {
				if len(a.Replacements) == 0 {
					continue
				}
				net := used.DeepCopy()
				gone, _ := provisioning.Usage(byPool[name], before.types[name])
				for res, q := range gone {
					cur := net[res]
					cur.Sub(q)
					net[res] = cur
				}
				if msg := over(before.pools[name], net); msg != "" {
					t.Errorf("%s round %d: %s leaves pool %s with %s", label, round, summary(a), name, msg)
				}
			}
		}
		for name, np := range after.pools {
			if msg := over(np, poolUsage(after, name)); msg != "" {
				t.Errorf("%s round %d: the cluster it leaves has pool %s %s", label, round, name, msg)
			}
		}
	}
}

// TestConsolidationShrinksUnderLimits is the shrinking fleet: a
// mixed fleet (by shape; by shape with zone spread and anti-affinity)
// planned for 1,500 pods under cpu and memory limits 10 % above their
// requests keeps 150 of them, and the planner, run round after round
// until it proposes nothing, must end within 10 % of a fresh plan for the
// 150 pods, never taking a pool past its limits (withinLimits) and
// without churn (converge's checkNoChurn). Under a binding limit a
// replacement fits only in the room its own candidates leave.
func TestConsolidationShrinksUnderLimits(t *testing.T) {
	for _, mix := range []struct {
		name     string
		topology bool
	}{{"shapes", false}, {"topology", true}} {
		for _, seed := range []int64{1, 2, 3, 7, 42, 99} {
			t.Run(fmt.Sprintf("%s/seed=%d", mix.name, seed), func(t *testing.T) {
				w, pods := shrinkFleet(t, mix.topology, seed)
				np := w.pools["shrink"]
				if msg := over(np, poolUsage(w, np.Name)); msg != "" {
					t.Fatalf("the burst's fleet starts past the limits: %s", msg)
				}
				sp := scheduling.NodePoolFromAPI(np, w.types[np.Name])
				scratch, err := scheduling.Solve(scheduling.Input{Pods: pods, NodePools: []*scheduling.NodePool{sp}})
				if err != nil || len(scratch.Unschedulable) > 0 {
					t.Fatalf("fresh plan: %v, %d unplaced", err, len(scratch.Unschedulable))
				}
				opts := func(in *Input) { in.Options.SpotToSpotConsolidation = true }
				label := fmt.Sprintf("%s seed %d", mix.name, seed)
				r := converge(t, w, seed, 40, testing.Verbose(), opts, withinLimits(t, label))
				gap := r.cost/scratch.Cost() - 1
				t.Logf("%s: %d nodes $%.4f/h -> %d nodes $%.4f/h in %d rounds, %d actions, %d replacements; fresh plan %d nodes $%.4f/h: %+.1f %%",
					label, r.nodes0, r.start, len(r.w.snap.Nodes), r.cost, r.rounds, r.actions, len(r.launched), len(scratch.NewClaims), scratch.Cost(), 100*gap)
				if gap > 0.10 {
					t.Errorf("%s: the fleet ends at $%.4f/h, %.1f %% above the fresh plan's $%.4f/h (want within 10 %%)", label, r.cost, 100*gap, scratch.Cost())
				}
			})
		}
	}
}
