package provisioning

import (
	"fmt"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
	"github.com/nodesmith/nodesmith/pkg/scheduling"
)

// Static pools (spec.replicas) keep a fixed number of nodes whatever the
// pods. StaticPlan is the one rule for how many: the static pool
// controller carries it out (and so does the simulator, which runs that
// controller). StaticClaim is the one rule for what a static node is: the
// controller launches it, and the disruption planner launches it as a
// drifted, expired or interrupted static node's replacement.

// StaticInput is what StaticPlan reads: the pool, its NodeClaims (every
// claim labelled with the pool, deleted or not) and the pods on their nodes.
type StaticInput struct {
	Pool   *nsv1.NodePool
	Claims []*nsv1.NodeClaim
	// PodsByNode are the pods bound to each node, for choosing which nodes
	// a scale-down removes; may be nil.
	PodsByNode map[string][]*corev1.Pod
}

// StaticDecision is what a static pool needs now.
type StaticDecision struct {
	// Counted is how many of the pool's nodes count toward replicas: live
	// claims, less those a disruption command is replacing once their
	// replacement exists (the replacement counts instead).
	Counted int
	// Live is every claim of the pool not being deleted (what limits.nodes
	// counts).
	Live int
	// Launch is how many new claims to create.
	Launch int
	// Delete are the claims to delete, least disruptive first.
	Delete []*nsv1.NodeClaim
	// Condition is the pool's ReplicasSatisfied condition.
	Condition metav1.Condition
	// NodeLimit, when not empty, says limits.nodes holds the pool below
	// replicas (for an Event).
	NodeLimit string
}

// StaticPlan compares a static pool's replicas with its nodes. A claim a
// disruption command is replacing (drift, expiry, interruption) stops
// counting only once a replacement of the same pool exists, so neither the
// moment between the command's mark and its replacement's creation nor the
// replacement's boot looks like a missing or extra node. Scale-down never
// takes a claim in a command (the executor owns it). Launches stop at
// limits.nodes, counted over every live claim of the pool.
func StaticPlan(in StaticInput) StaticDecision {
	pool := in.Pool
	var d StaticDecision
	if pool == nil || pool.Spec.Replicas == nil {
		return d
	}
	want := int(*pool.Spec.Replicas)
	live := map[string]*nsv1.NodeClaim{}
	for _, c := range in.Claims {
		if c.DeletionTimestamp.IsZero() && c.Labels[nsv1.LabelNodePool] == pool.Name {
			live[c.Name] = c
		}
	}
	d.Live = len(live)
	var removable []*nsv1.NodeClaim
	for _, c := range live {
		if c.Annotations[nsv1.AnnotationDisruptionCommand] != "" {
			if replacedInPool(c, live) {
				continue
			}
			d.Counted++
			continue
		}
		d.Counted++
		removable = append(removable, c)
	}
	limit, limited := nodeLimit(pool)
	switch {
	case d.Counted < want:
		d.Launch = want - d.Counted
		if limited && d.Live+d.Launch > limit {
			d.Launch = max(0, limit-d.Live)
		}
	case d.Counted > want:
		sortLeastDisruptive(removable, in.PodsByNode)
		d.Delete = removable[:min(len(removable), d.Counted-want)]
	}
	d.Condition = staticCondition(pool, want, d, limit, limited)
	if limited && want > limit {
		d.NodeLimit = d.Condition.Message
	}
	return d
}

func nodeLimit(pool *nsv1.NodePool) (int, bool) {
	q, ok := pool.Spec.Limits[nsv1.ResourceNodes]
	if !ok {
		return 0, false
	}
	return int(q.Value()), true
}

// replacedInPool reports whether a replacement of c's command, in c's
// pool, exists among live.
func replacedInPool(c *nsv1.NodeClaim, live map[string]*nsv1.NodeClaim) bool {
	for _, name := range strings.Split(c.Annotations[nsv1.AnnotationDisruptionReplacements], ",") {
		if r, ok := live[name]; ok && name != "" && r.Labels[nsv1.LabelNodePool] == c.Labels[nsv1.LabelNodePool] {
			return true
		}
	}
	return false
}

