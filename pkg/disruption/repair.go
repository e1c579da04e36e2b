package disruption

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
)

// RepairPolicy is one unhealthy state a node may be in: its condition
// Condition has had Status for longer than Toleration, and node repair
// replaces it.
type RepairPolicy struct {
	Condition  corev1.NodeConditionType
	Status     corev1.ConditionStatus
	Toleration time.Duration
}

// String is "Ready=Unknown", the form Events, skips and metrics use.
func (p RepairPolicy) String() string { return string(p.Condition) + "=" + string(p.Status) }

// DefaultRepairPolicies are Karpenter's on AWS: the kubelet's Ready
// condition False or Unknown for 30 minutes, and the conditions the EKS
// node monitoring agent sets False for 10 minutes (accelerated hardware)
// or 30 minutes (storage, networking, kernel, container runtime).
func DefaultRepairPolicies() []RepairPolicy {
	return []RepairPolicy{
		{Condition: corev1.NodeReady, Status: corev1.ConditionFalse, Toleration: 30 * time.Minute},
		{Condition: corev1.NodeReady, Status: corev1.ConditionUnknown, Toleration: 30 * time.Minute},
		{Condition: "AcceleratedHardwareReady", Status: corev1.ConditionFalse, Toleration: 10 * time.Minute},
		{Condition: "StorageReady", Status: corev1.ConditionFalse, Toleration: 30 * time.Minute},
		{Condition: "NetworkingReady", Status: corev1.ConditionFalse, Toleration: 30 * time.Minute},
		{Condition: "KernelReady", Status: corev1.ConditionFalse, Toleration: 30 * time.Minute},
		{Condition: "ContainerRuntimeReady", Status: corev1.ConditionFalse, Toleration: 30 * time.Minute},
	}
}

// MaxUnhealthyPercent: node repair stops for a NodePool while more than
// this share of its nodes are unhealthy (UnhealthyAllowed), as Karpenter's
// does — a fault that hits many nodes at once is more likely the cluster's
// or the zone's than the nodes', and replacing them would not help.
const MaxUnhealthyPercent = 20

// UnhealthyAllowed is how many of a pool's total nodes may be unhealthy
// with repair still going on: 20 % rounded up, as a PodDisruptionBudget
// rounds a percentage (3 nodes → 1, 5 → 1, 6 → 2, 10 → 2, 11 → 3). With
// more unhealthy nodes than that, the pool's repairs wait.
func UnhealthyAllowed(total int) int {
	return (total*MaxUnhealthyPercent + 99) / 100
}

// Health is the unhealthy state of a node that a repair policy names.
type Health struct {
	Policy RepairPolicy
	// Since is when the condition took its status (its lastTransitionTime).
	Since time.Time
	// Due is when repair may replace the node: Since plus the toleration.
	Due time.Time
}

// Unhealthy is the node's state matched by one of policies, if any: of
// several, the one due first (ties: the first policy listed). A condition
// without a lastTransitionTime says nothing about how long it has held and
// is not matched (the kubelet and the node monitoring agent always set it).
func Unhealthy(node *corev1.Node, policies []RepairPolicy) (Health, bool) {
	var best Health
	found := false
	for _, p := range policies {
		c := lifecycle.NodeCondition(node, p.Condition)
		if c == nil || c.Status != p.Status || c.LastTransitionTime.IsZero() {
			continue
		}
		since := c.LastTransitionTime.Time
		h := Health{Policy: p, Since: since, Due: since.Add(p.Toleration)}
		if !found || h.Due.Before(best.Due) {
			best, found = h, true
		}
	}
	return best, found
}

// Describe says what is wrong with the node and for how long, as
// "Ready=Unknown for 31m0s (since 2026-01-01T10:00:00Z; toleration 30m0s)".
func (h Health) Describe(now time.Time) string {
	return fmt.Sprintf("%s for %s (since %s; toleration %s)", h.Policy, now.Sub(h.Since).Truncate(time.Second),
		h.Since.UTC().Format(time.RFC3339), h.Policy.Toleration)
}

// repair replaces nodes whose health a repair policy says is past its
// toleration (the NodeRepair gate), as Karpenter's node auto repair does:
//
//   - It is forced: no budget, PodDisruptionBudget, do-not-disrupt or
//     nomination holds it, and pods that fit nowhere wait Pending. The
//     node's replacements are launched and the node deleted in the same
//     step (as for expiry); the action's Deadline is now, so the executor
//     brings the claim's termination timestamp forward to now and the
//     drain deletes every pod at once rather than waiting on evictions a
//     broken kubelet may never complete. A node the ledger already counts
//     (Ready not True) takes no more budget; others use it up like expiry.
//   - It stops for a pool while more of its nodes are unhealthy (by any
//     policy, due or not) than UnhealthyAllowed lets: each due node is
//     skipped (SkipRepairBlocked) and waits.
//   - Only nodes of NodeClaims are considered (nodes Nodesmith did not
//     launch are not its to replace), and not those already on their way
//     out (live excludes them).
//
// It runs after the interruption step and before expiry: a broken node
// goes first among the nodes that are still there.
func (w *working) repair(live []*nodeInfo, out *Plan) error {
	policies := DefaultRepairPolicies()
	type count struct{ total, unhealthy int }
	pools := map[string]*count{}
	health := map[*nodeInfo]Health{}
	for _, n := range w.nodes {
		c := pools[n.poolName()]
		if c == nil {
			c = &count{}
			pools[n.poolName()] = c
		}
		c.total++
		if h, ok := Unhealthy(n.node, policies); ok {
			c.unhealthy++
			health[n] = h
		}
	}
	for _, n := range live {
		h, ok := health[n]
		if !ok || n.removed {
			continue
		}
		if !w.due(h.Due) {
			continue
		}
		why := "has been " + h.Describe(w.in.Now)
		out.Candidates[nsv1.DisruptionReasonUnhealthy]++
		c := pools[n.poolName()]
		if allowed := UnhealthyAllowed(c.total); c.unhealthy > allowed {
			w.skip(n, SkipRepairBlocked, fmt.Sprintf("node %s %s, but %d of nodepool %s's %d nodes are unhealthy, more than %d%% (%d): repair waits until fewer are",
				n.name, why, c.unhealthy, n.poolName(), c.total, MaxUnhealthyPercent, allowed))
			continue
		}
		a, plan, err := w.forcedReplace(n, MethodRepair, nsv1.DisruptionReasonUnhealthy, why)
		if err != nil {
			return err
		}
		a.Deadline = w.in.Now
		a.Condition = h.Policy.String()
		w.commit(a, plan)
		out.Actions = append(out.Actions, a)
	}
	return nil
}
