package disruption

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/scheduling"
)

// labSpotPool is the lab's spot pool: examples/spot-fleet.yaml's NodePool
// (six families, spot only, minValues 3 families) with the lab's tuning
// (test/e2e labTuning: consolidateAfter 5s, budget 50 %, memory limit
// 4000Gi).
func labSpotPool(tb testing.TB) *nsv1.NodePool {
	raw, err := os.ReadFile(filepath.Join("..", "..", "examples", "spot-fleet.yaml"))
	if err != nil {
		tb.Fatal(err)
	}
	for _, doc := range bytes.Split(raw, []byte("\n---")) {
		if !bytes.Contains(doc, []byte("\nkind: NodePool")) {
			continue
		}
		np := &nsv1.NodePool{}
		if err := yaml.UnmarshalStrict(doc, np); err != nil {
			tb.Fatalf("reading the example NodePool: %v", err)
		}
		np.UID = types.UID("uid-" + np.Name)
		np.Spec.Disruption.ConsolidateAfter = nsv1.MustParseNillableDuration("5s")
		np.Spec.Disruption.Budgets = []nsv1.Budget{{Nodes: "50%"}}
		np.Spec.Limits[corev1.ResourceMemory] = resource.MustParse("4000Gi")
		return np
	}
	tb.Fatal("examples/spot-fleet.yaml has no NodePool")
	return nil
}

// webPods are the lab's web Deployment's pods: 500m / 128Mi, selecting the
// spot pool's template label.
func webPods(n int) []*corev1.Pod {
	ctrl := true
	var out []*corev1.Pod
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("web-%04d", i)
		out = append(out, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "lab", Name: name, UID: types.UID(name), Labels: map[string]string{"app": "web"},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", Controller: &ctrl}}},
			Spec: corev1.PodSpec{NodeSelector: map[string]string{"fleet": "spot"}, Containers: []corev1.Container{{Name: "pause",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("128Mi")}}}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning},
		})
	}
	return out
}

