package provisioning

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
	"github.com/nodesmith/nodesmith/pkg/scheduling"
)

// NominatedFunc returns the target (node or claim name) a pod was
// nominated to and when that nomination's TTL runs out, if the pod has
// one; PendingPods judges whether it still holds.
type NominatedFunc func(pod types.UID) (target string, expires time.Time, ok bool)

// Pending is the pods one cycle plans and the ones nominations hold back.
type Pending struct {
	// Pods are provisionable and held by no nomination: the solver plans them.
	Pods []*corev1.Pod
	// Held are the nominated pods by target; their room counts as taken.
	Held map[string][]*corev1.Pod
	// Lapsed are pods whose nomination the caller must drop: its target has
	// been ready for NominationGrace and they are still pending, or it is
	// ready and the pods bound to it leave no room for them (kube-scheduler
	// filled it with other pods, as it ignores nominations), so they lost
	// their place and are planned now rather than at expiry; or its
	// target is going away; or its TTL ran out and the target is neither
	// ready nor a launching claim.
	Lapsed []types.UID
	// Blocked are provisionable pods not planned because of their volumes
	// (VolumeRequirements' error: a missing claim, class or volume, an
	// unbound Immediate claim); the caller reports them and plans them
	// once their storage is ready.
	Blocked []Blocked
}

// Blocked is a pod left out of a cycle and why.
type Blocked struct {
	Pod    *corev1.Pod
	Reason string
}

// PendingPods splits the snapshot's provisionable pods into those to plan
// and those a nomination holds back. Pods still running on a disrupted node
// are not among them: the disruption executor launched their replacement
// capacity, and they are Pending again only once the drain evicts them. A
// pod to plan carries
// its volumes' topology in its required node affinity (a copy,
// WithVolumeTopology), or is Blocked when its volumes are not ready.
func PendingPods(snap *Snapshot, nominated NominatedFunc, now time.Time) Pending {
	ready, launching := readySince(snap)
	room := newRoom(snap)
	leaving := goingAway(snap)
	out := Pending{Held: map[string][]*corev1.Pod{}}
	for _, pod := range snap.Pods {
		if !lifecycle.Provisionable(pod, now) {
			continue
		}
		if target, expires, ok := nominated(pod.UID); ok {
			if holds(target, pod, expires, now, ready, launching, leaving, room) {
				out.Held[target] = append(out.Held[target], pod)
				continue
			}
			out.Lapsed = append(out.Lapsed, pod.UID)
		}
		vt, err := VolumeRequirements(snap.Storage, pod)
		if err != nil {
			out.Blocked = append(out.Blocked, Blocked{Pod: pod, Reason: err.Error()})
			continue
		}
		out.Pods = append(out.Pods, WithVolumeTopology(pod, vt))
	}
	return out
}

// holds is the one rule for whether a pod's nomination onto target still
// holds it back from planning:
//   - a target going away (deleted, or marked Disrupting: an interruption
//     or a disruption) will not run the pod: planned again at once;
//   - a ready target gets NominationGrace for kube-scheduler to bind the
//     pod, while its room lasts (room.take);
//   - a launching claim holds its pods until it initializes or is deleted,
//     whatever the TTL: its launch and registration timeouts bound it, and
//     planning its pods again while it boots would launch their capacity
//     twice;
//   - any other target (a claim not in the cache yet, a node that is not
//     ours) holds them until the nomination's TTL runs out.
func holds(target string, pod *corev1.Pod, expires, now time.Time, ready map[string]time.Time, launching, leaving map[string]bool, room *room) bool {
	if leaving[target] {
		return false
	}
	if at, ok := ready[target]; ok {
		return now.Sub(at) < NominationGrace && room.take(target, pod)
	}
	return launching[target] || now.Before(expires)
}

// readySince maps claim and node names to when the claim initialized, and
// names the claims (and their nodes) still launching: not initialized.
func readySince(snap *Snapshot) (map[string]time.Time, map[string]bool) {
	out, launching := map[string]time.Time{}, map[string]bool{}
	for _, c := range snap.NodeClaims {
		cond := meta.FindStatusCondition(c.Status.Conditions, nsv1.ConditionInitialized)
		if cond == nil || cond.Status != metav1.ConditionTrue {
			launching[c.Name] = true
			if c.Status.NodeName != "" {
				launching[c.Status.NodeName] = true
			}
			continue
		}
		out[c.Name] = cond.LastTransitionTime.Time
		if c.Status.NodeName != "" {
			out[c.Status.NodeName] = cond.LastTransitionTime.Time
		}
	}
	return out, launching
}

// UsablePools are the pools a cycle may launch into: not being deleted and
// not reported unready. The caller fetches their instance types.
func UsablePools(snap *Snapshot) []*nsv1.NodePool {
	var out []*nsv1.NodePool
	for _, np := range snap.NodePools {
		if !np.DeletionTimestamp.IsZero() {
			continue
		}
		if c := meta.FindStatusCondition(np.Status.Conditions, nsv1.ConditionReady); c != nil && c.Status == metav1.ConditionFalse {
			continue
		}
		out = append(out, np)
	}
	return out
}

