package disruption

import (
	"fmt"
	"math/rand"
	"sort"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
	"github.com/nodesmith/nodesmith/pkg/scheduling"
)

var (
	benchCPUs = []string{"100m", "250m", "500m", "1000m", "1500m"}
	benchMems = []string{"100Mi", "256Mi", "512Mi", "1024Mi", "2048Mi", "4096Mi"}
)

func benchPod(i int, r *rand.Rand) *corev1.Pod {
	name := fmt.Sprintf("pod-%05d", i)
	ctrl := true
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(name), Labels: map[string]string{"app": "worker"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "worker", Controller: &ctrl}}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse(benchCPUs[r.Intn(len(benchCPUs))]),
			corev1.ResourceMemory: resource.MustParse(benchMems[r.Intn(len(benchMems))]),
		}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

// scaledDown is the cluster a burst leaves behind: the solver's own plan for
// burst pods (the real catalog, one spot-and-on-demand pool of 16- to
// 32-vCPU types), launched, then all but keep pods gone, chosen at random.
// The seed draws the pods' requests and which of them stay.
func scaledDown(tb testing.TB, burst, keep int, seed int64) (*world, []*corev1.Pod) {
	cat, err := catalog.Load(catalog.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	np := pool("burst", budgets(nsv1.Budget{Nodes: "100%"}))
	np.Spec.Template.Spec.Requirements = []nsv1.NodeSelectorRequirementWithMinValues{
		{Key: awsv1.LabelInstanceCPU, Operator: corev1.NodeSelectorOpGt, Values: []string{"15"}},
		{Key: awsv1.LabelInstanceCPU, Operator: corev1.NodeSelectorOpLt, Values: []string{"33"}},
	}
	w := newWorld(np)
	w.types[np.Name] = cat.Types()
	r := rand.New(rand.NewSource(seed))
	var pods []*corev1.Pod
	for i := 0; i < burst; i++ {
		pods = append(pods, benchPod(i, r))
	}
	sp := scheduling.NodePoolFromAPI(np, cat.Types())
	sp.Labels[nsv1.LabelNodePool] = np.Name
	plan, err := scheduling.Solve(scheduling.Input{Pods: pods, NodePools: []*scheduling.NodePool{sp}})
	if err != nil || len(plan.Unschedulable) > 0 {
		tb.Fatalf("the burst plan failed: %v %d unplaced", err, len(plan.Unschedulable))
	}
	// Keep a random subset of the pods.
	r.Shuffle(len(pods), func(i, j int) { pods[i], pods[j] = pods[j], pods[i] })
	kept := map[*corev1.Pod]bool{}
	for _, p := range pods[:keep] {
		kept[p] = true
	}
	return w, launchPlan(w, np, plan, kept)
}

// launchPlan adds the solver plan's claims to w as registered nodes of
// their cheapest option (initialized an hour ago), named burst-NNNN, and
// binds the kept pods where the plan put them; it returns those pods by
// name.
func launchPlan(w *world, np *nsv1.NodePool, plan *scheduling.Plan, kept map[*corev1.Pod]bool) []*corev1.Pod {
	var remaining []*corev1.Pod
	for i, cp := range plan.NewClaims {
		o := cp.Options[0]
		name := fmt.Sprintf("burst-%04d", i)
		claim := &nsv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(now.Add(-2 * time.Hour)),
			Labels: o.InstanceType.LabelsFor(catalog.Offering{Zone: o.Zone, CapacityType: o.CapacityType}), Annotations: map[string]string{}}}
		for k, v := range np.Spec.Template.ObjectMeta.Labels {
			claim.Labels[k] = v
		}
		claim.Labels[nsv1.LabelNodePool] = np.Name
		claim.Spec.NodeClassRef = np.Spec.Template.Spec.NodeClassRef
		claim.Spec.ExpireAfter = nsv1.MustParseNillableDuration("720h")
		claim.Status = nsv1.NodeClaimStatus{NodeName: name, ProviderID: "aws:///" + o.Zone + "/i-" + name,
			InstanceType: o.InstanceType.Name, Zone: o.Zone, CapacityType: o.CapacityType, Allocatable: o.InstanceType.Allocatable(), Capacity: o.InstanceType.Capacity}
		lifecycle.SetCondition(&claim.Status.Conditions, lifecycle.Condition(nsv1.ConditionInitialized, true, "", ""), 1, metav1.NewTime(now.Add(-time.Hour)))
		labels := map[string]string{corev1.LabelHostname: name}
		for k, v := range claim.Labels {
			labels[k] = v
		}
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{ProviderID: claim.Status.ProviderID},
			Status: corev1.NodeStatus{Allocatable: o.InstanceType.Allocatable(), Capacity: o.InstanceType.Capacity}}
		w.snap.NodeClaims = append(w.snap.NodeClaims, claim)
		w.snap.Nodes = append(w.snap.Nodes, node)
		w.snap.NodeByID[node.Spec.ProviderID] = node
		w.snap.ClaimByNode[name] = claim
		for _, p := range cp.Pods {
			if !kept[p] {
				continue
			}
			p.Spec.NodeName = name
			w.snap.Pods = append(w.snap.Pods, p)
			w.snap.PodsByNode[name] = append(w.snap.PodsByNode[name], p)
			remaining = append(remaining, p)
		}
	}
	sort.Slice(remaining, func(i, j int) bool { return remaining[i].Name < remaining[j].Name })
	return remaining
}

