package disruption

import (
	"fmt"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/provisioning"
	"github.com/nodesmith/nodesmith/pkg/scheduling"
)

// Static pools (spec.replicas): consolidation never takes their nodes (the
// pool keeps its count whatever the pods); drift, expiry and interruption
// replace them with a node of the same pool (provisioning.StaticClaim),
// launched before the old node drains, and drift takes one node of a
// static pool at a time.

// SkipStaticNodePool: the node belongs to a static pool, whose nodes
// consolidation never removes.
const SkipStaticNodePool SkipReason = "StaticNodePool"

// SkipStaticReplacementInProgress: another node of the same static pool is
// being replaced; drift replaces a static pool's nodes one at a time.
const SkipStaticReplacementInProgress SkipReason = "StaticReplacementInProgress"

// SkipStaticNodeLimit: the static pool's limits.nodes leaves no room for a
// replacement to launch before the node goes.
const SkipStaticNodeLimit SkipReason = "StaticNodeLimit"

func (n *nodeInfo) static() bool { return n.pool != nil && n.pool.IsStatic() }

// staticBusy reports whether a node of pool is being replaced already: a
// node of it disrupting (in a command, not held) or removed by this plan.
func (w *working) staticBusy(pool string) bool {
	for _, n := range w.nodes {
		if n.poolName() == pool && (n.removed || (n.disrupting && n.claim.Annotations[nsv1.AnnotationDisruptionCommand] != "")) {
			return true
		}
	}
	return false
}

// staticReplacement is the claim that takes a static node's place, or why
// there is none: the pool's instance types are unknown, none fits, or
// limits.nodes has no room for one more claim while the old one drains.
func (w *working) staticReplacement(n *nodeInfo) (*scheduling.ClaimPlan, string) {
	its, ok := w.typesByPool[n.poolName()]
	if !ok {
		return nil, fmt.Sprintf("the instance types of static nodepool %s are unknown", n.poolName())
	}
	if q, limited := n.pool.Spec.Limits[nsv1.ResourceNodes]; limited {
		live := 0
		for _, c := range w.in.Snapshot.NodeClaims {
			if c.DeletionTimestamp.IsZero() && c.Labels[nsv1.LabelNodePool] == n.poolName() {
				live++
			}
		}
		for _, a := range w.added {
			if a.Labels[nsv1.LabelNodePool] == n.poolName() {
				live++
			}
		}
		if int64(live+1) > q.Value() {
			return nil, fmt.Sprintf("static nodepool %s has %d claims and limits.nodes %d: no room for a replacement before the node goes (set limits.nodes above replicas)",
				n.poolName(), live, q.Value())
		}
	}
	cp, err := provisioning.StaticClaim(n.pool, its, w.in.Snapshot.DaemonSets, w.opts.Solve)
	if err != nil {
		return nil, err.Error()
	}
	return w.rename(cp), ""
}