// labBurst is the lab's fleet after its 1,000-pod burst scaled down to
// keep pods: the solver's plan for the 1,000 web pods on the lab's spot
// pool and the real catalog, launched as planned. survivors picks the
// pods the Deployment keeps from the plan.
func labBurst(tb testing.TB, keep int, survivors func(*scheduling.Plan, int) map[*corev1.Pod]bool) (*world, []*corev1.Pod, *scheduling.NodePool) {
	cat, err := catalog.Load(catalog.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	np := labSpotPool(tb)
	w := newWorld(np)
	w.types[np.Name] = cat.Types()
	sp := scheduling.NodePoolFromAPI(np, cat.Types())
	sp.Labels[nsv1.LabelNodePool] = np.Name
	plan, err := scheduling.Solve(scheduling.Input{Pods: webPods(1000), NodePools: []*scheduling.NodePool{sp}})
	if err != nil || len(plan.Unschedulable) > 0 {
		tb.Fatalf("the burst plan failed: %v %d unplaced", err, len(plan.Unschedulable))
	}
	return w, launchPlan(w, np, plan, survivors(plan, keep)), scheduling.NodePoolFromAPI(np, cat.Types())
}

// randomSurvivors keeps keep pods drawn at random.
func randomSurvivors(seed int64) func(*scheduling.Plan, int) map[*corev1.Pod]bool {
	return func(plan *scheduling.Plan, keep int) map[*corev1.Pod]bool {
		var pods []*corev1.Pod
		for _, cp := range plan.NewClaims {
			pods = append(pods, cp.Pods...)
		}
		r := rand.New(rand.NewSource(seed))
		r.Shuffle(len(pods), func(i, j int) { pods[i], pods[j] = pods[j], pods[i] })
		out := map[*corev1.Pod]bool{}
		for _, p := range pods[:keep] {
			out[p] = true
		}
		return out
	}
}

// replicaSetSurvivors keeps the pods a ReplicaSet scale-down keeps: it
// deletes pods on the nodes that run the most of its pods first (the
// controller ranks pods by how many of their siblings share their node),
// so the survivors are the pods of the least loaded nodes.
func replicaSetSurvivors(plan *scheduling.Plan, keep int) map[*corev1.Pod]bool {
	type ranked struct {
		p    *corev1.Pod
		rank int
	}
	var pods []ranked
	for _, cp := range plan.NewClaims {
		for _, p := range cp.Pods {
			pods = append(pods, ranked{p, len(cp.Pods)})
		}
	}
	sort.SliceStable(pods, func(i, j int) bool { return pods[i].rank < pods[j].rank })
	out := map[*corev1.Pod]bool{}
	for _, r := range pods[:keep] {
		out[r.p] = true
	}
	return out
}

// twoLoadedSettling is a shape the lab measured: the scale-down left 51
// and 49 pods on two of the eight c6g.16xlarge and emptied the rest, and
// the two loaded nodes saw their last pod leave 2 s ago (their 5 s
// consolidateAfter runs past the first plan) while the empty ones have
// been empty for 10 s. Deleting the empty nodes first left two loaded
// nodes and a budget of one, and deletion ended on one c6g.16xlarge.
func twoLoadedSettling(tb testing.TB) (*world, []*corev1.Pod, *scheduling.NodePool) {
	w, pods, sp := labBurst(tb, 100, func(plan *scheduling.Plan, keep int) map[*corev1.Pod]bool {
		out := map[*corev1.Pod]bool{}
		for i, n := range []int{51, 49} {
			for _, p := range plan.NewClaims[i].Pods[:n] {
				out[p] = true
			}
		}
		return out
	})
	for _, c := range w.snap.NodeClaims {
		c.Status.LastPodEventTime = metav1.NewTime(now.Add(-10 * time.Second))
		if len(w.snap.PodsByNode[c.Status.NodeName]) > 0 {
			c.Status.LastPodEventTime = metav1.NewTime(now.Add(-2 * time.Second))
		}
	}
	return w, pods, sp
}

// staggeredSettling is the lab's other measured shape: pods left on most
// of the burst's nodes, whose last pods left over a minute and a half (a
// loaded machine's KWOK deletes 900 pods slowly), so the nodes pass
// consolidateAfter one round apart.
func staggeredSettling(tb testing.TB) (*world, []*corev1.Pod, *scheduling.NodePool) {
	w, pods, sp := labBurst(tb, 100, randomSurvivors(7))
	for i, c := range w.snap.NodeClaims {
		c.Status.LastPodEventTime = metav1.NewTime(now.Add(time.Duration(i%4)*30*time.Second - 10*time.Second))
	}
	return w, pods, sp
}

// oneBigNode is where the lab's fleet settled before: the 100 pods on one
// spot c6g.16xlarge, the only node left.
func oneBigNode(tb testing.TB) (*world, []*corev1.Pod, *scheduling.NodePool) {
	cat, err := catalog.Load(catalog.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	np := labSpotPool(tb)
	w := newWorld(np)
	w.types[np.Name] = cat.Types()
	it, ok := cat.Get("c6g.16xlarge")
	if !ok {
		tb.Fatal("no c6g.16xlarge in the catalog")
	}
	pods := webPods(100)
	claim := &scheduling.ClaimPlan{NodePool: np.Name, Pods: pods}
	for _, o := range it.Offerings {
		if o.CapacityType == nsv1.CapacityTypeSpot && o.Available {
			claim.Options = append(claim.Options, scheduling.LaunchOption{InstanceType: it, Zone: o.Zone, CapacityType: o.CapacityType, Price: o.Price})
		}
	}
	sort.Slice(claim.Options, func(i, j int) bool { return claim.Options[i].Price < claim.Options[j].Price })
	kept := map[*corev1.Pod]bool{}
	for _, p := range pods {
		kept[p] = true
	}
	remaining := launchPlan(w, np, &scheduling.Plan{NewClaims: []*scheduling.ClaimPlan{claim}}, kept)
	return w, remaining, scheduling.NodePoolFromAPI(np, cat.Types())
}

// TestLabScaleTo100Converges is the lab's step 2a in the planner alone:
// the 1,000-pod burst on the lab's spot pool scaled down to 100 pods, the
// planner run round after round (each plan carried out before the next,
// spot-to-spot on as in the lab, budget 50 %) until it proposes nothing.
// The fleet must end within 10 % of the solver's from-scratch plan for the
// 100 pods, without churn (checkNoChurn).
func TestLabScaleTo100Converges(t *testing.T) {
	cases := []struct {
		name  string
		build func(testing.TB) (*world, []*corev1.Pod, *scheduling.NodePool)
	}{
		{"two loaded nodes settling, six empty", twoLoadedSettling},
		{"loaded nodes settling a round apart", staggeredSettling},
		{"replicaset scale-down", func(tb testing.TB) (*world, []*corev1.Pod, *scheduling.NodePool) {
			return labBurst(tb, 100, replicaSetSurvivors)
		}},
	}
	for _, seed := range []int64{1, 2, 3, 42} {
		seed := seed
		cases = append(cases, struct {
			name  string
			build func(testing.TB) (*world, []*corev1.Pod, *scheduling.NodePool)
		}{fmt.Sprintf("random survivors seed %d", seed), func(tb testing.TB) (*world, []*corev1.Pod, *scheduling.NodePool) {
			return labBurst(tb, 100, randomSurvivors(seed))
		}})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w, pods, sp := tc.build(t)
			scratch, err := scheduling.Solve(scheduling.Input{Pods: pods, NodePools: []*scheduling.NodePool{sp}})
			if err != nil || len(scratch.Unschedulable) > 0 {
				t.Fatalf("from-scratch plan: %v, %d unplaced", err, len(scratch.Unschedulable))
			}
			r := converge(t, w, 0, 20, true, func(in *Input) { in.Options.SpotToSpotConsolidation = true })
			over := r.cost/scratch.Cost() - 1
			t.Logf("%d nodes $%.4f/h -> %d nodes %v $%.4f/h in %d rounds, %d actions, %d replacements; from scratch %d nodes $%.4f/h: %+.1f %%",
				r.nodes0, r.start, len(r.w.snap.Nodes), typesOf(r.w), r.cost, r.rounds, r.actions, len(r.launched), len(scratch.NewClaims), scratch.Cost(), 100*over)
			if over > 0.10 {
				t.Errorf("the fleet settled at $%.4f/h, %.1f %% above the from-scratch plan's $%.4f/h (want within 10 %%)", r.cost, 100*over, scratch.Cost())
			}
		})
	}
}