// clusterCost is the cluster's $/h before a plan, and after it (the
// candidates gone, the replacements at their cheapest option, as the
// solver's Plan.Cost counts).
func clusterCost(w *working, plan *Plan) (before, after float64) {
	for _, n := range w.nodes {
		before += n.price
	}
	after = before
	for _, a := range plan.Actions {
		after -= a.Savings
	}
	return before, after
}

// BenchmarkConsolidation1000Nodes plans the consolidation of a burst's
// leftovers — about 1,000 nodes holding 10,000 pods — and reports the time
// per plan, the plan's savings and the share of the from-scratch repack's
// savings it captures (the solver's plan for the same pods on no nodes).
// The pool's budget is 100 %: the figure measures the planner, not the
// budget's pace. Spot-to-spot consolidation is on (the nodes are mostly
// spot; without the gate only deletions are possible).
//
// Each seed is a different burst and a different survivor set; the target
// (>= 95 % capture) holds on each.
func BenchmarkConsolidation1000Nodes(b *testing.B) {
	for _, bc := range []struct {
		seed int64
		gate bool
	}{{42, true}, {42, false}, {7, true}, {99, true}} {
		b.Run(fmt.Sprintf("seed=%d/spotToSpot=%v", bc.seed, bc.gate), func(b *testing.B) {
			gate := bc.gate
			w, pods := scaledDown(b, 41000, 10000, bc.seed)
			np := w.pools["burst"]
			sp := scheduling.NodePoolFromAPI(np, w.types[np.Name])
			scratch, err := scheduling.Solve(scheduling.Input{Pods: pods, NodePools: []*scheduling.NodePool{sp}})
			if err != nil || len(scratch.Unschedulable) > 0 {
				b.Fatalf("from-scratch plan: %v, %d unplaced", err, len(scratch.Unschedulable))
			}
			in := w.input(func(in *Input) { in.Options.SpotToSpotConsolidation = gate })
			var plan *Plan
			var ww *working
			b.ReportAllocs()
			cpu0 := cpuTime()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				plan, ww, err = compute(in)
				if err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			// On a shared machine wall time includes waiting for a core;
			// the process's CPU time per plan is the load-independent
			// figure (GC included).
			b.ReportMetric((cpuTime()-cpu0).Seconds()/float64(b.N), "cpu-s/op")
			before, after := clusterCost(newWorking(in), plan)
			// The next plan, once this one ran (the controller plans again
			// a validation delay later): nodes that took pods may then be
			// replaced too.
			next := carryOut(w, ww, plan)
			nextIn := next.input(func(in *Input) { in.Options.SpotToSpotConsolidation = gate })
			plan2, err := Compute(nextIn)
			if err != nil {
				b.Fatal(err)
			}
			_, after2 := clusterCost(newWorking(nextIn), plan2)
			removed, replaced := 0, 0
			for _, a := range plan.Actions {
				removed += len(a.Candidates)
				replaced += len(a.Replacements)
			}
			b.ReportMetric(float64(len(w.snap.Nodes)), "nodes")
			b.ReportMetric(float64(len(pods)), "pods")
			b.ReportMetric(before, "usd/h-before")
			b.ReportMetric(after, "usd/h-after")
			b.ReportMetric(scratch.Cost(), "usd/h-scratch")
			b.ReportMetric((before-after)/(before-scratch.Cost()), "capture")
			b.ReportMetric((before-after2)/(before-scratch.Cost()), "capture-2-plans")
			b.ReportMetric(float64(removed), "removed")
			b.ReportMetric(float64(replaced), "replacements")
			b.ReportMetric(float64(len(plan.Actions)), "actions")
			b.ReportMetric(float64(plan.Solves), "solves")
		})
	}
}