// BuildInput is the solver's input for one cycle: the pending pods, the
// nodes and in-flight claims they may fill (held pods counted on their
// targets), and every usable pool that has instance types in typesByPool
// (a pool whose types could not be fetched is left out; so is a static
// pool, whose nodes no pod launches). It also returns
// the pools by name, for turning planned claims into NodeClaims.
func BuildInput(snap *Snapshot, pending Pending, typesByPool map[string][]*catalog.InstanceType, opts scheduling.Options) (scheduling.Input, map[string]*nsv1.NodePool) {
	pools, byName := poolsOf(snap, typesByPool)
	return scheduling.Input{
		Pods:        pending.Pods,
		Nodes:       ExistingNodes(snap, pending.Held),
		NodePools:   pools,
		DaemonSets:  snap.DaemonSets,
		Commitments: snap.Commitments,
		Options:     opts,
	}, byName
}

// poolsOf builds the solver's view of the pools, with usage computed from
// the claims in the snapshot (pool status lags behind our own launches).
func poolsOf(snap *Snapshot, typesByPool map[string][]*catalog.InstanceType) ([]*scheduling.NodePool, map[string]*nsv1.NodePool) {
	usage := map[string][]*nsv1.NodeClaim{}
	for _, c := range snap.NodeClaims {
		if c.DeletionTimestamp.IsZero() {
			usage[c.Labels[nsv1.LabelNodePool]] = append(usage[c.Labels[nsv1.LabelNodePool]], c)
		}
	}
	var out []*scheduling.NodePool
	byName := map[string]*nsv1.NodePool{}
	for _, np := range UsablePools(snap) {
		if np.IsStatic() {
			continue // its nodes come from StaticPlan, never from pending pods
		}
		its, ok := typesByPool[np.Name]
		if !ok {
			continue
		}
		sp := scheduling.NodePoolFromAPI(np, its)
		sp.Labels[nsv1.LabelNodePool] = np.Name
		used, n := Usage(usage[np.Name], its)
		used[nsv1.ResourceNodes] = *resource.NewQuantity(n, resource.DecimalSI)
		sp.Usage = used
		out = append(out, sp)
		byName[np.Name] = np
	}
	return out, byName
}

// ExistingNodes are the nodes and in-flight claims the solver may fill;
// held pods take room on the node or claim they are nominated to.
// A disrupted node is marked for deletion (it takes no new pods; its own
// still count for topology spread until the drain moves them).
func ExistingNodes(snap *Snapshot, held map[string][]*corev1.Pod) []*scheduling.ExistingNode {
	var out []*scheduling.ExistingNode
	registered := map[string]bool{}
	disrupted := disruptedNodes(snap)
	for _, n := range snap.Nodes {
		claim := snap.ClaimByNode[n.Name]
		pods := snap.PodsByNode[n.Name]
		en := &scheduling.ExistingNode{
			Name: n.Name, Labels: n.Labels, Taints: n.Spec.Taints, Allocatable: n.Status.Allocatable,
			Pods:              append(append([]*corev1.Pod{}, pods...), held[n.Name]...),
			MarkedForDeletion: !n.DeletionTimestamp.IsZero() || hasTaint(n, nsv1.DisruptedTaint) || disrupted[n.Name],
		}
		if claim != nil {
			registered[claim.Name] = true
			en.Pods = append(en.Pods, held[claim.Name]...)
			en.MarkedForDeletion = en.MarkedForDeletion || !claim.DeletionTimestamp.IsZero()
			en.InFlight = !lifecycle.IsTrue(claim.Status.Conditions, nsv1.ConditionInitialized)
		}
		out = append(out, en)
	}
	for _, c := range snap.NodeClaims {
		if registered[c.Name] || !c.DeletionTimestamp.IsZero() {
			continue
		}
		alloc := c.Status.Allocatable
		if len(alloc) == 0 {
			alloc = c.Spec.Resources.Requests
		}
		out = append(out, &scheduling.ExistingNode{
			Name: c.Name, Labels: ClaimLabels(c), Taints: c.Spec.Taints, Allocatable: alloc,
			Pods: held[c.Name], InFlight: true, MarkedForDeletion: Disrupted(c),
		})
	}
	return out
}

// ClaimLabels are the labels the claim's node will carry: its own, plus
// every requirement pinned to a single value.
func ClaimLabels(c *nsv1.NodeClaim) map[string]string {
	out := map[string]string{}
	for _, r := range c.Spec.Requirements {
		if r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 {
			out[r.Key] = r.Values[0]
		}
	}
	for k, v := range c.Labels {
		out[k] = v
	}
	return out
}