// TestLabLoneNodeStays is where the lab's fleet used to settle: the 100
// pods on one c6g.16xlarge ($0.56/h), nothing else left. The fresh plan
// ($0.46/h) is two nodes, and no action may take the fleet there: the
// 48-vCPU claim needs an r6g.12xlarge among its options for the pool's
// three families (from $0.55/h), so together the two claims may cost more
// than the node they replace, and a repack never launches more nodes than
// it removes. The planner must propose nothing; the repack has to happen
// while the burst's other nodes are still there to pay for it
// (TestLabScaleTo100Converges).
func TestLabLoneNodeStays(t *testing.T) {
	w, _, _ := oneBigNode(t)
	plan, err := Compute(w.input(func(in *Input) { in.Options.SpotToSpotConsolidation = true }))
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Actions) > 0 {
		t.Fatalf("actions %v on a lone node no action can improve", summaries(plan))
	}
	if len(plan.Skipped) != 1 || plan.Skipped[0].Reason != SkipNotCheaper {
		t.Fatalf("skips %+v, want the node skipped as %s", plan.Skipped, SkipNotCheaper)
	}
}

func typesOf(w *world) []string {
	var out []string
	for _, c := range w.snap.NodeClaims {
		out = append(out, c.Status.InstanceType)
	}
	sort.Strings(out)
	return out
}

// waiting reports whether a plan left nodes only for the time being:
// within consolidateAfter, or held for a repack.
func waiting(p *Plan) bool {
	for _, s := range p.Skipped {
		if s.Reason == SkipConsolidateAfter || s.Reason == SkipHeldForRepack {
			return true
		}
	}
	return false
}

// roundCheck is a converge check of one round.
type roundCheck func(round int, before *world, plan *Plan, after *world)

// converged is where converge left a cluster.
type converged struct {
	w               *world
	start, cost     float64
	nodes0          int
	rounds, actions int
	launched        map[string]int // replacement name → round launched
}

// converge runs the planner round after round, each plan carried out
// before the next and a minute after it, until a plan proposes nothing,
// holding every round to the anti-churn rules (checkNoChurn: no node a
// round launched is removed later, whatever its age); it fails the test
// after maxRounds. Each check sees every round: the cluster before it, its
// plan and the cluster after it.
func converge(t *testing.T, w *world, seed int64, maxRounds int, logActions bool, opts func(*Input), checks ...roundCheck) converged {
	t.Helper()
	out := converged{launched: map[string]int{}, nodes0: len(w.snap.Nodes)}
	out.start, _ = clusterCost(newWorking(w.input(opts)), &Plan{})
	out.cost = out.start
	for ; out.rounds < maxRounds; out.rounds++ {
		// A round (validation, launch, drain) takes about a minute.
		at := now.Add(time.Duration(out.rounds) * time.Minute)
		in := w.input(opts, func(in *Input) { in.Now = at })
		plan, ww, err := compute(in)
		if err != nil {
			t.Fatalf("seed %d round %d: %v", seed, out.rounds, err)
		}
		if len(plan.Actions) == 0 && !waiting(plan) {
			out.w = w
			return out
		}
		for _, a := range plan.Actions {
			if logActions {
				t.Logf("round %d: %s: %s", out.rounds, a.Method, a.Message)
			}
		}
		checkNoChurn(t, seed, out.rounds, plan, out.launched, in.Options.withDefaults().MinSavingsShare)
		for _, a := range plan.Actions {
			for _, r := range a.Replacements {
				// The solver names claims afresh each run; a later
				// round's would collide with this one's.
				r.Name = fmt.Sprintf("round%d-%s", out.rounds, r.Name)
				out.launched[r.Name] = out.rounds
			}
		}
		out.actions += len(plan.Actions)
		_, out.cost = clusterCost(newWorking(in), plan)
		next := carryOut(w, ww, plan)
		for _, check := range checks {
			check(out.rounds, w, plan, next)
		}
		w = next
	}
	t.Fatalf("seed %d: still acting after %d rounds", seed, maxRounds)
	return out
}