// carryOut is the cluster after a plan ran as planned: its candidates gone,
// the pods on the nodes the solver placed them on, each replacement a node
// of its cheapest option. Pods are copied, the input is left as it was.
func carryOut(w *world, ww *working, plan *Plan) *world {
	out := newWorld()
	out.types, out.classes, out.pools = w.types, w.classes, w.pools
	out.snap.NodePools, out.snap.DaemonSets = w.snap.NodePools, w.snap.DaemonSets
	bind := func(p *corev1.Pod, node string) {
		cp := p.DeepCopy()
		cp.Spec.NodeName = node
		out.snap.Pods = append(out.snap.Pods, cp)
		out.snap.PodsByNode[node] = append(out.snap.PodsByNode[node], cp)
	}
	for _, n := range w.snap.Nodes {
		en, ok := ww.base[n.Name]
		if !ok {
			continue // removed
		}
		claim := w.snap.ClaimByNode[n.Name]
		out.snap.Nodes = append(out.snap.Nodes, n)
		out.snap.NodeClaims = append(out.snap.NodeClaims, claim)
		out.snap.NodeByID[n.Spec.ProviderID] = n
		out.snap.ClaimByNode[n.Name] = claim
		for _, p := range en.Pods {
			bind(p, n.Name)
		}
	}
	for _, a := range plan.Actions {
		for _, r := range a.Replacements {
			o := r.Options[0]
			name := r.Name
			// Launched when the plan was made, as a disruption's
			// replacement (the controller stamps the command).
			claim := &nsv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(ww.in.Now),
				Labels:      o.InstanceType.LabelsFor(catalog.Offering{Zone: o.Zone, CapacityType: o.CapacityType}),
				Annotations: map[string]string{nsv1.AnnotationReplacementFor: "command-" + name}}}
			for k, v := range r.Labels {
				claim.Labels[k] = v
			}
			claim.Labels[nsv1.LabelNodePool] = r.NodePool
			claim.Status = nsv1.NodeClaimStatus{NodeName: name, ProviderID: "aws:///" + o.Zone + "/i-" + name,
				InstanceType: o.InstanceType.Name, Zone: o.Zone, CapacityType: o.CapacityType, Allocatable: o.InstanceType.Allocatable(), Capacity: o.InstanceType.Capacity}
			lifecycle.SetCondition(&claim.Status.Conditions, lifecycle.Condition(nsv1.ConditionInitialized, true, "", ""), 1, metav1.NewTime(ww.in.Now))
			labels := map[string]string{corev1.LabelHostname: name}
			for k, v := range claim.Labels {
				labels[k] = v
			}
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{ProviderID: claim.Status.ProviderID},
				Status: corev1.NodeStatus{Allocatable: o.InstanceType.Allocatable(), Capacity: o.InstanceType.Capacity}}
			out.snap.NodeClaims = append(out.snap.NodeClaims, claim)
			out.snap.Nodes = append(out.snap.Nodes, node)
			out.snap.NodeByID[node.Spec.ProviderID] = node
			out.snap.ClaimByNode[name] = claim
			for _, p := range r.Pods {
				bind(p, name)
			}
		}
	}
	return out
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// steadyState is the 41,000 → 10,000-pod scale-down after two plans were
// carried out: a cluster the planner has little left to do on.
func steadyState(b *testing.B) (*world, func(*Input)) {
	w, _ := scaledDown(b, 41000, 10000, 42)
	opts := func(in *Input) { in.Options.SpotToSpotConsolidation = true }
	for i := 0; i < 2; i++ {
		plan, ww, err := compute(w.input(opts))
		if err != nil {
			b.Fatal(err)
		}
		w = carryOut(w, ww, plan)
	}
	return w, opts
}

// BenchmarkPlanSteadyState is the cost of the plan the controller makes
// every poll once the cluster is consolidated: the burst's leftovers after
// two plans ran, planned again (little or nothing left to do).
func BenchmarkPlanSteadyState(b *testing.B) {
	w, opts := steadyState(b)
	in := w.input(opts)
	var plan *Plan
	var err error
	b.ReportAllocs()
	cpu0 := cpuTime()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if plan, err = Compute(in); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric((cpuTime()-cpu0).Seconds()/float64(b.N), "cpu-s/op")
	b.ReportMetric(float64(len(w.snap.Nodes)), "nodes")
	b.ReportMetric(float64(len(plan.Actions)), "actions")
	b.ReportMetric(float64(plan.Solves), "solves")
}

// BenchmarkPlanSteadyStateReused is BenchmarkPlanSteadyState polled again
// with nothing changed: the cost of deciding the previous plan still holds
// (begin + fingerprint) instead of planning.
func BenchmarkPlanSteadyStateReused(b *testing.B) {
	w, opts := steadyState(b)
	stampVersions(w)
	prev, err := Compute(w.input(opts))
	if err != nil {
		b.Fatal(err)
	}
	in := w.input(opts, func(in *Input) { in.Now = in.Now.Add(10 * time.Second); in.Previous = prev })
	var plan *Plan
	b.ReportAllocs()
	cpu0 := cpuTime()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if plan, err = Compute(in); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if !plan.Reused {
		b.Fatalf("the plan was not reused (valid until %s, polled at %s)", prev.ValidUntil, in.Now)
	}
	b.ReportMetric((cpuTime()-cpu0).Seconds()/float64(b.N), "cpu-s/op")
	b.ReportMetric(float64(len(w.snap.Nodes)), "nodes")
	b.ReportMetric(float64(len(w.snap.Pods)), "pods")
}