// Usage is what a pool's claims count against its limits, and what its
// status reports: each claim's launched capacity, or, before it launches,
// the capacity of its expected launch (claimCharge: its cheapest option,
// as the solver charged it, so a cycle planned while it is in flight
// cannot promise the same room twice; the launch is held to the limit by
// TrimClaim), or, when none of its types is known, its requests. It
// also counts the claims (the "nodes" limit). Every resource a capacity
// lists is summed, extended resources, pods and ephemeral-storage too.
// The provisioner, disruption, explain and plan (through BuildInput) and
// the NodePool status controller all count with it.
func Usage(claims []*nsv1.NodeClaim, types []*catalog.InstanceType) (corev1.ResourceList, int64) {
	total := corev1.ResourceList{}
	for _, c := range claims {
		res := c.Status.Capacity
		if len(res) == 0 {
			res = claimCharge(c, types)
		}
		if len(res) == 0 {
			res = c.Spec.Resources.Requests
		}
		for name, q := range res {
			cur := total[name]
			cur.Add(q)
			total[name] = cur
		}
	}
	return total, int64(len(claims))
}

// NeedsTypes reports whether Usage of these claims depends on the instance
// types: some claim has not reported its capacity yet.
func NeedsTypes(claims []*nsv1.NodeClaim) bool {
	for _, c := range claims {
		if len(c.Status.Capacity) == 0 {
			return true
		}
	}
	return false
}

// largestCapacity is the per-resource maximum capacity of the instance
// types a claim may launch as, nil when none of them is known.
func largestCapacity(c *nsv1.NodeClaim, byName map[string]*catalog.InstanceType) corev1.ResourceList {
	var its []*catalog.InstanceType
	for _, r := range c.Spec.Requirements {
		if r.Key != corev1.LabelInstanceTypeStable || r.Operator != corev1.NodeSelectorOpIn {
			continue
		}
		for _, v := range r.Values {
			if it, ok := byName[v]; ok {
				its = append(its, it)
			}
		}
	}
	return LargestCapacity(its)
}

// LargestCapacity is what a claim that may launch as any of types counts
// against its pool's limits: the per-resource maximum of their capacity
// (whichever launches, the limit holds); nil for no types.
func LargestCapacity(types []*catalog.InstanceType) corev1.ResourceList {
	var out corev1.ResourceList
	for _, it := range types {
		if out == nil {
			out = corev1.ResourceList{}
		}
		for name, q := range it.Capacity {
			if cur, ok := out[name]; !ok || q.Cmp(cur) > 0 {
				out[name] = q.DeepCopy()
			}
		}
	}
	return out
}

func hasTaint(n *corev1.Node, t corev1.Taint) bool {
	for i := range n.Spec.Taints {
		if n.Spec.Taints[i].MatchTaint(&t) {
			return true
		}
	}
	return false
}

// room is what registered nodes have left: allocatable minus the requests
// of the pods bound to them and of the nominated pods held on them.
type room struct {
	snap  *Snapshot
	nodes map[string]*corev1.Node // by node and by claim name
	free  map[string]corev1.ResourceList
}

func newRoom(snap *Snapshot) *room {
	r := &room{snap: snap, nodes: map[string]*corev1.Node{}, free: map[string]corev1.ResourceList{}}
	for _, n := range snap.Nodes {
		r.nodes[n.Name] = n
	}
	for _, c := range snap.NodeClaims {
		if n := r.nodes[c.Status.NodeName]; n != nil {
			r.nodes[c.Name] = n
		}
	}
	return r
}

// take reports whether pod still fits on target's node and, if it does,
// reserves its room there, so two pods nominated to the node's last free
// slot are not both held: kube-scheduler put other pods in the rest, and
// the solver, which counts held pods on their target, would see the node
// over-full and miss the free slot the second pod will really take. A
// target with no registered node (a launching claim) has room by
// definition.
func (r *room) take(target string, pod *corev1.Pod) bool {
	n := r.nodes[target]
	if n == nil {
		return true
	}
	free, ok := r.free[n.Name]
	if !ok {
		free = n.Status.Allocatable.DeepCopy()
		pods := int64(0)
		for _, p := range r.snap.PodsByNode[n.Name] {
			if lifecycle.IsTerminal(p) {
				continue
			}
			pods++
			for name, q := range resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}) {
				if have, ok := free[name]; ok {
					have.Sub(q)
					free[name] = have
				}
			}
		}
		if have, ok := free[corev1.ResourcePods]; ok {
			have.Sub(*resource.NewQuantity(pods, resource.DecimalSI))
			free[corev1.ResourcePods] = have
		}
		r.free[n.Name] = free
	}
	need := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	need[corev1.ResourcePods] = *resource.NewQuantity(1, resource.DecimalSI)
	for name, q := range need {
		if have, ok := free[name]; ok && have.Cmp(q) < 0 {
			return false
		}
	}
	for name, q := range need {
		if have, ok := free[name]; ok {
			have.Sub(q)
			free[name] = have
		}
	}
	return true
}
