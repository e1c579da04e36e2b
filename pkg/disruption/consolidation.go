package disruption

import (
	"fmt"
	"sort"
	"time"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
	"github.com/nodesmith/nodesmith/pkg/scheduling"
)

// consolidation removes underutilized nodes: first as many at a time as fit
// with at most one new node (multi-node), then one at a time (single-node).
//
// Candidates go fewest pods per dollar first. Other orders were measured
// on the 1,000-node benchmark and did worse (price per usable capacity,
// utilization, the pods' ideal cost, steering toward the from-scratch
// plan's type mix: 92.3–94.6 % of the from-scratch savings against
// 94.6 %): what is left at the end is set less by the order than by how
// the moved pods fill the kept nodes. Since the solver places them by the
// shape of each node's spare room, one plan captures 99.9-100 % there
// (docs/benchmarks.md).
func (w *working) consolidation(eligible []*nodeInfo, out *Plan) error {
	var cands []*nodeInfo
	for _, n := range eligible {
		if n.removed || lifecycle.IsEmpty(n.pods) {
			continue // emptiness had its turn, under the Empty budget
		}
		at, ok := lifecycle.EmptySince(n.claim, n.pool)
		switch {
		case !ok:
			w.skip(n, SkipConsolidationDisabled, fmt.Sprintf("nodepool %s's consolidateAfter is Never", n.pool.Name))
			continue
		case n.pool.Spec.Disruption.ConsolidationPolicy == nsv1.ConsolidationPolicyWhenEmpty:
			w.skip(n, SkipPolicyWhenEmpty, fmt.Sprintf("nodepool %s only removes empty nodes (consolidationPolicy WhenEmpty) and node %s runs %d pods",
				n.pool.Name, n.name, len(n.movable)))
			continue
		case w.youngReplacement(n):
			w.skip(n, SkipRecentReplacement, fmt.Sprintf("node %s replaced other nodes at %s; it is not consolidated for %s after its launch (the churn window)",
				n.name, n.claim.CreationTimestamp.UTC().Format(time.RFC3339), replacementSettle))
			continue
		case !w.due(at):
			w.skip(n, SkipConsolidateAfter, fmt.Sprintf("a pod arrived on or left node %s recently; nodepool %s's consolidateAfter lets it be consolidated at %s",
				n.name, n.pool.Name, at.UTC().Format(time.RFC3339)))
			continue
		}
		cands = append(cands, n)
	}
	out.Candidates[nsv1.DisruptionReasonUnderutilized] = len(cands)
	sortByPodsPerDollar(cands)
	if err := w.multiNode(cands, out, false); err != nil {
		return err
	}
	// Then the nodes that took pods, fewest pods per dollar first: they
	// may only be deleted (their pods moving on), not replaced.
	var rest []*nodeInfo
	for _, n := range cands {
		if !n.removed {
			rest = append(rest, n)
		}
	}
	sortByPodsPerDollar(rest)
	if err := w.multiNode(rest, out, true); err != nil {
		return err
	}
	return w.singleNode(rest, out)
}

// multiNode takes batches of candidates in order (within each pool's
// budget) and removes the longest prefix of each that the solver can place
// with at most one cheaper new node; it stops at the first batch where no
// prefix of two or more works. With received, nodes that took pods from
// earlier actions may be in the batches (such actions may only delete).
func (w *working) multiNode(cands []*nodeInfo, out *Plan, received bool) error {
	for w.solves < w.opts.MaxSolves {
		batch := w.batch(cands, received)
		if len(batch) < 2 {
			return nil
		}
		a, plan, err := w.longestPrefix(batch)
		if err != nil {
			return err
		}
		if a == nil {
			return nil
		}
		if len(a.Candidates) == 1 {
			a.Method = MethodSingleNodeConsolidation
		}
		w.commit(a, plan)
		out.Actions = append(out.Actions, a)
	}
	return nil
}