func staticCondition(pool *nsv1.NodePool, want int, d StaticDecision, limit int, limited bool) metav1.Condition {
	const t = nsv1.ConditionReplicasSatisfied
	switch {
	case limited && want > limit:
		return lifecycle.Condition(t, false, "NodeLimitExceeded", fmt.Sprintf(
			"spec.replicas is %d but limits.nodes is %d: the pool keeps at most %d nodes; raise limits.nodes or lower replicas", want, limit, limit))
	case d.Counted == want:
		return lifecycle.Condition(t, true, "", "")
	case d.Counted < want && d.Launch == 0:
		return lifecycle.Condition(t, false, "NodeLimitReached", fmt.Sprintf(
			"%d of %d nodes; limits.nodes %d is taken by %d claims (replacements included), so no node can be launched until one goes", d.Counted, want, limit, d.Live))
	case d.Counted < want:
		return lifecycle.Condition(t, false, "ScalingUp", fmt.Sprintf("%d of %d nodes; launching %d", d.Counted, want, d.Launch))
	default:
		return lifecycle.Condition(t, false, "ScalingDown", fmt.Sprintf("%d nodes for %d replicas; removing %d", d.Counted, want, len(d.Delete)))
	}
}

// sortLeastDisruptive orders claims for a scale-down: claims not yet
// initialized first (no pods run there), then nodes with fewer pods that
// must move, then newer claims (older nodes have proven themselves), then
// by name.
func sortLeastDisruptive(claims []*nsv1.NodeClaim, podsByNode map[string][]*corev1.Pod) {
	moving := func(c *nsv1.NodeClaim) int {
		n := 0
		for _, p := range podsByNode[c.Status.NodeName] {
			if !lifecycle.IsTerminal(p) && !lifecycle.IsDaemonSetPod(p) && !lifecycle.IsOwnedByNode(p) {
				n++
			}
		}
		return n
	}
	sort.SliceStable(claims, func(i, j int) bool {
		a, b := claims[i], claims[j]
		ia, ib := lifecycle.IsTrue(a.Status.Conditions, nsv1.ConditionInitialized), lifecycle.IsTrue(b.Status.Conditions, nsv1.ConditionInitialized)
		if ia != ib {
			return !ia
		}
		if ma, mb := moving(a), moving(b); ma != mb {
			return ma < mb
		}
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return b.CreationTimestamp.Before(&a.CreationTimestamp)
		}
		return a.Name < b.Name
	})
}

// StaticClaim plans one node of a static pool: the launch options the
// pool's template allows for a node that only has to hold the pool's
// DaemonSets, cheapest first — the solver's plan for one placeholder pod
// that asks for nothing and tolerates every taint, with the placeholder
// taken out. The pool's limits are not applied here (StaticPlan counts
// limits.nodes; a static pool has no other limit).
func StaticClaim(pool *nsv1.NodePool, types []*catalog.InstanceType, daemonSets []*appsv1.DaemonSet, opts scheduling.Options) (*scheduling.ClaimPlan, error) {
	sp := scheduling.NodePoolFromAPI(pool, types)
	sp.Labels[nsv1.LabelNodePool] = pool.Name
	sp.Limits, sp.Usage = nil, corev1.ResourceList{}
	placeholder := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "static-" + pool.Name, Namespace: "nodesmith-static", UID: "static-" + pool.UID},
		Spec: corev1.PodSpec{
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Containers:  []corev1.Container{{Name: "placeholder"}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
	plan, err := scheduling.Solve(scheduling.Input{Pods: []*corev1.Pod{placeholder}, NodePools: []*scheduling.NodePool{sp}, DaemonSets: daemonSets, Options: opts})
	if err != nil {
		return nil, fmt.Errorf("planning a node of static nodepool %s: %w", pool.Name, err)
	}
	if len(plan.NewClaims) != 1 {
		why := "no instance type fits its requirements"
		if len(plan.Unschedulable) > 0 {
			why = plan.Unschedulable[0].Reason
		}
		return nil, fmt.Errorf("static nodepool %s can launch no node: %s", pool.Name, why)
	}
	cp := *plan.NewClaims[0]
	cp.Pods = nil
	return &cp, nil
}