// batch is the next MaxCandidatesPerCommand candidates not yet removed,
// nor holding pods an earlier action moves (the prefix search would keep
// failing on those full nodes), whose pools' budgets allow them.
func (w *working) batch(cands []*nodeInfo, received bool) []*nodeInfo {
	var out []*nodeInfo
	taken := map[string]int{}
	for _, n := range cands {
		if len(out) == w.opts.MaxCandidatesPerCommand {
			break
		}
		pool := n.poolName()
		if n.removed || (n.received && !received) || taken[pool] >= w.budgets.allowed(pool, nsv1.DisruptionReasonUnderutilized) {
			continue
		}
		taken[pool]++
		out = append(out, n)
	}
	return out
}

// longestPrefix tries the whole batch, then searches the longest prefix of
// at least two candidates that consolidates (removability is close to
// monotone in the prefix length: a longer prefix has more pods to place on
// fewer nodes).
func (w *working) longestPrefix(batch []*nodeInfo) (*Action, *scheduling.Plan, error) {
	a, plan, _, _, err := w.consolidate(batch, MethodMultiNodeConsolidation)
	if err != nil || a != nil {
		return a, plan, err
	}
	var best *Action
	var bestPlan *scheduling.Plan
	// Gallop up from two, then bisect: once the spare room is used up the
	// answer is small, and this finds it in a few solves.
	lo, hi := 2, len(batch)-1
	for k := 2; k <= hi && w.solves < w.opts.MaxSolves; k *= 2 {
		a, plan, _, _, err := w.consolidate(batch[:k], MethodMultiNodeConsolidation)
		if err != nil {
			return nil, nil, err
		}
		if a == nil {
			hi = k - 1
			break
		}
		best, bestPlan, lo = a, plan, k+1
	}
	for lo <= hi && w.solves < w.opts.MaxSolves {
		mid := (lo + hi) / 2
		a, plan, _, _, err := w.consolidate(batch[:mid], MethodMultiNodeConsolidation)
		if err != nil {
			return nil, nil, err
		}
		if a != nil {
			best, bestPlan, lo = a, plan, mid+1
		} else {
			hi = mid - 1
		}
	}
	return best, bestPlan, nil
}

// singleNode tries each remaining candidate alone, fewest pods per dollar
// first: delete it if its pods fit elsewhere, or replace it with one
// cheaper node. A candidate whose pods do not fit, first-fit by requests,
// in the other nodes' spare room, and whose leftover no type cheap enough
// to save could hold, is skipped without a solve: after multi-node
// consolidation most nodes are full and this spares hundreds of solves.
func (w *working) singleNode(cands []*nodeInfo, out *Plan) error {
	var rest []*nodeInfo
	for _, n := range cands {
		if !n.removed {
			rest = append(rest, n)
		}
	}
	sortByPodsPerDollar(rest)
	room := w.spareRoom()
	for _, n := range rest {
		if n.removed || !w.budgeted(n, nsv1.DisruptionReasonUnderutilized) {
			continue
		}
		if w.solves >= w.opts.MaxSolves {
			w.skip(n, SkipNotEvaluated, fmt.Sprintf("%s: this plan's solver budget ran out before it", describe(n)))
			continue
		}
		if left := w.firstFitElsewhere(n, room); !left.isZero() {
			maxPrice := n.price * (1 - w.opts.MinSavingsShare)
			if n.received || !w.cheaperTypeHolds(left, maxPrice) {
				w.skip(n, SkipNotCheaper, fmt.Sprintf("%s: its pods do not fit in the other nodes' spare room, and no instance type sold for at most $%.4f/h has room for the rest",
					describe(n), maxPrice))
				continue
			}
		}
		a, plan, reason, msg, err := w.consolidate([]*nodeInfo{n}, MethodSingleNodeConsolidation)
		if err != nil {
			return err
		}
		if a == nil {
			w.skip(n, reason, msg)
			continue
		}
		w.commit(a, plan)
		room = w.spareRoom()
		out.Actions = append(out.Actions, a)
	}
	return nil
}

// sortByPodsPerDollar orders candidates cheapest to empty per dollar
// saved first: few pods on a dear node.
func sortByPodsPerDollar(ns []*nodeInfo) {
	sort.SliceStable(ns, func(i, j int) bool {
		a, b := ns[i], ns[j]
		ra, rb := float64(len(a.movable))/max(a.price, 1e-9), float64(len(b.movable))/max(b.price, 1e-9)
		if ra != rb {
			return ra < rb
		}
		return a.claim.Name < b.claim.Name
	})
}
